// Link outages: frames lost in the window, error hooks, recovery.
#include <gtest/gtest.h>

#include <map>

#include "network.hpp"
#include "sim_test_util.hpp"

namespace sim {
namespace {

using testing::expect_conservation;
using testing::frame_number;
using testing::Notice;
using testing::numbered_frame;
using testing::Recorder;

// Sends one frame every 10 us at 5, 15, ... (never on an outage boundary)
// and remembers what send() answered, by frame number == send time.
struct Sender {
    std::map<std::uint32_t, SendStatus> status;

    Sender(Simulator& sim, Network& net, LinkIndex link, Micros until) {
        for (Micros t = 5; t < until; t += 10) {
            sim.schedule(t, [this, &net, link, t] {
                const auto n = static_cast<std::uint32_t>(t);
                status[n] = net.send(numbered_frame(0, 1, link, n));
            });
        }
    }
};

TEST(LinkEvents, OutageDropsFramesReportsErrorsAndRecovers) {
    Simulator sim;
    Network net(sim, 2, 2, LinkParams{.latency = 50, .bandwidth = 0.0});
    net.set_fault_plan(FaultPlan(1).add_outage(LinkOutage{{0, 0, 1}, 1000, 2000}));
    Recorder rec(net);
    Sender on_link0(sim, net, 0, 3000);
    Sender on_link1(sim, net, 1, 3000);
    sim.run_until_idle();

    std::map<std::uint32_t, int> link0_got;
    std::uint64_t link1_got = 0;
    for (const auto& d : rec.got) {
        if (d.link == 0)
            ++link0_got[frame_number(d.bytes)];
        if (d.link == 1)
            ++link1_got;
    }
    for (const auto& [t, status] : on_link0.status) {
        if (t < 950) {  // arrived before the outage
            EXPECT_EQ(status, SendStatus::Ok) << t;
            EXPECT_EQ(link0_got[t], 1) << t;
        } else if (t < 1000) {  // in flight when the link died
            EXPECT_EQ(status, SendStatus::Ok) << t;
            EXPECT_EQ(link0_got[t], 0) << t;
        } else if (t < 2000) {  // refused while down
            EXPECT_EQ(status, SendStatus::LinkDown) << t;
            EXPECT_EQ(link0_got[t], 0) << t;
        } else {  // restored
            EXPECT_EQ(status, SendStatus::Ok) << t;
            EXPECT_EQ(link0_got[t], 1) << t;
        }
    }
    EXPECT_EQ(link1_got, 300u);  // the other rail never noticed
    EXPECT_EQ(rec.link_errors, (std::vector<Notice>{{1000, 0, 1, 0}, {1000, 1, 0, 0}}));
    EXPECT_EQ(net.link_stats(0).dropped_link_down, 5u);
    EXPECT_EQ(net.link_stats(0).rejected, 100u);
    EXPECT_EQ(net.link_stats(1).dropped, 0u);
    EXPECT_TRUE(net.is_link_up(0, 1, 0));
    expect_conservation(net);
}

TEST(LinkEvents, SilentOutageIsABlackHole) {
    Simulator sim;
    Network net(sim, 2, 1, LinkParams{.latency = 50, .bandwidth = 0.0});
    net.set_fault_plan(
        FaultPlan(1).report_link_errors(false).add_outage(LinkOutage{{0}, 1000, 2000}));
    Recorder rec(net);
    Sender sender(sim, net, 0, 3000);
    sim.run_until_idle();
    for (const auto& [t, status] : sender.status)
        EXPECT_EQ(status, SendStatus::Ok) << t;
    EXPECT_TRUE(rec.link_errors.empty());
    EXPECT_EQ(net.stats().dropped_link_down, 105u);  // 5 in flight + 100 sent into the void
    EXPECT_EQ(rec.got.size(), 300u - 105u);
    expect_conservation(net);
}

TEST(LinkEvents, WholeLinkIndexGoesDownForEveryPair) {
    Simulator sim;
    Network net(sim, 3, 2);
    Recorder rec(net);
    net.link_down(LinkSelector{.link = 0});
    sim.run_until_idle();
    EXPECT_EQ(rec.link_errors.size(), 6u);  // every rank hears about both peers
    for (Rank a = 0; a < 3; ++a) {
        for (Rank b = 0; b < 3; ++b) {
            if (a == b)
                continue;
            EXPECT_FALSE(net.is_link_up(a, b, 0));
            EXPECT_TRUE(net.is_link_up(a, b, 1));
            EXPECT_EQ(net.send(Frame{a, b, 0, {1}}), SendStatus::LinkDown);
            EXPECT_EQ(net.send(Frame{a, b, 1, {1}}), SendStatus::Ok);
        }
    }
    net.link_up(LinkSelector{.link = 0});
    EXPECT_EQ(net.send(Frame{0, 1, 0, {1}}), SendStatus::Ok);
    sim.run_until_idle();
    EXPECT_EQ(rec.got.size(), 7u);
}

TEST(LinkEvents, SelectorWithOneRankIsolatesThatRank) {
    Simulator sim;
    Network net(sim, 3, 1);
    net.link_down(LinkSelector{.link = 0, .a = 2});
    EXPECT_TRUE(net.is_link_up(0, 1, 0));
    EXPECT_TRUE(net.is_link_up(1, 0, 0));
    EXPECT_FALSE(net.is_link_up(0, 2, 0));
    EXPECT_FALSE(net.is_link_up(2, 1, 0));
}

TEST(LinkEvents, ABriefFlapStillLosesTheFramesInFlight) {
    Simulator sim;
    Network net(sim, 2, 1, LinkParams{.latency = 100, .bandwidth = 0.0});
    net.set_fault_plan(FaultPlan(1).report_link_errors(false).add_outage(LinkOutage{{0}, 10, 20}));
    Recorder rec(net);
    net.send(numbered_frame(0, 1, 0, 1));  // due at 100, long after the link came back
    sim.schedule(30, [&] { net.send(numbered_frame(0, 1, 0, 2)); });
    sim.run_until_idle();
    ASSERT_EQ(rec.got.size(), 1u);
    EXPECT_EQ(frame_number(rec.got[0].bytes), 2u);
    EXPECT_EQ(net.stats().dropped_link_down, 1u);
}

TEST(LinkEvents, OverlappingOutagesNest) {
    Simulator sim;
    Network net(sim, 2, 1);
    net.set_fault_plan(FaultPlan(1)
                           .add_outage(LinkOutage{{0}, 100, 300})
                           .add_outage(LinkOutage{{0, 0, 1}, 200, 400}));
    Recorder rec(net);
    sim.run_until(150);
    EXPECT_FALSE(net.is_link_up(0, 1, 0));
    sim.run_until(350);
    EXPECT_FALSE(net.is_link_up(0, 1, 0));  // the second outage still holds it
    sim.run_until(450);
    EXPECT_TRUE(net.is_link_up(0, 1, 0));
    EXPECT_EQ(rec.link_errors.size(), 2u);  // one per endpoint: it went down once
}

}  // namespace
}  // namespace sim
