// Per-frame faults: drop, duplicate, corrupt, reorder, delay, and scoping.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include "network.hpp"
#include "seeds.hpp"
#include "sim_test_util.hpp"

namespace sim {
namespace {

using testing::expect_conservation;
using testing::frame_number;
using testing::numbered_frame;
using testing::Recorder;

constexpr std::uint32_t kFrames = 10'000;

// kFrames frames 0 -> 1 on `link`, one per microsecond.
void send_stream(Simulator& sim, Network& net, LinkIndex link = 0, Rank src = 0, Rank dst = 1) {
    for (std::uint32_t i = 0; i < kFrames; ++i) {
        sim.schedule(
            i, [&net, i, link, src, dst] { net.send(numbered_frame(src, dst, link, i, 32)); });
    }
}

// |observed - n p| within 5 standard deviations: a false alarm about once
// in two million seeds.
void expect_binomial(std::uint64_t observed, std::uint64_t n, double p) {
    const double mean = static_cast<double>(n) * p;
    const double sd = std::sqrt(static_cast<double>(n) * p * (1.0 - p));
    EXPECT_NEAR(static_cast<double>(observed), mean, 5.0 * sd) << "n=" << n << " p=" << p;
}

TEST(Faults, DropRateMatchesTheConfiguredProbability) {
    for_each_seed([](std::uint64_t seed) {
        Simulator sim;
        Network net(sim, 2, 1);
        net.set_fault_plan(FaultPlan(seed).set_all(FaultRates{.drop = 0.2}));
        Recorder rec(net);
        send_stream(sim, net);
        sim.run_until_idle();
        const NetworkStats& s = net.stats();
        EXPECT_EQ(s.sent, kFrames);
        expect_binomial(s.dropped, kFrames, 0.2);
        EXPECT_EQ(s.delivered, kFrames - s.dropped);
        EXPECT_EQ(rec.got.size(), s.delivered);
        EXPECT_EQ(s.dropped_link_down, 0u);
        expect_conservation(net);
    });
}

TEST(Faults, DuplicatesAreIdenticalExtraCopies) {
    for_each_seed([](std::uint64_t seed) {
        Simulator sim;
        Network net(sim, 2, 1);
        net.set_fault_plan(FaultPlan(seed).set_all(FaultRates{.duplicate = 0.3}));
        Recorder rec(net);
        send_stream(sim, net);
        sim.run_until_idle();
        const NetworkStats& s = net.stats();
        expect_binomial(s.duplicated, kFrames, 0.3);
        EXPECT_EQ(s.delivered, kFrames + s.duplicated);
        std::map<std::uint32_t, int> copies;
        for (const auto& d : rec.got) {
            const std::uint32_t n = frame_number(d.bytes);
            ++copies[n];
            EXPECT_EQ(d.bytes, numbered_frame(0, 1, 0, n, 32).bytes);
        }
        EXPECT_EQ(copies.size(), kFrames);
        for (const auto& [n, c] : copies)
            EXPECT_TRUE(c == 1 || c == 2) << n;
        expect_conservation(net);
    });
}

TEST(Faults, CorruptionFlipsOneToKBitsAndKeepsTheLength) {
    for_each_seed([](std::uint64_t seed) {
        Simulator sim;
        Network net(sim, 2, 1);  // ordered: delivery order == send order
        net.set_fault_plan(
            FaultPlan(seed).set_all(FaultRates{.corrupt = 0.5, .max_corrupt_bits = 4}));
        Recorder rec(net);
        send_stream(sim, net);
        sim.run_until_idle();
        ASSERT_EQ(rec.got.size(), kFrames);
        std::uint64_t differing = 0;
        for (std::uint32_t i = 0; i < kFrames; ++i) {
            const auto expected = numbered_frame(0, 1, 0, i, 32).bytes;
            const auto& got = rec.got[i].bytes;
            ASSERT_EQ(got.size(), expected.size());
            int flipped = 0;
            for (std::size_t b = 0; b < got.size(); ++b) {
                flipped += std::popcount(static_cast<unsigned>(got[b] ^ expected[b]));
            }
            ASSERT_LE(flipped, 4);
            if (flipped > 0)
                ++differing;
        }
        EXPECT_EQ(differing, net.stats().corrupted);
        expect_binomial(net.stats().corrupted, kFrames, 0.5);
    });
}

TEST(Faults, EmptyFramesCannotBeCorrupted) {
    Simulator sim;
    Network net(sim, 2, 1);
    net.set_fault_plan(FaultPlan(1).set_all(FaultRates{.corrupt = 1.0}));
    Recorder rec(net);
    net.send(Frame{0, 1, 0, {}});
    sim.run_until_idle();
    ASSERT_EQ(rec.got.size(), 1u);
    EXPECT_TRUE(rec.got[0].bytes.empty());
    EXPECT_EQ(net.stats().corrupted, 0u);
}

TEST(Faults, ReorderLetsLaterFramesPassOnAnOrderedLink) {
    for_each_seed([](std::uint64_t seed) {
        Simulator sim;
        Network net(sim, 2, 1, LinkParams{.latency = 10, .bandwidth = 0.0});
        net.set_fault_plan(FaultPlan(seed).set_all(FaultRates{.reorder = 0.05}));
        Recorder rec(net);
        send_stream(sim, net);
        sim.run_until_idle();
        ASSERT_EQ(rec.got.size(), kFrames);
        std::vector<std::uint32_t> numbers;
        for (const auto& d : rec.got)
            numbers.push_back(frame_number(d.bytes));
        EXPECT_FALSE(std::is_sorted(numbers.begin(), numbers.end()));
        // Each held-back frame is passed by at least the next one sent.
        expect_binomial(net.stats().reordered, kFrames, 0.05);
        std::sort(numbers.begin(), numbers.end());
        EXPECT_EQ(std::adjacent_find(numbers.begin(), numbers.end()), numbers.end());
    });
}

TEST(Faults, DelayOnAnOrderedLinkHoldsUpLaterFramesInsteadOfReordering) {
    Simulator sim;
    Network net(sim, 2, 1, LinkParams{.latency = 10, .bandwidth = 0.0});
    net.set_fault_plan(FaultPlan(3).set_all(FaultRates{.delay = 0.1, .max_extra_delay = 300}));
    Recorder rec(net);
    send_stream(sim, net);
    sim.run_until_idle();
    ASSERT_EQ(rec.got.size(), kFrames);
    for (std::uint32_t i = 0; i < kFrames; ++i)
        ASSERT_EQ(frame_number(rec.got[i].bytes), i);
    expect_binomial(net.stats().delayed, kFrames, 0.1);
    EXPECT_EQ(net.stats().reordered, 0u);
    EXPECT_GT(rec.got.back().at, Micros{kFrames - 1} + 10);  // somebody waited
}

TEST(Faults, RulesCanBeLimitedToALinkOrADirection) {
    Simulator sim;
    Network net(sim, 2, 2);
    FaultPlan plan(11);
    plan.add_rule(FaultScope{.src = 0, .dst = 1, .link = 0}, FaultRates{.drop = 0.5})
        .add_rule(FaultScope{.link = 1}, FaultRates{.corrupt = 0.0});  // explicit: clean
    net.set_fault_plan(plan);
    Recorder rec(net);
    send_stream(sim, net, 0, 0, 1);
    send_stream(sim, net, 0, 1, 0);
    send_stream(sim, net, 1, 0, 1);
    sim.run_until_idle();
    expect_binomial(net.link_stats(0).dropped, kFrames, 0.5);
    EXPECT_EQ(net.link_stats(0).delivered, 2 * kFrames - net.link_stats(0).dropped);
    EXPECT_EQ(net.link_stats(1).dropped, 0u);
    std::uint64_t reverse = 0;
    for (const auto& d : rec.got)
        reverse += (d.src == 1 && d.link == 0) ? 1 : 0;
    EXPECT_EQ(reverse, kFrames);  // 1 -> 0 is untouched
    expect_conservation(net);
}

TEST(Faults, NonsenseRatesAreRefused) {
    FaultPlan plan(1);
    EXPECT_THROW(plan.set_all(FaultRates{.drop = 1.5}), std::invalid_argument);
    EXPECT_THROW(plan.set_all(FaultRates{.corrupt = -0.1}), std::invalid_argument);
    EXPECT_THROW(plan.set_all(FaultRates{.reorder = std::nan("")}), std::invalid_argument);
    EXPECT_THROW(plan.set_all(FaultRates{.max_corrupt_bits = 0}), std::invalid_argument);
    EXPECT_THROW(plan.add_outage(LinkOutage{{0}, 100, 100}), std::invalid_argument);
}

TEST(Faults, BitFlipHelperFlipsExactlyTheListedBits) {
    std::vector<std::uint8_t> bytes{0x00, 0xFF};
    apply_bit_flips(bytes, {0, 9, 15, 100});
    EXPECT_EQ(bytes, (std::vector<std::uint8_t>{0x01, 0x7D}));
}

}  // namespace
}  // namespace sim
