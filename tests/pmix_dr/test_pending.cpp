// pmix dr PendingTable: waiters per process share one upstream request,
// the table is bounded, and entries expire or are dropped.
#include <gtest/gtest.h>

#include <vector>

#include "pending.hpp"
#include "pmix_test_util.hpp"

namespace {

using namespace pmix_dr_test;
using Tokens = std::vector<std::uint64_t>;

TEST(PmixPending, FirstWaiterStartsTheRequestOthersShareIt) {
    PendingTable t(10);
    EXPECT_TRUE(t.add({5, 1}, 100, 50).value());
    EXPECT_FALSE(t.add({5, 1}, 101, 60).value());
    EXPECT_TRUE(t.add({5, 2}, 102, 50).value());
    EXPECT_EQ(t.waiters(), 3u);
    EXPECT_TRUE(t.contains({5, 1}));
    EXPECT_EQ(t.take({5, 1}), (Tokens{100, 101}));
    EXPECT_FALSE(t.contains({5, 1}));
    EXPECT_TRUE(t.take({5, 1}).empty());
    EXPECT_EQ(t.waiters(), 1u);
    EXPECT_TRUE(t.add({5, 1}, 103, 70).value());  // a new round
}

TEST(PmixPending, BoundedByWaiters) {
    PendingTable t(2);
    ASSERT_TRUE(t.add({5, 1}, 1, 9).has_value());
    ASSERT_TRUE(t.add({5, 2}, 2, 9).has_value());
    EXPECT_EQ(t.add({5, 1}, 3, 9).error().code, ErrorCode::NoResources);
    EXPECT_EQ(t.add({5, 3}, 4, 9).error().code, ErrorCode::NoResources);
    EXPECT_FALSE(t.contains({5, 3}));
    EXPECT_EQ(t.waiters(), 2u);
    t.take({5, 2});
    EXPECT_TRUE(t.add({5, 3}, 4, 9).has_value());
}

TEST(PmixPending, ExpireTakesEntriesAtOrBeforeNow) {
    PendingTable t(10);
    ASSERT_TRUE(t.add({5, 1}, 1, 100).has_value());
    ASSERT_TRUE(t.add({5, 1}, 2, 500).has_value());  // shares the first deadline
    ASSERT_TRUE(t.add({5, 2}, 3, 200).has_value());
    EXPECT_TRUE(t.expire(99).empty());
    auto out = t.expire(100);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].first, (ProcName{5, 1}));
    EXPECT_EQ(out[0].second, (Tokens{1, 2}));
    EXPECT_EQ(t.waiters(), 1u);
    out = t.expire(1000);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].second, (Tokens{3}));
    EXPECT_EQ(t.waiters(), 0u);
}

TEST(PmixPending, DropRemovesOneWaiter) {
    PendingTable t(10);
    ASSERT_TRUE(t.add({5, 1}, 1, 9).has_value());
    ASSERT_TRUE(t.add({5, 1}, 2, 9).has_value());
    ASSERT_TRUE(t.add({5, 2}, 3, 9).has_value());
    t.drop(1);
    EXPECT_EQ(t.waiters(), 2u);
    t.drop(3);  // the last waiter on {5,2}: the entry goes
    EXPECT_FALSE(t.contains({5, 2}));
    t.drop(77);
    EXPECT_EQ(t.waiters(), 1u);
    EXPECT_EQ(t.take({5, 1}), (Tokens{2}));
}

}  // namespace
