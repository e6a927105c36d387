// drtcp wire codec: HELLO and frame header round trips, every way a HELLO or
// header can be wrong, and the simultaneous-connect rule.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "crc32c.hpp"
#include "wire.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;

std::vector<std::uint8_t> hello_bytes(const Hello& h) {
    std::vector<std::uint8_t> b(kHelloSize);
    EXPECT_TRUE(encode(h, b).has_value());
    return b;
}

// Recomputes the HELLO's CRC after a test changed a field.
void reseal(std::vector<std::uint8_t>& b) {
    const std::uint32_t crc = plugin::common::crc32c(b.data(), kHelloSize - 4);
    for (int i = 0; i < 4; ++i)
        b[kHelloSize - 4 + static_cast<std::size_t>(i)] =
            static_cast<std::uint8_t>(crc >> (24 - 8 * i));
}

ErrorCode error_of(const std::vector<std::uint8_t>& b) {
    auto h = decode_hello(b);
    return h ? ErrorCode::Internal : h.error().code;
}

TEST(DrtcpWire, HelloRoundTrip) {
    Hello h;
    h.from = {0xABCD0001u, 7};
    h.link = 3;
    h.nonce = 0x0123456789ABCDEFull;
    const auto b = hello_bytes(h);
    // Golden prefix: magic "DRTC", version 1, reserved 0, link 3.
    EXPECT_EQ((std::vector<std::uint8_t>(b.begin(), b.begin() + 8)),
              (std::vector<std::uint8_t>{'D', 'R', 'T', 'C', 1, 0, 0, 3}));
    auto d = decode_hello(b);
    ASSERT_TRUE(d.has_value()) << d.error().message;
    EXPECT_EQ(d->from, h.from);
    EXPECT_EQ(d->link, 3);
    EXPECT_EQ(d->nonce, h.nonce);
}

TEST(DrtcpWire, HelloRejections) {
    const auto good = hello_bytes(Hello{{1, 2}, 0, 9});
    auto b = good;
    b[0] ^= 0xFF;  // magic
    reseal(b);
    EXPECT_EQ(error_of(b), ErrorCode::BadType);
    b = good;
    b[4] = 2;  // version
    reseal(b);
    EXPECT_EQ(error_of(b), ErrorCode::BadVersion);
    b = good;
    b[5] = 1;  // reserved
    reseal(b);
    EXPECT_EQ(error_of(b), ErrorCode::BadField);
    b = good;
    b[24] = 1;  // reserved word
    reseal(b);
    EXPECT_EQ(error_of(b), ErrorCode::BadField);
    for (std::size_t i = 4; i < kHelloSize; ++i) {  // any flipped bit past the magic
        b = good;
        b[i] ^= 0x10;
        EXPECT_EQ(error_of(b), ErrorCode::BadChecksum) << "byte " << i;
    }
    for (std::size_t n = 0; n < kHelloSize; ++n)
        EXPECT_EQ(
            error_of(std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<long>(n))),
            ErrorCode::Truncated);
    std::array<std::uint8_t, kHelloSize - 1> small{};
    EXPECT_FALSE(encode(Hello{}, small).has_value());
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

TEST(DrtcpWire, SimultaneousConnectKeepsExactlyOne) {
    const ProcName names[] = {{1, 0}, {1, 1}, {1, 7}, {2, 0}, {0xFFFFFFFFu, 3}};
    for (const ProcName a : names)
        for (const ProcName b : names)
            if (!(a == b)) {
                EXPECT_NE(keep_outgoing(a, b), keep_outgoing(b, a))
                    << a.jobid << "." << a.vpid << " vs " << b.jobid << "." << b.vpid;
            }
}

}  // namespace
