// pmix dr FenceTable: local arrivals gather per participant list until every
// local member is in; strangers and second arrivals are refused; a lost
// member fails only the gathering fences that wait for it.
#include <gtest/gtest.h>

#include <vector>

#include "fence.hpp"
#include "pmix_test_util.hpp"

namespace {

using namespace pmix_dr_test;

const std::vector<ProcName> kJob{{5, kRankWildcard}};
const std::vector<ProcName> kLocal{{5, 0}, {5, 2}};

TEST(PmixFence, CompletesWhenEveryLocalMemberArrived) {
    FenceTable t;
    auto a = t.arrive(kJob, kLocal, {{5, 2}, 20}, true);
    ASSERT_TRUE(a.has_value());
    Fence* f = *a;
    EXPECT_FALSE(f->complete());
    EXPECT_EQ(f->procs, kJob);
    auto b = t.arrive(kJob, kLocal, {{5, 0}, 10}, false);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(*b, f);  // the same tracker
    EXPECT_TRUE(f->complete());
    EXPECT_TRUE(f->collect);  // anyone asking to collect makes it collect
    ASSERT_EQ(f->arrived.size(), 2u);
    EXPECT_EQ(f->arrived[0].token, 20u);
    EXPECT_EQ(f->arrived[1].token, 10u);
    EXPECT_EQ(t.find(f->id), f);
    const auto id = f->id;
    auto done = t.finish(id);
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->arrived.size(), 2u);
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.find(id), nullptr);
    EXPECT_FALSE(t.finish(id).has_value());
}

TEST(PmixFence, StrangersAndSecondArrivalsAreRefused) {
    FenceTable t;
    EXPECT_EQ(t.arrive(kJob, kLocal, {{5, 1}, 1}, false).error().code, ErrorCode::InvalidArgument);
    EXPECT_EQ(t.size(), 0u);  // a refused arrival creates nothing
    ASSERT_TRUE(t.arrive(kJob, kLocal, {{5, 0}, 1}, false).has_value());
    EXPECT_EQ(t.arrive(kJob, kLocal, {{5, 0}, 2}, false).error().code, ErrorCode::Duplicate);
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(t.find(1)->arrived.size(), 1u);
}

TEST(PmixFence, DifferentParticipantListsAreDifferentFences) {
    FenceTable t;
    const std::vector<ProcName> pair{{5, 0}, {6, 0}};
    Fence* job = t.arrive(kJob, kLocal, {{5, 0}, 1}, false).value();
    Fence* other = t.arrive(pair, {{5, 0}}, {{5, 0}, 2}, true).value();
    EXPECT_NE(job, other);
    EXPECT_TRUE(other->complete());
    EXPECT_FALSE(job->complete());
    EXPECT_EQ(t.size(), 2u);
}

TEST(PmixFence, NextFenceAfterHandoverGetsANewTracker) {
    FenceTable t;
    Fence* first = t.arrive(kJob, kLocal, {{5, 0}, 1}, false).value();
    ASSERT_TRUE(t.arrive(kJob, kLocal, {{5, 2}, 2}, false).has_value());
    first->in_host = true;
    // A fast process enters the next fence over the same procs before the
    // launcher has released the first one.
    auto next = t.arrive(kJob, kLocal, {{5, 0}, 3}, false);
    ASSERT_TRUE(next.has_value());
    EXPECT_NE(*next, first);
    EXPECT_NE((*next)->id, first->id);
    EXPECT_EQ((*next)->arrived.size(), 1u);
    EXPECT_EQ(t.size(), 2u);
    EXPECT_EQ(t.find(first->id)->arrived.size(), 2u);
}

TEST(PmixFence, LostMemberFailsOnlyGatheringFencesExpectingIt) {
    FenceTable t;
    const std::vector<ProcName> other_job{{6, kRankWildcard}};
    Fence* waiting = t.arrive(kJob, kLocal, {{5, 0}, 1}, false).value();
    Fence* handed = t.arrive({{5, 0}, {5, 2}, {7, 0}}, kLocal, {{5, 0}, 2}, false).value();
    handed->in_host = true;
    t.arrive(other_job, {{6, 0}, {6, 1}}, {{6, 0}, 3}, false).value();
    const auto waiting_id = waiting->id;

    auto lost = t.member_lost({5, 2});
    ASSERT_EQ(lost.size(), 1u);
    EXPECT_EQ(lost[0].id, waiting_id);
    ASSERT_EQ(lost[0].arrived.size(), 1u);
    EXPECT_EQ(lost[0].arrived[0].token, 1u);  // the glue fails this waiter
    EXPECT_EQ(t.size(), 2u);
    EXPECT_EQ(t.find(waiting_id), nullptr);
    EXPECT_TRUE(t.member_lost({5, 9}).empty());
    EXPECT_TRUE(t.member_lost({5, 2}).empty());  // the handed-over one stays
}

}  // namespace
