// pmix dr peer policy: who may talk on the socket (SO_PEERCRED values in,
// a verdict out), and the bounds on a connection that has not said Hello.
#include <gtest/gtest.h>

#include <optional>

#include "peer.hpp"
#include "wire.hpp"

namespace {

using namespace plugin::pmix::core;

constexpr std::uint32_t kUser = 1000;

PeerCred cred(std::uint32_t uid, std::uint32_t gid = 100, std::int32_t pid = 4242) {
    return {uid, gid, pid};
}

TEST(PmixPeerPolicy, SameUidIsAccepted) {
    EXPECT_EQ(check_peer(cred(kUser), kUser, true), PeerVerdict::Accepted);
    // The gid and pid do not matter: another group, a pid we cannot see.
    EXPECT_EQ(check_peer(cred(kUser, 0, 0), kUser, true), PeerVerdict::Accepted);
    EXPECT_TRUE(accepted(check_peer(cred(kUser), kUser, true)));
}

TEST(PmixPeerPolicy, AnotherUidIsRefused) {
    for (std::uint32_t uid : {kUser + 1, kUser - 1, 65534u, 0xFFFFFFFFu}) {
        EXPECT_EQ(check_peer(cred(uid, 100), kUser, true), PeerVerdict::OtherUser) << uid;
        EXPECT_FALSE(accepted(check_peer(cred(uid, 100), kUser, true))) << uid;
    }
    // Same group, other user: still refused.
    EXPECT_EQ(check_peer(cred(kUser + 1, 100), kUser, true), PeerVerdict::OtherUser);
}

TEST(PmixPeerPolicy, RootOnlyWhenWeAreRoot) {
    EXPECT_EQ(check_peer(cred(0, 0), kUser, true), PeerVerdict::OtherUser);
    EXPECT_EQ(check_peer(cred(0, 0), 0, true), PeerVerdict::Accepted);
    // A root server hears no one else either.
    EXPECT_EQ(check_peer(cred(kUser), 0, true), PeerVerdict::OtherUser);
}

TEST(PmixPeerPolicy, MissingCredentialsAreRefused) {
    EXPECT_EQ(check_peer(std::nullopt, kUser, true), PeerVerdict::NoCredentials);
    EXPECT_FALSE(accepted(PeerVerdict::NoCredentials));
}

TEST(PmixPeerPolicy, DisabledCheckAcceptsEveryone) {
    EXPECT_EQ(check_peer(cred(kUser + 1), kUser, false), PeerVerdict::Unchecked);
    EXPECT_EQ(check_peer(std::nullopt, kUser, false), PeerVerdict::Unchecked);
    EXPECT_TRUE(accepted(PeerVerdict::Unchecked));
}

TEST(PmixPeerPolicy, EveryVerdictHasAName) {
    for (PeerVerdict v : {PeerVerdict::Accepted, PeerVerdict::Unchecked, PeerVerdict::NoCredentials,
                          PeerVerdict::OtherUser})
        EXPECT_STRNE(verdict_name(v), "?");
}

TEST(PmixHelloBound, AHelloFitsAndALongerFirstMessageIsRefused) {
    HelloBody hello{{5, 1}, 42};
    const auto msg = encode_message(MsgType::Hello, 1, encode(hello));
    ASSERT_LE(msg.size() - kHeaderSize, kMaxHelloPayload);

    FrameReader r(kMaxHelloPayload);
    r.feed(msg);
    auto m = r.next();
    ASSERT_TRUE(m && m->has_value());
    EXPECT_EQ(decode_hello((*m)->payload).value(), hello);

    // A header announcing more than the bound fails at once, before its
    // payload arrives.
    FrameReader big(kMaxHelloPayload);
    const std::vector<std::uint8_t> payload(kMaxHelloPayload + 1);
    auto huge = encode_message(MsgType::Hello, 1, payload);
    huge.resize(kHeaderSize);
    big.feed(huge);
    auto e = big.next();
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code, plugin::common::ErrorCode::BadLength);

    // Raised once the connection is identified: the same header now waits.
    FrameReader raised(kMaxHelloPayload);
    raised.set_max_length(1 << 20);
    raised.feed(huge);
    auto w = raised.next();
    ASSERT_TRUE(w);
    EXPECT_FALSE(w->has_value());
}

}  // namespace
