#include "seq.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

namespace plugin::common {
namespace {

// The helper accepts only same-typed unsigned operands.
template <typename A, typename B>
concept Comparable = requires(A a, B b) {
    seq_lt(a, b);
};
static_assert(Comparable<std::uint16_t, std::uint16_t>);
static_assert(Comparable<std::uint64_t, std::uint64_t>);
static_assert(!Comparable<int, int>);
static_assert(!Comparable<bool, bool>);
static_assert(!Comparable<std::uint16_t, std::uint32_t>);
static_assert(seq_lt(std::uint16_t{0xFFFF}, std::uint16_t{0}));  // usable at compile time

template <typename T>
class SeqWrap : public ::testing::Test {};
using SeqTypes = ::testing::Types<std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t>;
TYPED_TEST_SUITE(SeqWrap, SeqTypes);

TYPED_TEST(SeqWrap, OrdersAcrossTheWrap) {
    using T = TypeParam;
    constexpr T kMax = std::numeric_limits<T>::max();
    const T zero = 0;
    EXPECT_TRUE(seq_lt(kMax, zero));
    EXPECT_TRUE(seq_le(kMax, zero));
    EXPECT_TRUE(seq_gt(zero, kMax));
    EXPECT_TRUE(seq_ge(zero, kMax));
    EXPECT_FALSE(seq_lt(zero, kMax));
    EXPECT_FALSE(seq_gt(kMax, zero));
    EXPECT_EQ(seq_diff(zero, kMax), 1);
    EXPECT_EQ(seq_diff(kMax, zero), -1);
    EXPECT_EQ(seq_diff(T{2}, static_cast<T>(kMax - 2)), 5);
    EXPECT_EQ(seq_max(kMax, T{3}), T{3});
}

TYPED_TEST(SeqWrap, EqualIsNeitherBeforeNorAfter) {
    using T = TypeParam;
    for (const T v : {T{0}, T{1}, std::numeric_limits<T>::max()}) {
        EXPECT_FALSE(seq_lt(v, v));
        EXPECT_FALSE(seq_gt(v, v));
        EXPECT_TRUE(seq_le(v, v));
        EXPECT_TRUE(seq_ge(v, v));
        EXPECT_EQ(seq_diff(v, v), 0);
    }
}

TYPED_TEST(SeqWrap, DistanceBelowHalfIsExact) {
    using T = TypeParam;
    using S = std::make_signed_t<T>;
    constexpr S kHalf = std::numeric_limits<S>::max();  // 2^(n-1) - 1
    std::mt19937_64 rng(20240601);
    for (int i = 0; i < 2000; ++i) {
        const T base = static_cast<T>(rng());
        const S d = static_cast<S>(static_cast<T>(rng()));
        if (d == std::numeric_limits<S>::min())
            continue;  // the undefined half-way point
        ASSERT_LE(d, kHalf);
        const T moved = static_cast<T>(base + static_cast<T>(d));
        ASSERT_EQ(seq_diff(moved, base), d) << "base " << +base << " d " << +d;
        ASSERT_EQ(seq_diff(base, moved), static_cast<S>(-d));
        ASSERT_EQ(seq_lt(base, moved), d > 0);
        ASSERT_EQ(seq_gt(base, moved), d < 0);
    }
}

TYPED_TEST(SeqWrap, HalfWayIsLessBothWays) {
    // Documented limit (RFC 1982: undefined); callers keep windows far below it.
    using T = TypeParam;
    const T a = 5;
    const T b = static_cast<T>(a + (T{1} << (8 * sizeof(T) - 1)));
    EXPECT_EQ(seq_diff(a, b), std::numeric_limits<std::make_signed_t<T>>::min());
    EXPECT_TRUE(seq_lt(a, b));
    EXPECT_TRUE(seq_lt(b, a));
}

TEST(Seq, Wrap16AtTheBoundary) {
    // A window of 100 frames straddling 2^16.
    const std::uint16_t first = 65500;
    for (std::uint32_t i = 1; i < 100; ++i) {
        const auto later = static_cast<std::uint16_t>(first + i);
        EXPECT_TRUE(seq_lt(first, later)) << later;
        EXPECT_EQ(seq_diff(later, first), static_cast<std::int16_t>(i));
    }
    EXPECT_TRUE(seq_lt(std::uint16_t{65535}, std::uint16_t{35}));
    EXPECT_TRUE(seq_gt(std::uint16_t{0}, std::uint16_t{32769}));  // 32767 ahead
    EXPECT_TRUE(seq_lt(std::uint16_t{0}, std::uint16_t{32767}));
}

TEST(Seq, Wrap32AtTheBoundary) {
    const std::uint32_t last = 0xFFFFFFFFu;
    EXPECT_TRUE(seq_lt(last, 0u));
    EXPECT_TRUE(seq_lt(0xFFFFFF00u, 0x100u));
    EXPECT_EQ(seq_diff(0x100u, 0xFFFFFF00u), 0x200);
    EXPECT_EQ(seq_diff(0xFFFFFF00u, 0x100u), -0x200);
    EXPECT_TRUE(seq_gt(0x7FFFFFFFu, 0u));
    EXPECT_TRUE(seq_lt(0x80000001u, 0u));  // more than half ahead means behind
    EXPECT_EQ(seq_max(0xFFFFFFF0u, 0x10u), 0x10u);
}

}  // namespace
}  // namespace plugin::common
