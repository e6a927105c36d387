// RxTracker: the receive side's record of one peer's frame sequence.
#include "rx_tracker.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using pml::dr::core::RxTracker;
using Seen = RxTracker::Seen;

constexpr std::uint32_t kWindow = 64;

TEST(PmlDrRxTracker, InOrderArrivalsNeedNoBitmap) {
    RxTracker rx(0);
    for (std::uint32_t s = 1; s <= 200; ++s) {
        ASSERT_TRUE(rx.is_next(s));
        EXPECT_EQ(rx.check(s, kWindow), Seen::New);
        rx.take_next();
        EXPECT_EQ(rx.cum(), s);
    }
    EXPECT_EQ(rx.check(200, kWindow), Seen::Duplicate);
    EXPECT_EQ(rx.check(3, kWindow), Seen::Duplicate);
    EXPECT_TRUE(rx.arrived(150, kWindow));
    EXPECT_EQ(rx.memory_bytes(), 0u);
}

TEST(PmlDrRxTracker, ArrivalsPastAGapWaitForIt) {
    RxTracker rx(10);
    EXPECT_TRUE(rx.record(13, kWindow)) << "past a gap";
    EXPECT_EQ(rx.ahead(), 1u);
    EXPECT_GT(rx.memory_bytes(), 0u);
    EXPECT_FALSE(rx.is_next(11)) << "the next seq takes the general path while ahead";
    EXPECT_TRUE(rx.arrived(13, kWindow));
    EXPECT_FALSE(rx.arrived(12, kWindow));
    EXPECT_EQ(rx.check(13, kWindow), Seen::Duplicate);
    EXPECT_EQ(rx.check(12, kWindow), Seen::New);
    EXPECT_FALSE(rx.record(11, kWindow));
    EXPECT_EQ(rx.cum(), 11u);
    EXPECT_FALSE(rx.record(12, kWindow));
    EXPECT_EQ(rx.cum(), 13u) << "moves over what arrived past the gap";
    EXPECT_EQ(rx.ahead(), 0u);
    EXPECT_EQ(rx.check(13, kWindow), Seen::Duplicate);
    EXPECT_TRUE(rx.is_next(14));
}

TEST(PmlDrRxTracker, NothingPastTheWindow) {
    RxTracker rx(100);
    EXPECT_EQ(rx.check(100 + kWindow, kWindow), Seen::New);
    EXPECT_EQ(rx.check(100 + kWindow + 1, kWindow), Seen::TooFar);
    EXPECT_FALSE(rx.arrived(100 + kWindow + 1, kWindow));
}

TEST(PmlDrRxTracker, WrapsPast2To32SkippingZero) {
    RxTracker rx(0xFFFFFFFDu);
    ASSERT_TRUE(rx.is_next(0xFFFFFFFEu));
    rx.take_next();
    ASSERT_TRUE(rx.is_next(0xFFFFFFFFu));
    rx.take_next();
    EXPECT_EQ(rx.cum(), 0u) << "0 is never sent: stepped over";
    EXPECT_TRUE(rx.is_next(1));

    // The same across a gap: 2 first, then the seqs before it.
    RxTracker gap(0xFFFFFFFDu);
    EXPECT_TRUE(gap.record(2, kWindow));
    EXPECT_EQ(gap.check(0xFFFFFFFEu, kWindow), Seen::New);
    EXPECT_FALSE(gap.record(0xFFFFFFFEu, kWindow));
    EXPECT_FALSE(gap.record(0xFFFFFFFFu, kWindow));
    EXPECT_EQ(gap.cum(), 0u);
    EXPECT_FALSE(gap.record(1, kWindow));
    EXPECT_EQ(gap.cum(), 2u);
    EXPECT_EQ(gap.ahead(), 0u);
    EXPECT_TRUE(gap.arrived(0xFFFFFFFFu, kWindow));
    EXPECT_EQ(gap.check(2, kWindow), Seen::Duplicate);
}

TEST(PmlDrRxTracker, TheRingReusesItsBitsAcrossWindows) {
    // Every other seq first, then the holes: each bit is set and cleared
    // many times over as the ring turns.
    RxTracker rx(0);
    std::uint32_t base = 0;
    for (int round = 0; round < 20; ++round) {
        for (std::uint32_t s = base + 2; s <= base + kWindow; s += 2)
            ASSERT_TRUE(rx.record(s, kWindow)) << s;
        EXPECT_EQ(rx.ahead(), kWindow / 2);
        for (std::uint32_t s = base + 1; s < base + kWindow; s += 2) {
            ASSERT_EQ(rx.check(s, kWindow), Seen::New) << s;
            (void)rx.record(s, kWindow);
        }
        base += kWindow;
        ASSERT_EQ(rx.cum(), base);
        ASSERT_EQ(rx.ahead(), 0u);
    }
}

}  // namespace
