// The timer glue against a real opal event base: one event, armed at the
// earliest deadline, fires once, re-arms earlier but not later. (Glue, not a
// core: it waits a few real milliseconds.)
#include <gtest/gtest.h>

#include <vector>

#include "deadline_timer.hpp"
#include "opal_prelude.hpp"

using plugin::common::DeadlineTimer;
using plugin::common::kMillis;
using plugin::common::kNever;
using plugin::common::Micros;
using plugin::common::monotonic_now;

namespace {

class DeadlineTimerTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        int argc = 0;
        char** argv = nullptr;
        ASSERT_EQ(opal_init_util(&argc, &argv), OPAL_SUCCESS);
    }
    void SetUp() override {
        base_ = opal_event_base_create();
        ASSERT_NE(base_, nullptr);
    }
    void TearDown() override { opal_event_base_free(base_); }

    // Runs the loop until `done` or a generous real-time limit.
    template <typename Pred>
    void run_until(Pred done, Micros limit = 2000 * kMillis) {
        const Micros end = monotonic_now() + limit;
        while (!done() && monotonic_now() < end)
            opal_event_loop(base_, OPAL_EVLOOP_ONCE | OPAL_EVLOOP_NONBLOCK);
    }

    opal_event_base_t* base_ = nullptr;
};

TEST_F(DeadlineTimerTest, FiresOnceAtTheDeadline) {
    std::vector<Micros> fired;
    DeadlineTimer t;
    t.init([&](Micros now) { fired.push_back(now); }, base_);
    const Micros start = monotonic_now();
    t.arm(start + 5 * kMillis, start);
    EXPECT_EQ(t.armed_for(), start + 5 * kMillis);
    run_until([&] { return !fired.empty(); });
    ASSERT_EQ(fired.size(), 1u);
    EXPECT_GE(fired[0], start + 5 * kMillis);
    EXPECT_EQ(t.armed_for(), kNever);
    run_until([] { return false; }, 20 * kMillis);  // nothing more
    EXPECT_EQ(fired.size(), 1u);
    t.shutdown();
}

TEST_F(DeadlineTimerTest, EarlierDeadlineWinsLaterIsIgnored) {
    int fired = 0;
    DeadlineTimer t;
    t.init([&](Micros) { ++fired; }, base_);
    const Micros now = monotonic_now();
    t.arm(now + 500 * kMillis, now);
    t.arm(now + 2 * kMillis, now);    // earlier: re-armed
    t.arm(now + 900 * kMillis, now);  // later: the armed deadline stays
    EXPECT_EQ(t.armed_for(), now + 2 * kMillis);
    run_until([&] { return fired > 0; }, 300 * kMillis);
    EXPECT_EQ(fired, 1);  // long before the 500 ms deadline
    t.arm(kNever, now);
    EXPECT_EQ(t.armed_for(), kNever);
    t.shutdown();
}

TEST_F(DeadlineTimerTest, PollingPathFiresWhenDue) {
    int fired = 0;
    DeadlineTimer t;
    t.init([&](Micros) { ++fired; }, base_);
    t.arm(1000, 0);
    t.poll(999);
    EXPECT_EQ(fired, 0);
    t.poll(1000);
    EXPECT_EQ(fired, 1);
    t.poll(5000);
    EXPECT_EQ(fired, 1);
    t.shutdown();
}

}  // namespace
