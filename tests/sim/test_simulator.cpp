// VirtualClock and Simulator: ordering, run limits, deadline sources.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "simulator.hpp"

namespace sim {
namespace {

TEST(VirtualClock, AdvancesAndRefusesToGoBackwards) {
    VirtualClock clock(5);
    EXPECT_EQ(clock.now(), 5);
    clock.advance_to(5);
    clock.advance_to(42);
    EXPECT_EQ(clock.now(), 42);
    EXPECT_THROW(clock.advance_to(41), std::logic_error);
    EXPECT_EQ(clock.now(), 42);
}

TEST(Simulator, RunsEventsInTimeOrderAndFifoOnTies) {
    Simulator sim;
    std::vector<int> order;
    sim.schedule(30, [&] { order.push_back(3); });
    sim.schedule(10, [&] { order.push_back(1); });
    for (int i = 0; i < 5; ++i)
        sim.schedule(20, [&order, i] { order.push_back(100 + i); });
    const RunResult r = sim.run_until_idle();
    EXPECT_EQ(r.reason, StopReason::Idle);
    EXPECT_EQ(r.steps, 7u);
    EXPECT_EQ(sim.now(), 30);
    EXPECT_EQ(order, (std::vector<int>{1, 100, 101, 102, 103, 104, 3}));
}

TEST(Simulator, RunUntilStopsAtTheHorizonAndSetsTheClock) {
    Simulator sim;
    std::vector<Micros> seen;
    for (Micros t : {5, 10, 15})
        sim.schedule(t, [&] { seen.push_back(sim.now()); });
    RunResult r = sim.run_until(10);
    EXPECT_EQ(r.reason, StopReason::TimeReached);
    EXPECT_EQ(seen, (std::vector<Micros>{5, 10}));  // inclusive horizon
    EXPECT_EQ(sim.now(), 10);
    r = sim.run_until(100);
    EXPECT_EQ(seen.size(), 3u);
    EXPECT_EQ(sim.now(), 100);  // clock reaches t even after work ran out
    EXPECT_EQ(r.reason, StopReason::TimeReached);
}

TEST(Simulator, PastTimesRunNowAndChainedEventsAtSameTimeRun) {
    Simulator sim(50);
    std::vector<Micros> seen;
    sim.schedule(10, [&] {
        seen.push_back(sim.now());
        sim.schedule_after(0, [&] { seen.push_back(sim.now()); });
    });
    sim.run_until(50);
    EXPECT_EQ(seen, (std::vector<Micros>{50, 50}));
    EXPECT_THROW(sim.schedule(kNever, [] {}), std::invalid_argument);
}

TEST(Simulator, StepCapStopsALivelock) {
    Simulator sim;
    std::function<void()> again = [&] { sim.schedule_after(0, again); };
    sim.schedule(0, again);
    const RunResult r = sim.run_until_idle(kNever, 1000);
    EXPECT_EQ(r.reason, StopReason::StepLimit);
    EXPECT_EQ(r.steps, 1000u);
    EXPECT_EQ(sim.now(), 0);
}

TEST(Simulator, TimeCapStopsAnEndlessTimer) {
    Simulator sim;
    int ticks = 0;
    std::function<void()> tick = [&] {
        ++ticks;
        sim.schedule_after(10, tick);
    };
    sim.schedule(0, tick);
    const RunResult r = sim.run_until_idle(95);
    EXPECT_EQ(r.reason, StopReason::TimeReached);
    EXPECT_EQ(ticks, 10);  // 0, 10, ..., 90
    EXPECT_EQ(sim.now(), 95);
}

TEST(Simulator, RunWhileStopsWhenThePredicateTurnsFalse) {
    Simulator sim;
    int count = 0;
    for (int i = 1; i <= 10; ++i)
        sim.schedule(i * 10, [&] { ++count; });
    RunResult r = sim.run_while([&] { return count < 4; }, kNever);
    EXPECT_EQ(r.reason, StopReason::PredicateFalse);
    EXPECT_EQ(count, 4);
    EXPECT_EQ(sim.now(), 40);
    r = sim.run_while([] { return true; }, 75);
    EXPECT_EQ(r.reason, StopReason::TimeReached);
    EXPECT_EQ(count, 7);
    EXPECT_EQ(sim.now(), 75);
    r = sim.run_while([] { return true; }, kNever);
    EXPECT_EQ(r.reason, StopReason::Idle);  // nothing left that could change the answer
    EXPECT_EQ(count, 10);
}

TEST(Simulator, NestedRunIsRefused) {
    Simulator sim;
    bool threw = false;
    sim.schedule(1, [&] {
        try {
            sim.run_until(5);
        } catch (const std::logic_error&) {
            threw = true;
        }
    });
    sim.run_until_idle();
    EXPECT_TRUE(threw);
}

// A minimal engine: fires at a list of deadlines, recording the times.
struct ListTimer {
    explicit ListTimer(std::vector<Micros> d) : deadlines(std::move(d)) {}
    std::vector<Micros> deadlines;  // ascending
    std::size_t next = 0;
    std::vector<Micros> fired;
    Micros next_deadline() const { return next < deadlines.size() ? deadlines[next] : kNever; }
    void on_timer(Micros now) {
        fired.push_back(now);
        ++next;
    }
};

TEST(DeadlineSource, FiresAtTheReportedTimes) {
    Simulator sim;
    ListTimer timer({100, 250, 1000});
    sim.add_engine(timer);
    const RunResult r = sim.run_until_idle();
    EXPECT_EQ(r.reason, StopReason::Idle);
    EXPECT_EQ(timer.fired, (std::vector<Micros>{100, 250, 1000}));
    EXPECT_EQ(sim.now(), 1000);
}

TEST(DeadlineSource, IsRequeriedAfterEveryEvent) {
    Simulator sim;
    ListTimer timer({500});
    sim.add_engine(timer);
    // An input at 50 makes the engine want a timer at 60, earlier than before.
    sim.schedule(50, [&] { timer.deadlines = {60, 500}; });
    sim.run_until(1000);
    EXPECT_EQ(timer.fired, (std::vector<Micros>{60, 500}));
}

TEST(DeadlineSource, EventsWinTiesThenRegistrationOrder) {
    Simulator sim;
    std::vector<char> order;
    Micros a_deadline = 10;
    Micros b_deadline = 10;
    sim.add_deadline_source([&] { return b_deadline; },
                            [&](Micros) {
                                order.push_back('b');
                                b_deadline = kNever;
                            });
    sim.add_deadline_source([&] { return a_deadline; },
                            [&](Micros) {
                                order.push_back('a');
                                a_deadline = kNever;
                            });
    sim.schedule(10, [&] { order.push_back('e'); });
    sim.run_until_idle();
    EXPECT_EQ(order, (std::vector<char>{'e', 'b', 'a'}));
}

TEST(DeadlineSource, PastDeadlineFiresNowAndStuckSourceHitsTheCap) {
    Simulator sim(1000);
    std::vector<Micros> fired;
    sim.add_deadline_source([] { return Micros{3}; }, [&](Micros now) { fired.push_back(now); });
    const RunResult r = sim.run_until_idle(kNever, 50);
    EXPECT_EQ(r.reason, StopReason::StepLimit);
    ASSERT_EQ(fired.size(), 50u);
    EXPECT_EQ(fired.front(), 1000);
}

TEST(DeadlineSource, RemovalStopsFiringEvenFromItsOwnCallback) {
    Simulator sim;
    int fired = 0;
    Micros deadline = 10;
    SourceId id = 0;
    id = sim.add_deadline_source([&] { return deadline; },
                                 [&](Micros now) {
                                     ++fired;
                                     deadline = now + 10;
                                     if (fired == 3)
                                         sim.remove_deadline_source(id);
                                 });
    const RunResult r = sim.run_until_idle(10'000);
    EXPECT_EQ(r.reason, StopReason::Idle);
    EXPECT_EQ(fired, 3);
    EXPECT_EQ(sim.now(), 30);
}

}  // namespace
}  // namespace sim
