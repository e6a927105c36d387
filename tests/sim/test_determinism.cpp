// A run is a pure function of its seed.
#include <gtest/gtest.h>

#include "network.hpp"
#include "seeds.hpp"
#include "sim_test_util.hpp"

namespace sim {
namespace {

using testing::Delivery;
using testing::frame_number;
using testing::numbered_frame;

struct RunTrace {
    std::vector<TraceRecord> trace;
    std::vector<Delivery> deliveries;
    NetworkStats stats;
};

// Three ranks on two rails with every kind of fault, an outage, jitter, an
// unordered rail and receivers that answer: as much randomness as possible.
RunTrace run_busy_network(std::uint64_t seed) {
    Simulator sim;
    Network net(sim, 3, 2, LinkParams{.latency = 20, .bandwidth = 50.0, .jitter = 15});
    net.set_link_params(
        1,
        LinkParams{
            .latency = 35, .bandwidth = 0.0, .jitter = 40, .ordered = false, .max_in_flight = 8});
    net.set_fault_plan(
        FaultPlan(seed)
            .set_all(FaultRates{
                .drop = 0.1, .duplicate = 0.05, .reorder = 0.05, .corrupt = 0.05, .delay = 0.05})
            .add_outage(LinkOutage{{0, 0, 2}, 3000, 4500}));
    RunTrace out;
    net.set_tracer([&](const TraceRecord& r) { out.trace.push_back(r); });
    for (Rank r = 0; r < 3; ++r) {
        net.attach(
            r, Endpoint{[&, r](Rank src, LinkIndex link, std::span<const std::uint8_t> bytes) {
                            out.deliveries.push_back(
                                Delivery{sim.now(), src, r, link, {bytes.begin(), bytes.end()}});
                            const std::uint32_t n = frame_number(bytes);
                            if (n % 3 == 0)
                                net.send(numbered_frame(r, src, 1 - link, n + 1, 24));
                        },
                        nullptr, nullptr});
    }
    for (std::uint32_t i = 0; i < 600; ++i) {
        sim.schedule(i * 13, [&net, i] {
            const auto src = static_cast<Rank>(i % 3);
            const auto dst = static_cast<Rank>((i % 3 + 1 + (i / 3) % 2) % 3);  // never src
            net.send(numbered_frame(src, dst, static_cast<LinkIndex>(i % 2), i, 8 + i % 200));
        });
    }
    EXPECT_EQ(sim.run_until_idle().reason, StopReason::Idle);
    out.stats = net.stats();
    return out;
}

TEST(Determinism, SameSeedSameRunDifferentSeedDifferentRun) {
    for_each_seed([](std::uint64_t seed) {
        const RunTrace a = run_busy_network(seed);
        const RunTrace b = run_busy_network(seed);
        ASSERT_GT(a.deliveries.size(), 500u);
        EXPECT_EQ(a.trace, b.trace);
        EXPECT_EQ(a.deliveries, b.deliveries);
        EXPECT_EQ(a.stats.corrupted, b.stats.corrupted);
        EXPECT_GT(a.stats.dropped, 0u);
        EXPECT_GT(a.stats.dropped_link_down + a.stats.rejected, 0u);
        const RunTrace c = run_busy_network(seed + 1'000'003);
        EXPECT_NE(a.deliveries, c.deliveries);
    });
}

TEST(Determinism, FaultPlanDrawsAreAFunctionOfTheSeed) {
    FaultPlan p1(99);
    FaultPlan p2(99);
    const FaultRates rates{
        .drop = 0.3, .duplicate = 0.3, .reorder = 0.3, .corrupt = 0.3, .delay = 0.3};
    p1.set_all(rates);
    p2.set_all(rates);
    for (int i = 0; i < 1000; ++i) {
        const FrameFate a = p1.draw(0, 1, 0, 64);
        const FrameFate b = p2.draw(0, 1, 0, 64);
        ASSERT_EQ(a.drop, b.drop);
        ASSERT_EQ(a.duplicate, b.duplicate);
        ASSERT_EQ(a.duplicate_delay, b.duplicate_delay);
        ASSERT_EQ(a.reorder_delay, b.reorder_delay);
        ASSERT_EQ(a.extra_delay, b.extra_delay);
        ASSERT_EQ(a.flipped_bits, b.flipped_bits);
    }
}

// Pins the random stream itself: mt19937_64 is fully specified by the
// standard and Rng avoids implementation-defined distributions, so a seed
// recorded on one machine replays on any other.
TEST(Determinism, RngStreamIsPinned) {
    Rng rng(5489);
    for (int i = 1; i < 10'000; ++i)
        rng.next();
    EXPECT_EQ(rng.next(), 9981545732273789042ull);  // [rand.predef]: 10000th output
    Rng a(1);
    Rng b(1);
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(a.between(3, 9), b.between(3, 9));
    Rng c(2);
    for (int i = 0; i < 10'000; ++i) {
        const Micros v = c.between(3, 9);
        ASSERT_GE(v, 3);
        ASSERT_LE(v, 9);
        const double u = c.unit();
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
    }
    EXPECT_FALSE(c.chance(0.0));
    EXPECT_TRUE(c.chance(1.0));
}

}  // namespace
}  // namespace sim
