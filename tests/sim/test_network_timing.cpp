// Delivery timing in virtual time, per-link parameters and ordering.
#include <gtest/gtest.h>

#include <algorithm>

#include "network.hpp"
#include "sim_test_util.hpp"

namespace sim {
namespace {

using testing::frame_number;
using testing::numbered_frame;
using testing::Recorder;

TEST(NetworkTiming, LatencyPlusSerializationAndQueueing) {
    Simulator sim;
    Network net(sim, 2, 1, LinkParams{.latency = 100, .bandwidth = 10.0});
    Recorder rec(net);
    ASSERT_EQ(net.send(numbered_frame(0, 1, 0, 1, 1000)), SendStatus::Ok);  // 100 us on the wire
    ASSERT_EQ(net.send(numbered_frame(0, 1, 0, 2, 500)), SendStatus::Ok);   // queued behind it
    ASSERT_EQ(net.send(numbered_frame(1, 0, 0, 3, 1000)),
              SendStatus::Ok);  // other direction: no queue
    sim.run_until(1000);
    ASSERT_EQ(net.send(numbered_frame(0, 1, 0, 4, 4)), SendStatus::Ok);  // ceil(0.4) = 1 us
    sim.run_until_idle();
    ASSERT_EQ(rec.got.size(), 4u);
    EXPECT_EQ(rec.got[0].at, 200);  // 0 + 100 + 100
    EXPECT_EQ(frame_number(rec.got[0].bytes), 1u);
    EXPECT_EQ(rec.got[1].at, 200);  // reverse direction, in parallel
    EXPECT_EQ(frame_number(rec.got[1].bytes), 3u);
    EXPECT_EQ(rec.got[2].at, 250);  // 100 (wait) + 50 + 100
    EXPECT_EQ(rec.got[3].at, 1101);
    EXPECT_EQ(net.stats().bytes_sent, 2504u);
    EXPECT_EQ(net.stats().bytes_delivered, 2504u);
}

TEST(NetworkTiming, PerLinkParameters) {
    Simulator sim;
    Network net(sim, 3, 2, LinkParams{.latency = 1000, .bandwidth = 1.0});
    net.set_link_params(1, LinkParams{.latency = 5, .bandwidth = 0.0});  // fast, unlimited rail
    Recorder rec(net);
    net.send(numbered_frame(2, 0, 0, 0, 100));
    net.send(numbered_frame(2, 0, 1, 1, 100));
    sim.run_until_idle();
    ASSERT_EQ(rec.got.size(), 2u);
    EXPECT_EQ(rec.got[0].link, 1);
    EXPECT_EQ(rec.got[0].at, 5);
    EXPECT_EQ(rec.got[1].link, 0);
    EXPECT_EQ(rec.got[1].at, 1100);
    EXPECT_EQ(rec.got[1].src, 2);
    EXPECT_EQ(rec.got[1].dst, 0);
    EXPECT_EQ(net.link_stats(0).delivered, 1u);
    EXPECT_EQ(net.link_stats(1).delivered, 1u);
}

// Sends n small frames, one per microsecond, on rank 0 -> 1, link 0.
void send_stream(Simulator& sim, Network& net, std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) {
        sim.schedule(i, [&net, i] { net.send(numbered_frame(0, 1, 0, i)); });
    }
}

TEST(NetworkTiming, OrderedLinkStaysInOrderDespiteJitter) {
    Simulator sim;
    Network net(sim, 2, 1, LinkParams{.latency = 20, .bandwidth = 0.0, .jitter = 50});
    net.set_fault_plan(FaultPlan(7));
    Recorder rec(net);
    send_stream(sim, net, 2000);
    sim.run_until_idle();
    ASSERT_EQ(rec.got.size(), 2000u);
    for (std::uint32_t i = 0; i < 2000; ++i) {
        ASSERT_EQ(frame_number(rec.got[i].bytes), i);
        ASSERT_GE(rec.got[i].at, Micros{i} + 20);
        if (i > 0) {
            ASSERT_GE(rec.got[i].at, rec.got[i - 1].at);
        }
    }
    EXPECT_EQ(net.stats().reordered, 0u);
}

TEST(NetworkTiming, UnorderedLinkWithJitterReorders) {
    Simulator sim;
    Network net(sim, 2, 1,
                LinkParams{.latency = 20, .bandwidth = 0.0, .jitter = 50, .ordered = false});
    net.set_fault_plan(FaultPlan(7));
    Recorder rec(net);
    send_stream(sim, net, 2000);
    sim.run_until_idle();
    ASSERT_EQ(rec.got.size(), 2000u);
    std::vector<std::uint32_t> numbers;
    for (const auto& d : rec.got) {
        const std::uint32_t n = frame_number(d.bytes);
        EXPECT_GE(d.at, Micros{n} + 20);
        EXPECT_LE(d.at, Micros{n} + 70);  // jitter is bounded
        numbers.push_back(n);
    }
    EXPECT_FALSE(std::is_sorted(numbers.begin(), numbers.end()));
    EXPECT_GT(net.stats().reordered, 100u);
    std::sort(numbers.begin(), numbers.end());
    for (std::uint32_t i = 0; i < 2000; ++i)
        ASSERT_EQ(numbers[i], i);  // nothing lost or doubled
}

TEST(NetworkTiming, InvalidSendsAreRejected) {
    Simulator sim;
    Network net(sim, 2, 2);
    EXPECT_EQ(net.send(Frame{0, 2, 0, {1}}), SendStatus::Invalid);
    EXPECT_EQ(net.send(Frame{-1, 1, 0, {1}}), SendStatus::Invalid);
    EXPECT_EQ(net.send(Frame{0, 1, 2, {1}}), SendStatus::Invalid);
    EXPECT_EQ(net.send(Frame{1, 1, 0, {1}}),
              SendStatus::Invalid);  // self traffic is not network traffic
    EXPECT_EQ(net.stats().rejected, 4u);
    EXPECT_EQ(net.stats().sent, 0u);
    EXPECT_THROW(Network(sim, 0, 1), std::invalid_argument);
}

}  // namespace
}  // namespace sim
