#include <gtest/gtest.h>

#include "channel.hpp"
#include "config.hpp"

using namespace pml::dr::core;

TEST(PmlDrConfig, DefaultsValidate) {
    Config c;
    EXPECT_EQ(validate(default_params(), c), "");
    EXPECT_EQ(c.eager_limit, 128u * 1024u);
    EXPECT_EQ(c.ack_timeout, 1 * plugin::common::kSeconds);
    EXPECT_EQ(channel_params(c).ack_delay, 200);
    EXPECT_FALSE(c.faults_enabled());
}

TEST(PmlDrConfig, RejectsOutOfRange) {
    Config c;
    RawParams p = default_params();
    p.vfrag_frags = 65;
    EXPECT_NE(validate(p, c), "");
    p = default_params();
    p.fault_drop = 1.5;
    EXPECT_NE(validate(p, c), "");
    p = default_params();
    p.csum = 7;
    EXPECT_NE(validate(p, c), "");
    p = default_params();
    p.ack_timeout_ms = 0;
    EXPECT_NE(validate(p, c), "");
    for (const unsigned w : {0u, 32u, 100u, 8192u}) {
        p = default_params();
        p.window = w;
        EXPECT_NE(validate(p, c), "") << "window " << w;
    }
    p = default_params();
    p.ack_delay_us = 20u * 1000u * 1000u;
    EXPECT_NE(validate(p, c), "");
    p = default_params();
    p.ack_delay_us = 0;  // every arrival acknowledged at once
    EXPECT_EQ(validate(p, c), "");
    EXPECT_EQ(channel_params(c).ack_delay, 0);
    p = default_params();
    p.window = 1024;
    EXPECT_EQ(validate(p, c), "");
    EXPECT_EQ(channel_params(c).window, 1024u);
    p = default_params();
    p.fault_fail_after = 10;  // which BTL?
    EXPECT_NE(validate(p, c), "");
    p.fault_fail_btl = "tcp";
    EXPECT_EQ(validate(p, c), "");
    EXPECT_EQ(c.fault_fail_btl, "tcp");
    EXPECT_EQ(c.fault_fail_after, 10u);
}

// ------------------------------------------------------------ frag scheduler

#include <array>

#include "scheduler.hpp"

TEST(PmlDrScheduler, SplitsInProportionToWeights) {
    const std::array<double, 3> weights{3.0, 1.0, 0.0};
    std::array<std::uint64_t, 3> assigned{};
    for (int i = 0; i < 4000; ++i)
        assigned[pick_weighted(weights, assigned)] += 1000;
    // 3:1 between the two real paths; the zero-weight path gets nothing.
    EXPECT_NEAR(static_cast<double>(assigned[0]) / static_cast<double>(assigned[1]), 3.0, 0.01);
    EXPECT_EQ(assigned[2], 0u);
}

TEST(PmlDrScheduler, FailedPathIsNeverPickedEvenWhenItHasNothingYet) {
    // A message starts after path 0 failed: its zero bytes so far must not
    // make it the least loaded (the regression: everything went to the
    // dead path, whose BTL refused every descriptor, and the send stalled).
    const std::array<double, 2> weights{0.0, 2.0};
    const std::array<std::uint64_t, 2> assigned{0, 1u << 30};
    EXPECT_EQ(pick_weighted(weights, assigned), 1u);
    // No path has a weight: all share by bytes assigned.
    const std::array<double, 3> none{0.0, 0.0, 0.0};
    std::array<std::uint64_t, 3> spread{};
    for (int i = 0; i < 300; ++i)
        spread[pick_weighted(none, spread)] += 10;
    EXPECT_EQ(spread, (std::array<std::uint64_t, 3>{1000, 1000, 1000}));
}

TEST(PmlDrScheduler, DegenerateInputs) {
    EXPECT_EQ(pick_weighted({}, {}), 0u);
    const std::array<double, 1> one{5.0};
    const std::array<std::uint64_t, 1> a{123};
    EXPECT_EQ(pick_weighted(one, a), 0u);
    const std::array<double, 2> equal{1.0, 1.0};
    const std::array<std::uint64_t, 2> b{10, 5};
    EXPECT_EQ(pick_weighted(equal, b), 1u);
}

TEST(PmlDrScheduler, EagerFramesTakeTheNearestLivePath) {
    using R = PathRank;
    // A far NIC (latency 210, bandwidth 476) and a near one (100, 1000): the
    // near one, wherever it is listed.
    EXPECT_EQ(pick_nearest(std::array{R{210, 476, true}, R{100, 1000, true}}), 1u);
    // The near one failed: the far one.
    EXPECT_EQ(pick_nearest(std::array{R{210, 476, true}, R{100, 1000, false}}), 0u);
    // Equal latency: the faster; equal everything: the first.
    EXPECT_EQ(pick_nearest(std::array{R{100, 500, true}, R{100, 1000, true}}), 1u);
    EXPECT_EQ(pick_nearest(std::array{R{100, 1000, true}, R{100, 1000, true}}), 0u);
    // None usable, none at all.
    EXPECT_EQ(pick_nearest(std::array{R{1, 1, false}}), kNoPath);
    EXPECT_EQ(pick_nearest(std::span<const R>{}), kNoPath);
}
