#include "auth.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace plugin::common::auth;
using plugin::common::ProcName;

constexpr ProcName kA{7, 0};
constexpr ProcName kB{7, 3};

Key key_of(std::uint8_t fill) {
    Key k{};
    k.fill(fill);
    return k;
}

Binding binding(std::uint32_t context = 1) {
    return Binding{"test-v1", kA, kB, context};
}

TEST(Auth, HmacMatchesRfc4231TestCase2) {
    // RFC 4231 test case 2 uses a 4-byte key; HMAC pads a short key with
    // zeros, so the same key zero-padded to 32 bytes gives the same MAC.
    Key k{};
    std::memcpy(k.data(), "Jefe", 4);
    const std::string msg = "what do ya want for nothing?";
    const Mac m = hmac(k, {reinterpret_cast<const std::uint8_t*>(msg.data()), msg.size()});
    const Mac want = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
                      0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
                      0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
    EXPECT_TRUE(equal(m, want));
}

TEST(Auth, HexRoundTripAndHostileInput) {
    auto k = random_key();
    ASSERT_TRUE(k);
    const std::string hex = to_hex(*k);
    ASSERT_EQ(hex.size(), 64u);
    auto back = parse_hex_key(hex);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, *k);
    EXPECT_FALSE(parse_hex_key(""));
    EXPECT_FALSE(parse_hex_key(hex.substr(1)));
    EXPECT_FALSE(parse_hex_key(hex + "0"));
    std::string bad = hex;
    bad[10] = 'g';
    EXPECT_FALSE(parse_hex_key(bad));
    std::string upper = hex;
    for (char& c : upper)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ASSERT_TRUE(parse_hex_key(upper));
    EXPECT_EQ(*parse_hex_key(upper), *k);
}

TEST(Auth, RandomKeysDiffer) {
    auto a = random_key();
    auto b = random_key();
    ASSERT_TRUE(a && b);
    EXPECT_NE(*a, *b);
}

// Runs a full handshake between two sides; returns whether both ended authenticated.
bool run(Handshake& ini, Handshake& acc, const Binding& bi, const Binding& ba) {
    auto hello = ini.hello(bi);
    if (!hello)
        return false;
    auto reply = acc.on_hello(ba, hello->nonce, hello->mac);
    if (!reply)
        return false;
    auto confirm = ini.on_reply(reply->nonce, reply->mac);
    if (!confirm)
        return false;
    return static_cast<bool>(acc.on_confirm(*confirm)) && ini.authenticated() &&
           acc.authenticated();
}

TEST(Auth, SameKeyAuthenticatesBothEnds) {
    Handshake ini(key_of(1), true), acc(key_of(1), true);
    EXPECT_TRUE(run(ini, acc, binding(), binding()));
}

TEST(Auth, WrongKeyGetsNoReply) {
    Handshake ini(key_of(1), true), acc(key_of(2), true);
    auto hello = ini.hello(binding());
    ASSERT_TRUE(hello);
    auto reply = acc.on_hello(binding(), hello->nonce, hello->mac);
    EXPECT_FALSE(reply);
    EXPECT_EQ(acc.state(), HsState::Refused);
    // Nothing more is accepted once refused.
    EXPECT_FALSE(acc.on_confirm(Mac{}));
}

TEST(Auth, AMacIsBoundToNamesContextAndProtocol) {
    for (const Binding& other : {Binding{"test-v1", kB, kA, 1}, Binding{"test-v1", kA, {7, 4}, 1},
                                 Binding{"test-v1", kA, kB, 2}, Binding{"test-v2", kA, kB, 1}}) {
        Handshake ini(key_of(1), true), acc(key_of(1), true);
        EXPECT_FALSE(run(ini, acc, binding(), other));
        EXPECT_EQ(acc.state(), HsState::Refused);
    }
}

TEST(Auth, ReplayedHelloCannotConfirm) {
    // A genuine handshake is recorded; an attacker replays its HELLO and its
    // CONFIRM to a fresh acceptor: the acceptor's new nonce makes the old
    // CONFIRM worthless.
    Handshake ini(key_of(1), true), acc(key_of(1), true);
    auto hello = ini.hello(binding());
    ASSERT_TRUE(hello);
    auto reply = acc.on_hello(binding(), hello->nonce, hello->mac);
    ASSERT_TRUE(reply);
    auto confirm = ini.on_reply(reply->nonce, reply->mac);
    ASSERT_TRUE(confirm);
    ASSERT_TRUE(acc.on_confirm(*confirm));

    Handshake victim(key_of(1), true);
    ASSERT_TRUE(victim.on_hello(binding(), hello->nonce, hello->mac));
    EXPECT_FALSE(victim.on_confirm(*confirm));
    EXPECT_EQ(victim.state(), HsState::Refused);
}

TEST(Auth, ForgedReplyIsRefusedByTheInitiator) {
    Handshake ini(key_of(1), true);
    ASSERT_TRUE(ini.hello(binding()));
    Nonce n{};
    n.fill(9);
    EXPECT_FALSE(ini.on_reply(n, Mac{}));
    EXPECT_EQ(ini.state(), HsState::Refused);
}

TEST(Auth, CallsOutOfOrderRefuse) {
    Handshake a(key_of(1), true);
    EXPECT_FALSE(a.on_reply(Nonce{}, Mac{}));
    EXPECT_EQ(a.state(), HsState::Refused);
    Handshake b(key_of(1), true);
    EXPECT_FALSE(b.on_confirm(Mac{}));
    Handshake c(key_of(1), true);
    ASSERT_TRUE(c.hello(binding()));
    EXPECT_FALSE(c.hello(binding()));
    EXPECT_FALSE(c.on_hello(binding(), Nonce{}, Mac{}));
}

TEST(Auth, DisabledSendsZeroMacsAndChecksNothing) {
    Handshake ini(key_of(1), false), acc(key_of(2), false);
    auto hello = ini.hello(binding());
    ASSERT_TRUE(hello);
    EXPECT_EQ(hello->mac, Mac{});
    EXPECT_NE(hello->nonce, Nonce{});
    auto reply = acc.on_hello(binding(), hello->nonce, hello->mac);
    ASSERT_TRUE(reply);
    auto confirm = ini.on_reply(reply->nonce, reply->mac);
    ASSERT_TRUE(confirm);
    EXPECT_TRUE(acc.on_confirm(*confirm));
}

TEST(Auth, OneSideDisabledIsRefused) {
    Handshake ini(key_of(1), false), acc(key_of(1), true);
    EXPECT_FALSE(run(ini, acc, binding(), binding()));
}

TEST(Auth, PairKeyIsSymmetricInUseAndDependsOnBothKeys) {
    const Key a = key_of(1), b = key_of(2), c = key_of(3);
    const Key ab = pair_key("pair", kA, a, kB, b);
    EXPECT_EQ(ab, pair_key("pair", kA, a, kB, b));
    EXPECT_NE(ab, pair_key("pair", kA, a, kB, c));
    EXPECT_NE(ab, pair_key("pair", kA, c, kB, b));
    EXPECT_NE(ab, pair_key("pair", kA, a, {7, 4}, b));
    EXPECT_NE(ab, pair_key("other", kA, a, kB, b));
}

TEST(Auth, StateNamesAndTransitions) {
    EXPECT_EQ(to_string(HsState::AwaitConfirm), "await_confirm");
    EXPECT_TRUE(transition_allowed(HsState::Start, HsState::AwaitReply));
    EXPECT_FALSE(transition_allowed(HsState::Start, HsState::Authenticated));
    EXPECT_FALSE(transition_allowed(HsState::Authenticated, HsState::Refused));
    EXPECT_FALSE(transition_allowed(HsState::Refused, HsState::Start));
}

TEST(Auth, KeyedMacEqualsOneShotHmacAndServesAHandshake) {
    using namespace plugin::common::auth;
    const Key key = *random_key();
    const KeyedMac keyed(key);
    for (std::size_t n : {0u, 1u, 63u, 64u, 65u, 200u}) {
        std::vector<std::uint8_t> data(n, static_cast<std::uint8_t>(n));
        EXPECT_EQ(keyed.mac(data), hmac(key, data)) << n;
        EXPECT_EQ(keyed.mac(data), hmac(key, data)) << n;  // reusable
    }
    // One side with the kept context, the other with the plain key.
    const Binding b{"test-v1", {1, 0}, {1, 1}, 3};
    Handshake ini(keyed, true), acc(key, true);
    auto hello = ini.hello(b);
    ASSERT_TRUE(hello);
    auto reply = acc.on_hello(b, hello->nonce, hello->mac);
    ASSERT_TRUE(reply);
    auto confirm = ini.on_reply(reply->nonce, reply->mac);
    ASSERT_TRUE(confirm);
    EXPECT_TRUE(acc.on_confirm(*confirm));
    EXPECT_TRUE(ini.authenticated() && acc.authenticated());
}

}  // namespace
