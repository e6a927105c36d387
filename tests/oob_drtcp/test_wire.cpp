// oob drtcp wire codec: round trips, and every truncation, single-bit change
// and reserved/field violation of handshake frames and message headers is refused.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "route.hpp"
#include "wire.hpp"

namespace {

using namespace oob::drtcp::core;
using plugin::common::ErrorCode;

Header sample() {
    Header h;
    h.origin = {0x11223344, 2};
    h.dst = {0x11223344, 0};
    h.tag = 15;
    h.seq_num = 0xFFFFFFFF;
    h.nbytes = 1000;
    EXPECT_TRUE(set_routed(h, "radix"));
    return h;
}

HandshakeFrame hello_sample() {
    HandshakeFrame f;
    f.type = HsType::Hello;
    f.flags = kFlagReconnect;
    f.sender = {0x46CE0000, 3};
    f.receiver = {0x46CE0000, 0};
    for (std::size_t i = 0; i < f.nonce.size(); ++i)
        f.nonce[i] = static_cast<std::uint8_t>(i + 1);
    for (std::size_t i = 0; i < f.mac.size(); ++i)
        f.mac[i] = static_cast<std::uint8_t>(0x80 + i);
    return f;
}

TEST(OobWire, HandshakeRoundTripAndEveryBitMatters) {
    std::vector<std::uint8_t> b(kHandshakeSize);
    const HandshakeFrame f = hello_sample();
    ASSERT_EQ(encode_handshake(f, b).value(), kHandshakeSize);
    // Golden prefix: magic, version 2, HELLO, reconnect, reserved.
    EXPECT_EQ(std::vector<std::uint8_t>(b.begin(), b.begin() + 8),
              (std::vector<std::uint8_t>{0x44, 0x52, 0x4F, 0x42, 2, 1, 1, 0}));
    auto d = decode_handshake(b);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->type, f.type);
    EXPECT_EQ(d->flags, f.flags);
    EXPECT_EQ(d->sender, f.sender);
    EXPECT_EQ(d->receiver, f.receiver);
    EXPECT_EQ(d->nonce, f.nonce);
    EXPECT_EQ(d->mac, f.mac);
    for (std::size_t n = 0; n < kHandshakeSize; ++n)
        EXPECT_FALSE(decode_handshake(std::span(b).first(n)).has_value()) << n;
    for (std::size_t i = 0; i < b.size() * 8; ++i) {
        auto c = b;
        c[i / 8] ^= static_cast<std::uint8_t>(1u << (i % 8));
        EXPECT_FALSE(decode_handshake(c).has_value()) << "bit " << i;
    }
}

TEST(OobWire, HandshakeFieldRules) {
    std::vector<std::uint8_t> b(kHandshakeSize);
    HandshakeFrame f = hello_sample();
    f.type = HsType::Reply;  // flags only on HELLO
    ASSERT_TRUE(encode_handshake(f, b).has_value());
    EXPECT_EQ(decode_handshake(b).error().code, ErrorCode::BadField);
    f.flags = 0;
    f.type = HsType::Confirm;  // no nonce in CONFIRM
    ASSERT_TRUE(encode_handshake(f, b).has_value());
    EXPECT_EQ(decode_handshake(b).error().code, ErrorCode::BadField);
    f.nonce.fill(0);
    ASSERT_TRUE(encode_handshake(f, b).has_value());
    EXPECT_TRUE(decode_handshake(b).has_value());
    f.type = HsType::Hello;
    f.flags = 2;  // unknown flag
    ASSERT_TRUE(encode_handshake(f, b).has_value());
    EXPECT_EQ(decode_handshake(b).error().code, ErrorCode::BadField);
}

TEST(OobWire, HeaderRoundTrip) {
    std::vector<std::uint8_t> b(kHeaderSize);
    const Header h = sample();
    ASSERT_EQ(encode_header(h, b).value(), kHeaderSize);
    auto d = decode_header(b, 1 << 20);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->origin, h.origin);
    EXPECT_EQ(d->dst, h.dst);
    EXPECT_EQ(d->tag, h.tag);
    EXPECT_EQ(d->seq_num, h.seq_num);
    EXPECT_EQ(d->nbytes, h.nbytes);
    EXPECT_EQ(d->routed_name(), "radix");
    EXPECT_EQ(d->kind, Kind::Message);
}

TEST(OobWire, HeaderRefusesDamageAndLies) {
    std::vector<std::uint8_t> b(kHeaderSize);
    ASSERT_TRUE(encode_header(sample(), b).has_value());
    for (std::size_t n = 0; n < kHeaderSize; ++n)
        EXPECT_EQ(decode_header(std::span(b).first(n), 1 << 20).error().code, ErrorCode::Truncated);
    for (std::size_t i = 0; i < b.size() * 8; ++i) {
        auto c = b;
        c[i / 8] ^= static_cast<std::uint8_t>(1u << (i % 8));
        EXPECT_FALSE(decode_header(c, 1 << 20).has_value()) << "bit " << i;
    }
    // A length above the receiver's maximum is refused, not allocated.
    EXPECT_EQ(decode_header(b, 999).error().code, ErrorCode::BadLength);
}

TEST(OobWire, RoutedNamesAndByeAreChecked) {
    Header h = sample();
    EXPECT_FALSE(set_routed(h, "Radix"));
    EXPECT_FALSE(set_routed(h, std::string(kRoutedMax + 1, 'a')));
    EXPECT_TRUE(set_routed(h, std::string(kRoutedMax, 'a')));
    std::vector<std::uint8_t> b(kHeaderSize);
    ASSERT_TRUE(encode_header(h, b).has_value());
    EXPECT_EQ(decode_header(b, 1 << 20)->routed_name(), std::string(kRoutedMax, 'a'));

    Header bye;
    bye.kind = Kind::Bye;
    ASSERT_TRUE(encode_header(bye, b).has_value());
    EXPECT_EQ(decode_header(b, 0)->kind, Kind::Bye);
    bye.tag = 1;  // a BYE carries nothing
    ASSERT_TRUE(encode_header(bye, b).has_value());
    EXPECT_EQ(decode_header(b, 0).error().code, ErrorCode::BadField);
}

TEST(OobWire, RandomBytesNeverDecode) {
    std::mt19937_64 rng(8);
    std::vector<std::uint8_t> b(kHeaderSize);
    for (int i = 0; i < 20000; ++i) {
        for (auto& x : b)
            x = static_cast<std::uint8_t>(rng());
        b[0] = kSync;  // get past the first check now and then
        EXPECT_FALSE(decode_header(b, 1 << 20).has_value());
        EXPECT_FALSE(decode_handshake(std::span(b).first(kHandshakeSize)).has_value());
    }
}

TEST(OobRoute, DeliverForwardOrNoRoute) {
    const ProcName me{5, 1}, hnp{5, 0}, d2{5, 2};
    EXPECT_EQ(route(me, me, {}).kind, RouteKind::Deliver);
    EXPECT_EQ(route(me, hnp, hnp).kind, RouteKind::Forward);
    const Route via = route(me, d2, hnp);
    EXPECT_EQ(via.kind, RouteKind::Forward);
    EXPECT_EQ(via.hop, hnp);
    EXPECT_EQ(route(me, d2, me).kind, RouteKind::NoRoute);  // a loop
    EXPECT_EQ(route(me, d2, ProcName{kNameInvalid, kNameInvalid}).kind, RouteKind::NoRoute);
    EXPECT_EQ(route(me, ProcName{5, kNameWildcard}, hnp).kind, RouteKind::NoRoute);
}

}  // namespace
