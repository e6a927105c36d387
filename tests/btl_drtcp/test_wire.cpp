// drtcp wire codec (v2): HELLO/REPLY/CONFIRM and frame header round trips
// with golden bytes, every way a handshake message or header can be wrong,
// and the simultaneous-connect rule.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "wire.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;

std::vector<std::uint8_t> hello_bytes(const Hello& h) {
    std::vector<std::uint8_t> b(kHelloSize);
    EXPECT_TRUE(encode(h, b).has_value());
    return b;
}

ErrorCode error_of(const std::vector<std::uint8_t>& b) {
    auto h = decode_hello(b);
    return h ? ErrorCode::Internal : h.error().code;
}

Hello sample_hello() {
    Hello h;
    h.from = {0xABCD0001u, 7};
    h.to = {0xABCD0001u, 2};
    h.link = 3;
    h.flags = kHelloReconnect;
    const std::array<std::uint8_t, 8> random{1, 2, 3, 4, 5, 6, 7, 8};
    h.nonce = make_hello_nonce(0x0123456789ABCDEFull, random);
    for (std::size_t i = 0; i < h.mac.size(); ++i)
        h.mac[i] = static_cast<std::uint8_t>(0xA0 + i);
    return h;
}

TEST(DrtcpWire, HelloRoundTripAndGoldenBytes) {
    const Hello h = sample_hello();
    const auto b = hello_bytes(h);
    // Golden: magic "DRTC", version 2, type 1, length 76; link 3, flags 1,
    // reserved 0; from, to; nonce (sequence first); MAC.
    const std::vector<std::uint8_t> head{
        'D',  'R',  'T',  'C',  2,    1,    0, 76, 0, 3, 1, 0, 0xAB, 0xCD, 0,    1,
        0,    0,    0,    7,    0xAB, 0xCD, 0, 1,  0, 0, 0, 2, 0x01, 0x23, 0x45, 0x67,
        0x89, 0xAB, 0xCD, 0xEF, 1,    2,    3, 4,  5, 6, 7, 8, 0xA0, 0xA1};
    EXPECT_EQ(std::vector<std::uint8_t>(b.begin(), b.begin() + static_cast<long>(head.size())),
              head);
    EXPECT_EQ(b.back(), 0xA0 + 31);
    auto d = decode_hello(b);
    ASSERT_TRUE(d.has_value()) << d.error().message;
    EXPECT_EQ(*d, h);
    EXPECT_EQ(hello_sequence(d->nonce), 0x0123456789ABCDEFull);
}

TEST(DrtcpWire, ReplyAndConfirmRoundTrip) {
    Reply r;
    r.from = {9, 4};
    r.nonce[15] = 0x55;
    r.mac[0] = 0x66;
    std::array<std::uint8_t, kReplySize> rb{};
    ASSERT_EQ(*encode(r, rb), kReplySize);
    EXPECT_EQ((std::vector<std::uint8_t>(rb.begin(), rb.begin() + 8)),
              (std::vector<std::uint8_t>{'D', 'R', 'T', 'C', 2, 2, 0, 64}));
    auto rd = decode_reply(rb);
    ASSERT_TRUE(rd.has_value());
    EXPECT_EQ(*rd, r);
    Confirm c;
    c.mac[31] = 0x77;
    std::array<std::uint8_t, kConfirmSize> cb{};
    ASSERT_EQ(*encode(c, cb), kConfirmSize);
    EXPECT_EQ((std::vector<std::uint8_t>(cb.begin(), cb.begin() + 8)),
              (std::vector<std::uint8_t>{'D', 'R', 'T', 'C', 2, 3, 0, 40}));
    auto cd = decode_confirm(cb);
    ASSERT_TRUE(cd.has_value());
    EXPECT_EQ(*cd, c);
    // Each decoder takes only its own type.
    EXPECT_EQ(decode_hello(std::vector<std::uint8_t>(rb.begin(), rb.end())).error().code,
              ErrorCode::BadType);
    EXPECT_EQ(decode_confirm(rb).error().code, ErrorCode::BadType);
    EXPECT_EQ(decode_reply(cb).error().code, ErrorCode::BadType);
    for (std::size_t n = 0; n < kReplySize; ++n)
        EXPECT_FALSE(decode_reply(std::span(rb).first(n)).has_value()) << n;
    for (std::size_t n = 0; n < kConfirmSize; ++n)
        EXPECT_FALSE(decode_confirm(std::span(cb).first(n)).has_value()) << n;
}

TEST(DrtcpWire, HelloRejections) {
    const auto good = hello_bytes(sample_hello());
    auto b = good;
    b[0] ^= 0xFF;  // magic
    EXPECT_EQ(error_of(b), ErrorCode::BadType);
    b = good;
    b[4] = 1;  // version 1 (the old, unauthenticated protocol)
    EXPECT_EQ(error_of(b), ErrorCode::BadVersion);
    b = good;
    b[5] = 2;  // type
    EXPECT_EQ(error_of(b), ErrorCode::BadType);
    b = good;
    b[6] = 0xFF;  // a huge length
    EXPECT_EQ(error_of(b), ErrorCode::BadLength);
    b = good;
    b[7] = 75;  // off by one
    EXPECT_EQ(error_of(b), ErrorCode::BadLength);
    b = good;
    b[10] = 2;  // unknown flag
    EXPECT_EQ(error_of(b), ErrorCode::BadField);
    b = good;
    b[11] = 1;  // reserved
    EXPECT_EQ(error_of(b), ErrorCode::BadField);
    for (std::size_t n = 0; n < kHelloSize; ++n)
        EXPECT_EQ(
            error_of(std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<long>(n))),
            ErrorCode::Truncated)
            << n;
    std::array<std::uint8_t, kHelloSize - 1> small{};
    EXPECT_FALSE(encode(Hello{}, small).has_value());
    // The preamble alone decides: 8 bytes are enough to refuse.
    EXPECT_EQ(check_preamble(std::span(good).first(8), HsType::Hello).has_value(), true);
    EXPECT_EQ(check_preamble(std::span(good).first(8), HsType::Confirm).error().code,
              ErrorCode::BadType);
    EXPECT_EQ(check_preamble(std::span(good).first(7), HsType::Hello).error().code,
              ErrorCode::Truncated);
}

TEST(DrtcpWire, HelloSequenceIsTheNoncePrefix) {
    const std::array<std::uint8_t, 8> r{};
    EXPECT_EQ(hello_sequence(make_hello_nonce(0, r)), 0u);
    EXPECT_EQ(hello_sequence(make_hello_nonce(~0ull, r)), ~0ull);
    EXPECT_LT(hello_sequence(make_hello_nonce(5, r)), hello_sequence(make_hello_nonce(6, r)));
}

TEST(DrtcpWire, FrameHeaderRoundTripAndBounds) {
    std::array<std::uint8_t, kFrameHeaderSize> b{};
    ASSERT_TRUE(encode(FrameHeader{65, 0, 1u << 20}, b).has_value());
    auto h = decode_frame_header(b, 1u << 20);
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->tag, 65);
    EXPECT_EQ(h->len, 1u << 20);
    // One byte more than the receiver accepts: refused before any allocation.
    EXPECT_EQ(decode_frame_header(b, (1u << 20) - 1).error().code, ErrorCode::BadLength);
    auto bad = b;
    bad[0] = 0;
    EXPECT_EQ(decode_frame_header(bad, 1u << 20).error().code, ErrorCode::BadType);
    bad = b;
    bad[3] = 1;
    EXPECT_EQ(decode_frame_header(bad, 1u << 20).error().code, ErrorCode::BadField);
    EXPECT_EQ(decode_frame_header(std::span(b).first(7), 1u << 20).error().code,
              ErrorCode::Truncated);
}

TEST(DrtcpWire, ByeFrameIsEmptyAndUntagged) {
    std::array<std::uint8_t, kFrameHeaderSize> b{};
    ASSERT_TRUE(encode(FrameHeader{0, kFrameFlagBye, 0}, b).has_value());
    auto h = decode_frame_header(b, 100);
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->flags, kFrameFlagBye);
    ASSERT_TRUE(encode(FrameHeader{0, kFrameFlagBye, 5}, b).has_value());
    EXPECT_EQ(decode_frame_header(b, 100).error().code, ErrorCode::BadField);
    ASSERT_TRUE(encode(FrameHeader{3, kFrameFlagBye, 0}, b).has_value());
    EXPECT_EQ(decode_frame_header(b, 100).error().code, ErrorCode::BadField);
    ASSERT_TRUE(encode(FrameHeader{3, 0x0100, 0}, b).has_value());
    EXPECT_EQ(decode_frame_header(b, 100).error().code, ErrorCode::BadField);
}

}  // namespace
