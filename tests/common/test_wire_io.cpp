#include "wire_io.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "crc32c.hpp"

namespace plugin::common {
namespace {

using Bytes = std::vector<std::uint8_t>;

TEST(ByteWriter, NetworkByteOrderGoldenBytes) {
    std::array<std::uint8_t, 21> buf{};
    ByteWriter w(buf);
    w.u8(0x01);
    w.u16(0x0203);
    w.u32(0x04050607u);
    w.u64(0x08090A0B0C0D0E0Full);
    w.zeros(2);
    const std::array<std::uint8_t, 2> tail{0xAA, 0xBB};
    w.bytes(tail);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w.position(), 19u);
    EXPECT_EQ(w.remaining(), 2u);
    const Bytes expected{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A,
                         0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x00, 0x00, 0xAA, 0xBB};
    const auto out = w.written();
    EXPECT_EQ(Bytes(out.begin(), out.end()), expected);
    EXPECT_EQ(w.finish().value(), 19u);
}

TEST(ByteReader, NetworkByteOrderGoldenBytes) {
    const Bytes in{0xFE, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x23,
                   0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0x5A};
    ByteReader r(in);
    EXPECT_EQ(r.u8(), 0xFE);
    EXPECT_EQ(r.u16(), 0x1234);
    EXPECT_EQ(r.u32(), 0xDEADBEEFu);
    EXPECT_EQ(r.u64(), 0x0123456789ABCDEFull);
    r.expect_zero(2);
    EXPECT_EQ(r.position(), 17u);
    const auto rest = r.rest();
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0], 0x5A);
    r.expect_end();
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r.status().has_value());
}

TEST(ByteWriter, OverflowIsStickyAndAllOrNothing) {
    std::array<std::uint8_t, 7> buf{};
    buf.fill(0xCC);
    ByteWriter w(buf);
    w.u32(0x11223344u);
    w.u32(0x55667788u);  // 4 > 3 remaining: fails, writes nothing
    EXPECT_FALSE(w.ok());
    EXPECT_EQ(w.error().code, ErrorCode::NoSpace);
    EXPECT_EQ(w.position(), 4u);
    w.u8(0x99);  // would fit, but the writer has failed
    w.zeros(1);
    EXPECT_TRUE(w.take(1).empty());
    EXPECT_EQ(w.position(), 4u);
    EXPECT_EQ(buf[4], 0xCC);
    EXPECT_EQ(buf[5], 0xCC);
    EXPECT_EQ(buf[6], 0xCC);
    const auto r = w.finish();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::NoSpace);
}

TEST(ByteWriter, ExactFitIsOk) {
    std::array<std::uint8_t, 8> buf{};
    ByteWriter w(buf);
    w.u64(1);
    EXPECT_TRUE(w.ok());
    EXPECT_EQ(w.remaining(), 0u);
    w.bytes({});  // empty write at the end is fine
    w.zeros(0);
    EXPECT_TRUE(w.ok());
    w.u8(0);
    EXPECT_FALSE(w.ok());
}

TEST(ByteWriter, EmptyBuffer) {
    ByteWriter w(std::span<std::uint8_t>{});
    w.zeros(0);
    EXPECT_TRUE(w.ok());
    w.u8(1);
    EXPECT_FALSE(w.ok());
}

TEST(ByteWriter, PatchInsideWrittenBytesOnly) {
    std::array<std::uint8_t, 16> buf{};
    ByteWriter w(buf);
    w.u16(0);  // length, patched below
    w.u32(0);  // checksum, patched below
    w.u32(0xA1B2C3D4u);
    w.patch_u16(0, static_cast<std::uint16_t>(w.position()));
    w.patch_u32(2, 0xCAFEF00Du);
    ASSERT_TRUE(w.ok());
    const Bytes expected{0x00, 0x0A, 0xCA, 0xFE, 0xF0, 0x0D, 0xA1, 0xB2, 0xC3, 0xD4};
    EXPECT_EQ(Bytes(w.written().begin(), w.written().end()), expected);

    w.patch_u32(7, 0);  // 7 + 4 > 10 written
    EXPECT_FALSE(w.ok());
    EXPECT_EQ(w.error().code, ErrorCode::InvalidArgument);
    EXPECT_EQ(buf[7], 0xB2);  // untouched

    ByteWriter huge(buf);
    huge.patch_u16(static_cast<std::size_t>(-1), 0);  // offset overflow must not wrap
    EXPECT_FALSE(huge.ok());
}

TEST(ByteWriter, TakeForInPlaceCopyAndChecksum) {
    const Bytes payload{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    std::array<std::uint8_t, 32> buf{};
    ByteWriter w(buf);
    w.u32(0);
    const auto dst = w.take(payload.size());
    ASSERT_EQ(dst.size(), payload.size());
    const std::uint32_t crc = crc32c_copy(dst.data(), payload.data(), payload.size());
    w.patch_u32(0, crc);
    ASSERT_TRUE(w.ok());
    ByteReader r(w.written());
    EXPECT_EQ(r.u32(), crc32c(payload.data(), payload.size()));
    const auto got = r.rest();
    EXPECT_EQ(Bytes(got.begin(), got.end()), payload);
}

TEST(ByteReader, TruncationIsStickyAndAllOrNothing) {
    const Bytes in{0x01, 0x02, 0x03, 0x04, 0x05};
    ByteReader r(in);
    EXPECT_EQ(r.u16(), 0x0102);
    EXPECT_EQ(r.u32(), 0u);  // 3 left
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::Truncated);
    EXPECT_EQ(r.position(), 2u);
    EXPECT_EQ(r.u8(), 0);  // would fit, but the reader has failed
    EXPECT_TRUE(r.bytes(1).empty());
    EXPECT_TRUE(r.rest().empty());
    EXPECT_EQ(r.position(), 2u);
    EXPECT_EQ(r.status().error().code, ErrorCode::Truncated);
}

TEST(ByteReader, ReservedMustBeZero) {
    const Bytes in{0x00, 0x00, 0x10, 0x00};
    ByteReader r(in);
    r.expect_zero(2);
    EXPECT_TRUE(r.ok());
    r.expect_zero(2);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::BadField);

    ByteReader shorter(in);
    shorter.expect_zero(5);
    EXPECT_EQ(shorter.error().code, ErrorCode::Truncated);
}

TEST(ByteReader, FirstFailureWins) {
    const Bytes in{0x07, 0x01};
    ByteReader r(in);
    if (r.u8() != 1)
        r.fail({ErrorCode::BadVersion, "version"});
    r.expect_end();  // would be BadLength
    (void)r.u64();   // would be Truncated
    EXPECT_EQ(r.error().code, ErrorCode::BadVersion);
    EXPECT_EQ(r.error().message, "version");
}

TEST(ByteReader, NeedAndExpectEnd) {
    const Bytes in{1, 2, 3};
    ByteReader r(in);
    EXPECT_TRUE(r.need(3));
    EXPECT_EQ(r.position(), 0u);  // need() consumes nothing
    r.skip(1);
    r.expect_end();
    EXPECT_EQ(r.error().code, ErrorCode::BadLength);

    ByteReader s(in);
    EXPECT_FALSE(s.need(4));
    EXPECT_EQ(s.error().code, ErrorCode::Truncated);
}

TEST(ByteReader, SubReaderCoversASection) {
    const Bytes in{0x00, 0x02, 0xAB, 0xCD, 0xEE};
    ByteReader r(in);
    const auto len = r.u16();
    ByteReader section = r.sub(len);
    EXPECT_EQ(section.u16(), 0xABCD);
    section.expect_end();
    EXPECT_TRUE(section.ok());
    EXPECT_EQ(r.u8(), 0xEE);
    EXPECT_TRUE(r.ok());

    ByteReader bad(in);
    ByteReader too_long = bad.sub(9);
    EXPECT_FALSE(bad.ok());
    EXPECT_FALSE(too_long.ok());
    EXPECT_EQ(too_long.error().code, ErrorCode::Truncated);
    EXPECT_EQ(too_long.u8(), 0);
}

TEST(ByteReader, EmptyInput) {
    ByteReader r(std::span<const std::uint8_t>{});
    EXPECT_TRUE(r.bytes(0).empty());
    r.expect_zero(0);
    r.expect_end();
    EXPECT_TRUE(r.ok());
    (void)r.u8();
    EXPECT_EQ(r.error().code, ErrorCode::Truncated);
}

// A sample header in the house format, to exercise a whole codec:
//
//   0       1       2       3
//   +-------+-------+-------+-------+
//   |version| type  |   reserved    |
//   +-------+-------+-------+-------+
//   |     seq       |  payload len  |
//   +-------+-------+-------+-------+
//   |            vfrag id           |
//   |              (64)             |
//   +-------+-------+-------+-------+
//   |      header CRC32C (0 here    |
//   |      while computing it)      |
//   +-------+-------+-------+-------+
//   |  payload (payload len bytes)  ...
struct Sample {
    std::uint8_t type = 0;
    std::uint16_t seq = 0;
    std::uint64_t vfrag = 0;
    Bytes payload;
};
constexpr std::uint8_t kSampleVersion = 1;
constexpr std::size_t kSampleHeaderLen = 20;
constexpr std::size_t kSampleCrcOffset = 16;

Result<std::size_t> encode_sample(const Sample& s, std::span<std::uint8_t> out) {
    ByteWriter w(out);
    w.u8(kSampleVersion);
    w.u8(s.type);
    w.zeros(2);
    w.u16(s.seq);
    w.u16(static_cast<std::uint16_t>(s.payload.size()));
    w.u64(s.vfrag);
    w.u32(0);
    if (!w.ok())
        return fail(w.error());
    w.patch_u32(kSampleCrcOffset, crc32c(w.written()));
    w.bytes(s.payload);
    return w.finish();
}

Result<Sample> decode_sample(std::span<const std::uint8_t> in) {
    ByteReader r(in);
    if (!r.need(kSampleHeaderLen))
        return fail(r.error());
    if (r.u8() != kSampleVersion)
        return fail(ErrorCode::BadVersion);
    Sample s;
    s.type = r.u8();
    r.expect_zero(2);
    s.seq = r.u16();
    const std::uint16_t len = r.u16();
    s.vfrag = r.u64();
    const std::uint32_t crc = r.u32();
    if (!r.ok())
        return fail(r.error());
    std::array<std::uint8_t, 4> zero{};
    const std::uint32_t computed =
        crc32c(zero.data(), zero.size(), crc32c(in.first(kSampleCrcOffset)));
    if (crc != computed)
        return fail(ErrorCode::BadChecksum);
    const auto body = r.bytes(len);
    r.expect_end();
    if (!r.ok())
        return fail(r.error());
    s.payload.assign(body.begin(), body.end());
    return s;
}

TEST(SampleCodec, RoundTripAndGolden) {
    const Sample s{7, 0xFFFE, 0x0102030405060708ull, {0xAA, 0xBB, 0xCC}};
    std::array<std::uint8_t, 64> buf{};
    const auto n = encode_sample(s, buf);
    ASSERT_TRUE(n) << to_string(n.error().code);
    ASSERT_EQ(*n, kSampleHeaderLen + 3);
    const Bytes head_golden{0x01, 0x07, 0x00, 0x00, 0xFF, 0xFE, 0x00, 0x03,
                            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    EXPECT_EQ(Bytes(buf.begin(), buf.begin() + 16), head_golden);
    const auto d = decode_sample(std::span(buf).first(*n));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->type, 7);
    EXPECT_EQ(d->seq, 0xFFFE);
    EXPECT_EQ(d->vfrag, 0x0102030405060708ull);
    EXPECT_EQ(d->payload, s.payload);
}

TEST(SampleCodec, EveryTruncationFailsCleanly) {
    const Sample s{3, 17, 99, Bytes(13, 0x5C)};
    std::array<std::uint8_t, 64> buf{};
    const std::size_t n = encode_sample(s, buf).value();
    for (std::size_t len = 0; len < n; ++len) {
        // A separate exact-size copy so an overread is caught by sanitizers.
        const Bytes cut(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(len));
        const auto d = decode_sample(cut);
        ASSERT_FALSE(d) << "length " << len;
        EXPECT_EQ(d.error().code, ErrorCode::Truncated) << "length " << len;
    }
    Bytes longer(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    longer.push_back(0);
    EXPECT_EQ(decode_sample(longer).error().code, ErrorCode::BadLength);
}

TEST(SampleCodec, EveryBitFlipIsRejected) {
    const Sample s{3, 17, 99, {}};
    std::array<std::uint8_t, 64> buf{};
    const std::size_t n = encode_sample(s, buf).value();
    for (std::size_t bit = 0; bit < n * 8; ++bit) {
        Bytes bad(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        EXPECT_FALSE(decode_sample(bad)) << "bit " << bit;
    }
}

TEST(SampleCodec, EncodeIntoTooSmallBufferFails) {
    const Sample s{3, 17, 99, Bytes(5, 1)};
    for (std::size_t cap = 0; cap < kSampleHeaderLen + 5; ++cap) {
        Bytes out(cap);
        const auto r = encode_sample(s, out);
        ASSERT_FALSE(r) << "capacity " << cap;
        EXPECT_EQ(r.error().code, ErrorCode::NoSpace);
    }
}

}  // namespace
}  // namespace plugin::common
