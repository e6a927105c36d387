// oob drtcp handshake: both ends prove the job's key before anything else;
// a stranger, a wrong key, a replayed HELLO or a frame out of turn is
// refused with nothing sent back.
#include <gtest/gtest.h>

#include <array>

#include "handshake.hpp"

namespace {

using namespace oob::drtcp::core;
namespace auth = plugin::common::auth;
using plugin::common::NullLogSink;

constexpr std::uint32_t kJob = 0x46CE0000u;
const ProcName kHnp{kJob, 0};
const ProcName kD1{kJob, 1};

auth::Key key(std::uint8_t seed) {
    auth::Key k{};
    for (std::size_t i = 0; i < k.size(); ++i)
        k[i] = static_cast<std::uint8_t>(seed + i);
    return k;
}

// mpirun's view: daemons 0..n-1 of kJob.
struct Job final : Admitter {
    std::uint32_t daemons = 2;
    bool connected = false;
    int asked = 0;
    Admission admit(const ProcName& from, const ProcName& to, bool reconnect) override {
        ++asked;
        AdmissionFacts f;
        f.me = kHnp;
        f.num_daemons = daemons;
        f.connected = connected;
        return oob::drtcp::core::admit(f, from, to, reconnect);
    }
};

using Frame = std::array<std::uint8_t, kHandshakeSize>;

HandshakeFrame decode(const Frame& b) {
    auto f = decode_handshake(b);
    EXPECT_TRUE(f.has_value());
    return f.value_or(HandshakeFrame{});
}

struct Pair {
    auth::Key ki, ka;
    bool auth = true;
    LinkHandshake init;
    LinkHandshake acc;
    Pair(auth::Key i, auth::Key a, bool on = true, bool reconnect = false)
        : ki(i),
          ka(a),
          auth(on),
          init({LinkRole::Initiator, kD1, kHnp, &ki, on, reconnect}, NullLogSink::instance()),
          acc({LinkRole::Acceptor, kHnp, {}, &ka, on, false}, NullLogSink::instance()) {}
};

TEST(OobHandshake, BothEndsOpenWithTheSameKey) {
    Pair p(key(1), key(1));
    Job job;
    Frame hello{}, reply{}, confirm{};
    ASSERT_TRUE(p.init.hello(hello));
    EXPECT_EQ(p.init.state(), LinkState::HelloSent);
    auto s1 = p.acc.on_frame(decode(hello), job, reply);
    ASSERT_TRUE(s1.has_value());
    EXPECT_TRUE(s1->send && !s1->open);
    EXPECT_EQ(p.acc.peer(), kD1);
    auto s2 = p.init.on_frame(decode(reply), job, confirm);
    ASSERT_TRUE(s2.has_value());
    EXPECT_TRUE(s2->send && s2->open);
    Frame none{};
    auto s3 = p.acc.on_frame(decode(confirm), job, none);
    ASSERT_TRUE(s3.has_value());
    EXPECT_TRUE(!s3->send && s3->open);
    EXPECT_TRUE(p.init.open() && p.acc.open());
    EXPECT_EQ(none, Frame{});
}

TEST(OobHandshake, WrongKeyGetsNoReply) {
    Pair p(key(1), key(2));
    Job job;
    Frame hello{}, reply{};
    ASSERT_TRUE(p.init.hello(hello));
    auto s = p.acc.on_frame(decode(hello), job, reply);
    ASSERT_FALSE(s.has_value());
    EXPECT_EQ(p.acc.refusal(), Refusal::Key);
    EXPECT_EQ(p.acc.state(), LinkState::Refused);
    EXPECT_EQ(reply, Frame{});  // nothing to send
}

TEST(OobHandshake, AReplyWithoutTheKeyIsNotConfirmed) {
    // A listener that pretends to be mpirun, without the key: the daemon
    // refuses its REPLY and sends no CONFIRM.
    Pair p(key(1), key(1));
    Job job;
    Frame hello{}, confirm{};
    ASSERT_TRUE(p.init.hello(hello));
    HandshakeFrame forged;
    forged.type = HsType::Reply;
    forged.sender = kHnp;
    forged.receiver = kD1;
    forged.nonce.fill(7);
    EXPECT_FALSE(p.init.on_frame(forged, job, confirm).has_value());
    EXPECT_EQ(p.init.refusal(), Refusal::Key);
    EXPECT_EQ(confirm, Frame{});
}

TEST(OobHandshake, AReplayedHelloGoesNoFurther) {
    Pair first(key(1), key(1));
    Job job;
    Frame hello{}, reply{}, confirm{};
    ASSERT_TRUE(first.init.hello(hello));
    ASSERT_TRUE(first.acc.on_frame(decode(hello), job, reply).has_value());
    ASSERT_TRUE(first.init.on_frame(decode(reply), job, confirm).has_value());
    ASSERT_TRUE(first.acc.on_frame(decode(confirm), job, reply).has_value());
    // An eavesdropper replays HELLO and CONFIRM on a new connection: the
    // acceptor's fresh nonce makes the old CONFIRM worthless.
    LinkHandshake again({LinkRole::Acceptor, kHnp, {}, &first.ka, true, false},
                        NullLogSink::instance());
    Frame reply2{};
    ASSERT_TRUE(again.on_frame(decode(hello), job, reply2).has_value());
    EXPECT_NE(decode(reply2).nonce, decode(reply).nonce);
    Frame none{};
    EXPECT_FALSE(again.on_frame(decode(confirm), job, none).has_value());
    EXPECT_EQ(again.refusal(), Refusal::Key);
    EXPECT_FALSE(again.open());
}

TEST(OobHandshake, UnknownIdentityIsRefusedBeforeTheKeyIsLookedAt) {
    // Issue 24: daemon 1 of a one-host job does not exist. With the right
    // key even, no reply.
    Pair p(key(1), key(1));
    Job job;
    job.daemons = 1;
    Frame hello{}, reply{};
    ASSERT_TRUE(p.init.hello(hello));
    EXPECT_FALSE(p.acc.on_frame(decode(hello), job, reply).has_value());
    EXPECT_EQ(p.acc.refusal(), Refusal::Identity);
    EXPECT_EQ(p.acc.admission(), Admission::UnknownDaemon);
    EXPECT_EQ(reply, Frame{});
}

TEST(OobHandshake, AConnectedPeerNeedsAReconnectClaimBoundByTheMac) {
    Job job;
    job.connected = true;
    Pair plain(key(1), key(1));
    Frame hello{}, reply{};
    ASSERT_TRUE(plain.init.hello(hello));
    EXPECT_FALSE(plain.acc.on_frame(decode(hello), job, reply).has_value());
    EXPECT_EQ(plain.acc.admission(), Admission::AlreadyConnected);

    Pair again(key(1), key(1), true, true);
    ASSERT_TRUE(again.init.hello(hello));
    ASSERT_TRUE(again.acc.on_frame(decode(hello), job, reply).has_value());

    // Setting the flag on someone else's HELLO breaks its MAC.
    Pair forged(key(1), key(1));
    ASSERT_TRUE(forged.init.hello(hello));
    HandshakeFrame f = decode(hello);
    f.flags = kFlagReconnect;
    EXPECT_FALSE(forged.acc.on_frame(f, job, reply).has_value());
    EXPECT_EQ(forged.acc.refusal(), Refusal::Key);
}

TEST(OobHandshake, FramesOutOfTurnAreRefused) {
    Job job;
    Frame out{};
    HandshakeFrame f;
    f.sender = kD1;
    f.receiver = kHnp;
    for (const HsType t : {HsType::Reply, HsType::Confirm}) {
        LinkHandshake acc({LinkRole::Acceptor, kHnp, {}, nullptr, false, false},
                          NullLogSink::instance());
        f.type = t;
        EXPECT_FALSE(acc.on_frame(f, job, out).has_value());
        EXPECT_EQ(acc.refusal(), Refusal::Protocol);
        EXPECT_EQ(job.asked, 0);  // nothing looked up for a frame out of turn
    }
    LinkHandshake init({LinkRole::Initiator, kD1, kHnp, nullptr, false, false},
                       NullLogSink::instance());
    f.type = HsType::Hello;
    EXPECT_FALSE(init.on_frame(f, job, out).has_value());  // a HELLO before ours
    EXPECT_EQ(out, Frame{});
}

TEST(OobHandshake, AReplyFromAnotherProcessIsRefused) {
    Pair p(key(1), key(1), false);
    Job job;
    Frame hello{}, confirm{};
    ASSERT_TRUE(p.init.hello(hello));
    HandshakeFrame r;
    r.type = HsType::Reply;
    r.sender = {kJob, 5};
    r.receiver = kD1;
    EXPECT_FALSE(p.init.on_frame(r, job, confirm).has_value());
    EXPECT_EQ(p.init.refusal(), Refusal::Identity);
}

TEST(OobHandshake, AuthOffSkipsMacsButNotIdentity) {
    Pair p(key(1), key(2), false);
    Job job;
    Frame hello{}, reply{}, confirm{};
    ASSERT_TRUE(p.init.hello(hello));
    EXPECT_EQ(decode(hello).mac, plugin::common::auth::Mac{});
    ASSERT_TRUE(p.acc.on_frame(decode(hello), job, reply).has_value());
    ASSERT_TRUE(p.init.on_frame(decode(reply), job, confirm).has_value());
    ASSERT_TRUE(p.acc.on_frame(decode(confirm), job, reply).has_value());
    EXPECT_TRUE(p.acc.open());

    job.daemons = 1;
    Pair q(key(1), key(2), false);
    ASSERT_TRUE(q.init.hello(hello));
    EXPECT_FALSE(q.acc.on_frame(decode(hello), job, reply).has_value());
    EXPECT_EQ(q.acc.refusal(), Refusal::Identity);
}

TEST(OobHandshake, StateTable) {
    EXPECT_TRUE(transition_allowed(LinkState::Start, LinkState::HelloSent));
    EXPECT_TRUE(transition_allowed(LinkState::ReplySent, LinkState::Open));
    EXPECT_FALSE(transition_allowed(LinkState::Open, LinkState::Refused));
    EXPECT_FALSE(transition_allowed(LinkState::Refused, LinkState::Open));
    EXPECT_FALSE(transition_allowed(LinkState::Start, LinkState::Open));
    EXPECT_EQ(to_string(LinkState::ReplySent), "reply-sent");
}

}  // namespace
