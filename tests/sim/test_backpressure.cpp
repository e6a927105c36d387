// Back-pressure: Busy when a direction is full, on_writable when it drains.
#include <gtest/gtest.h>

#include "network.hpp"
#include "sim_test_util.hpp"

namespace sim {
namespace {

using testing::frame_number;
using testing::Notice;
using testing::numbered_frame;
using testing::Recorder;

TEST(Backpressure, BusyWhenFullThenWritableOnceWhenASlotFrees) {
    Simulator sim;
    Network net(sim, 3, 2, LinkParams{.latency = 100, .bandwidth = 0.0, .max_in_flight = 2});
    Recorder rec(net);
    EXPECT_EQ(net.send(numbered_frame(0, 1, 0, 1)), SendStatus::Ok);
    EXPECT_EQ(net.send(numbered_frame(0, 1, 0, 2)), SendStatus::Ok);
    EXPECT_EQ(net.send(numbered_frame(0, 1, 0, 3)), SendStatus::Busy);
    EXPECT_EQ(net.send(numbered_frame(0, 1, 0, 3)), SendStatus::Busy);
    EXPECT_EQ(net.in_flight(0, 1, 0), 2u);
    // Limits are per direction and link.
    EXPECT_EQ(net.send(numbered_frame(0, 2, 0, 4)), SendStatus::Ok);
    EXPECT_EQ(net.send(numbered_frame(0, 1, 1, 5)), SendStatus::Ok);
    EXPECT_EQ(net.send(numbered_frame(1, 0, 0, 6)), SendStatus::Ok);
    sim.run_until_idle();
    EXPECT_EQ(rec.writable, (std::vector<Notice>{{100, 0, 1, 0}}));
    EXPECT_EQ(net.stats().busy, 2u);
    EXPECT_EQ(rec.got.size(), 5u);
    EXPECT_EQ(net.in_flight(0, 1, 0), 0u);
}

TEST(Backpressure, NoWritableNoticeWithoutARefusal) {
    Simulator sim;
    Network net(sim, 2, 1, LinkParams{.max_in_flight = 1});
    Recorder rec(net);
    net.send(numbered_frame(0, 1, 0, 1));
    sim.run_until_idle();
    EXPECT_TRUE(rec.writable.empty());
}

// Pushes `total` frames as fast as the window allows, resuming on
// on_writable the way a BTL resumes its pending-send list.
struct Pump {
    Network& net;
    std::uint32_t total;
    std::uint32_t next = 0;
    std::size_t max_seen_in_flight = 0;
    int busy_episodes = 0;
    int writable_calls = 0;

    void push() {
        while (next < total) {
            const SendStatus st = net.send(numbered_frame(0, 1, 0, next, 1000));
            if (st == SendStatus::Busy) {
                ++busy_episodes;
                return;
            }
            ASSERT_EQ(st, SendStatus::Ok);
            ++next;
            max_seen_in_flight = std::max(max_seen_in_flight, net.in_flight(0, 1, 0));
        }
    }
};

TEST(Backpressure, APumpDrivenByWritableDeliversEverythingInOrder) {
    Simulator sim;
    Network net(sim, 2, 1, LinkParams{.latency = 30, .bandwidth = 100.0, .max_in_flight = 4});
    net.set_fault_plan(FaultPlan(5).set_all(FaultRates{.duplicate = 0.2}));
    Pump pump{net, 500};
    std::vector<std::uint32_t> got;
    net.attach(0, Endpoint{nullptr,
                           [&](Rank dst, LinkIndex link) {
                               EXPECT_EQ(dst, 1);
                               EXPECT_EQ(link, 0);
                               ++pump.writable_calls;
                               pump.push();
                           },
                           nullptr});
    net.attach(1, Endpoint{[&](Rank, LinkIndex, std::span<const std::uint8_t> bytes) {
                               got.push_back(frame_number(bytes));
                           },
                           nullptr, nullptr});
    pump.push();
    const RunResult r = sim.run_until_idle();
    EXPECT_EQ(r.reason, StopReason::Idle);
    EXPECT_EQ(pump.next, 500u);
    EXPECT_EQ(pump.max_seen_in_flight, 4u);  // duplicates hold no slot
    EXPECT_GT(pump.busy_episodes, 0);
    EXPECT_EQ(pump.writable_calls, pump.busy_episodes);
    // Duplicates aside, frames arrive in order: the link is ordered.
    std::vector<std::uint32_t> firsts;
    for (std::uint32_t n : got) {
        if (firsts.empty() || n > firsts.back())
            firsts.push_back(n);
    }
    ASSERT_EQ(firsts.size(), 500u);
    EXPECT_EQ(got.size(), 500u + net.stats().duplicated);
    // 1000-byte frames at 100 B/us: the wire, not the window, sets the pace.
    EXPECT_GE(sim.now(), 500 * 10 + 30);
}

}  // namespace
}  // namespace sim
