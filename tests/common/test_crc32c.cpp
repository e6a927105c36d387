#include "crc32c.hpp"
#include "crc32c_fixed.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <string_view>
#include <vector>

namespace plugin::common {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct Impl {
    const char* name;
    std::uint32_t (*crc)(const void*, std::size_t, std::uint32_t) noexcept;
    std::uint32_t (*copy)(void*, const void*, std::size_t, std::uint32_t) noexcept;
};

const Impl kImpls[] = {
    {"sw", crc32c_sw, crc32c_copy_sw},
    {"hw", crc32c_hw, crc32c_copy_hw},
    {"lib", crc32c_lib, crc32c_copy_lib},
    {"dispatch", crc32c, crc32c_copy},
};

void PrintTo(const Impl& impl, std::ostream* os) {
    *os << impl.name;
}

class Crc32cImpl : public ::testing::TestWithParam<Impl> {};
INSTANTIATE_TEST_SUITE_P(All, Crc32cImpl, ::testing::ValuesIn(kImpls),
                         [](const auto& p) { return std::string(p.param.name); });

std::uint32_t crc_of(const Impl& impl, const Bytes& b, std::uint32_t crc = 0) {
    return impl.crc(b.data(), b.size(), crc);
}

// RFC 3720 (iSCSI) appendix B.4 and the CRC catalogue check value.
TEST_P(Crc32cImpl, PublishedVectors) {
    const Impl& impl = GetParam();
    Bytes ascending(32);
    std::iota(ascending.begin(), ascending.end(), std::uint8_t{0});
    Bytes descending(ascending.rbegin(), ascending.rend());
    EXPECT_EQ(crc_of(impl, Bytes(32, 0x00)), 0x8A9136AAu);
    EXPECT_EQ(crc_of(impl, Bytes(32, 0xFF)), 0x62A8AB43u);
    EXPECT_EQ(crc_of(impl, ascending), 0x46DD794Eu);
    EXPECT_EQ(crc_of(impl, descending), 0x113FDB5Cu);
    constexpr std::string_view kCheck = "123456789";
    EXPECT_EQ(impl.crc(kCheck.data(), kCheck.size(), 0), 0xE3069283u);
}

TEST_P(Crc32cImpl, EmptyInputLeavesCrcUnchanged) {
    const Impl& impl = GetParam();
    EXPECT_EQ(impl.crc(nullptr, 0, 0), 0u);
    EXPECT_EQ(impl.crc(nullptr, 0, 0xE3069283u), 0xE3069283u);
    EXPECT_EQ(impl.copy(nullptr, nullptr, 0, 0x1234u), 0x1234u);
}

TEST_P(Crc32cImpl, ChainingEqualsOneShotAtEverySplit) {
    const Impl& impl = GetParam();
    Bytes data(300);
    std::mt19937 rng(7);
    for (auto& b : data)
        b = static_cast<std::uint8_t>(rng());
    const std::uint32_t whole = crc_of(impl, data);
    for (std::size_t split = 0; split <= data.size(); ++split) {
        const std::uint32_t first = impl.crc(data.data(), split, 0);
        ASSERT_EQ(impl.crc(data.data() + split, data.size() - split, first), whole) << split;
    }
}

TEST_P(Crc32cImpl, CopyCopiesExactlyAndMatches) {
    const Impl& impl = GetParam();
    std::mt19937 rng(11);
    constexpr std::size_t kGuard = 16;
    for (std::size_t len :
         {0u, 1u, 7u, 8u, 9u, 63u, 767u, 768u, 769u, 4096u, 12288u, 12289u, 40000u}) {
        for (std::size_t shift = 0; shift < 8; shift += 3) {
            Bytes src(len + 8);
            for (auto& b : src)
                b = static_cast<std::uint8_t>(rng());
            Bytes dst(len + 2 * kGuard + 8, 0xE5);
            const std::uint8_t* from = src.data() + shift;
            std::uint8_t* to = dst.data() + kGuard + (7 - shift);
            const std::uint32_t got = impl.copy(to, from, len, 0x55u);
            EXPECT_EQ(got, crc32c_sw(from, len, 0x55u)) << "len " << len << " shift " << shift;
            EXPECT_EQ(std::memcmp(to, from, len), 0) << "len " << len;
            for (std::uint8_t* p = dst.data(); p < to; ++p)
                ASSERT_EQ(*p, 0xE5) << "underrun";
            for (std::uint8_t* p = to + len; p < dst.data() + dst.size(); ++p)
                ASSERT_EQ(*p, 0xE5) << "overrun";
        }
    }
}

// The hardware path has three code paths by length (bytes, 8-byte steps,
// 3-way interleave with two block sizes) and an alignment prologue: random
// lengths and offsets cover all joins between them.
TEST(Crc32c, HardwareMatchesSoftwareRandomised) {
    if (!crc32c_hw_available())
        GTEST_SKIP() << "no CRC32C instruction on this CPU";
    const std::uint32_t seed = 20240601;
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937 rng(seed);
    Bytes buf(4096 + 64);
    for (auto& b : buf)
        b = static_cast<std::uint8_t>(rng());
    std::uniform_int_distribution<std::size_t> len_dist(0, 4096);
    std::uniform_int_distribution<std::size_t> off_dist(0, 63);
    for (int i = 0; i < 3000; ++i) {
        const std::size_t len = len_dist(rng);
        const std::size_t off = off_dist(rng);
        const auto init = static_cast<std::uint32_t>(rng());
        ASSERT_EQ(crc32c_hw(buf.data() + off, len, init), crc32c_sw(buf.data() + off, len, init))
            << "len " << len << " offset " << off << " init " << init;
    }
}

// A header's CRC over itself with its CRC field read as zero: every length
// and field position (aligned for the fast path, unaligned for the general
// one), at unaligned addresses, equals zeroing the field in a copy.
TEST(Crc32c, HeaderCrcEqualsZeroedCopy) {
    std::mt19937 rng(77);
    Bytes buf(256 + 8);
    for (auto& b : buf)
        b = static_cast<std::uint8_t>(rng());
    for (std::size_t len = 4; len <= 96; ++len) {
        for (std::size_t field = 0; field + 4 <= len; ++field) {
            const std::size_t off = (len + field) % 8;
            const std::uint8_t* hdr = buf.data() + off;
            Bytes copy(hdr, hdr + len);
            std::memset(copy.data() + field, 0, 4);
            const std::uint32_t want = crc32c_sw(copy.data(), copy.size());
            ASSERT_EQ(crc32c_header(hdr, len, field), want) << "len " << len << " field " << field;
            ASSERT_EQ(crc32c_header_sw(hdr, len, field), want)
                << "len " << len << " field " << field;
            ASSERT_EQ(crc32c_header_hw(hdr, len, field), want)
                << "len " << len << " field " << field;
        }
    }
    // A field that does not fit is no field: the plain CRC.
    EXPECT_EQ(crc32c_header(buf.data(), 6, 4), crc32c(buf.data(), 6));
}

// The unrolled fixed-shape form: the same value for every shape the codecs
// use and the corner cases (field first, last, in either half of a word).
template <std::size_t Len, std::size_t Field>
void expect_fixed_equals_general(const Bytes& buf) {
    for (std::size_t off = 0; off < 8; ++off) {
        const std::uint8_t* hdr = buf.data() + off;
        ASSERT_EQ((crc32c_header_fixed<Len, Field>(hdr)), crc32c_header(hdr, Len, Field))
            << "len " << Len << " field " << Field << " offset " << off;
    }
}

TEST(Crc32c, FixedShapeHeaderCrcEqualsTheGeneralOne) {
    std::mt19937 rng(91);
    Bytes buf(128);
    for (auto& b : buf)
        b = static_cast<std::uint8_t>(rng());
    expect_fixed_equals_general<32, 4>(buf);
    expect_fixed_equals_general<36, 4>(buf);
    expect_fixed_equals_general<48, 4>(buf);
    expect_fixed_equals_general<56, 4>(buf);
    expect_fixed_equals_general<64, 4>(buf);
    expect_fixed_equals_general<72, 4>(buf);
    expect_fixed_equals_general<48, 0>(buf);
    expect_fixed_equals_general<48, 8>(buf);
    expect_fixed_equals_general<44, 40>(buf);
    expect_fixed_equals_general<48, 44>(buf);
    expect_fixed_equals_general<4, 0>(buf);
}

TEST(Crc32c, HardwareMatchesSoftwareAroundBlockSizes) {
    if (!crc32c_hw_available())
        GTEST_SKIP() << "no CRC32C instruction on this CPU";
    std::mt19937 rng(3);
    Bytes buf(3 * 4096 * 3 + 64);
    for (auto& b : buf)
        b = static_cast<std::uint8_t>(rng());
    for (std::size_t base : {768u, 1536u, 12288u, 24576u, 36864u}) {
        for (std::size_t len = base - 9; len <= base + 9; ++len) {
            for (std::size_t off = 0; off < 8; ++off) {
                ASSERT_EQ(crc32c_hw(buf.data() + off, len, 0), crc32c_sw(buf.data() + off, len, 0))
                    << "len " << len << " offset " << off;
            }
        }
    }
}

TEST(Crc32c, MixedImplementationsChain) {
    Bytes data(5000);
    std::mt19937 rng(5);
    for (auto& b : data)
        b = static_cast<std::uint8_t>(rng());
    const std::uint32_t whole = crc32c_sw(data.data(), data.size());
    const std::uint32_t a = crc32c_hw(data.data(), 1234);
    const std::uint32_t b = crc32c_sw(data.data() + 1234, 2000, a);
    EXPECT_EQ(crc32c(data.data() + 3234, data.size() - 3234, b), whole);
    EXPECT_EQ(crc32c(std::span<const std::uint8_t>(data)), whole);
}

TEST(Crc32c, CombineJoinsIndependentPieces) {
    Bytes data(3000);
    std::mt19937 rng(9);
    for (auto& b : data)
        b = static_cast<std::uint8_t>(rng());
    const std::uint32_t whole = crc32c(data.data(), data.size());
    for (std::size_t split : {0u, 1u, 8u, 100u, 1024u, 2999u, 3000u}) {
        const std::uint32_t a = crc32c(data.data(), split);
        const std::uint32_t b = crc32c(data.data() + split, data.size() - split);
        EXPECT_EQ(crc32c_combine(a, b, data.size() - split), whole) << split;
    }
}

TEST(Crc32c, DetectsEveryBitFlip) {
    Bytes data(64, 0x3C);
    const std::uint32_t good = crc32c(data.data(), data.size());
    for (std::size_t bit = 0; bit < data.size() * 8; ++bit) {
        data[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        EXPECT_NE(crc32c(data.data(), data.size()), good) << bit;
        data[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    }
}

TEST(Crc32c, ReportsImplementation) {
#if defined(__x86_64__) || defined(__aarch64__)
    // Not an assertion: CI may run on a CPU without the instruction.
    std::printf("crc32c hardware path: %s, ISA-L: %s\n", crc32c_hw_available() ? "yes" : "no",
                crc32c_lib_available() ? "yes" : "no");
#else
    EXPECT_FALSE(crc32c_hw_available());
#endif
    SUCCEED();
}

}  // namespace
}  // namespace plugin::common
