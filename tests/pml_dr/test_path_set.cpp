// PathSet: the paths to one peer, and which of them new traffic may take.
#include "path_set.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using pml::dr::core::kAnyPath;
using pml::dr::core::PathSet;
using pml::dr::core::PathState;
using pml::dr::core::channel_detail::kNoSlot;
using pml::dr::core::channel_detail::slot_bit;

// Paths 10, 20, 30 in slots 0, 1, 2.
PathSet three(PathState a, PathState b, PathState c) {
    PathSet set;
    std::uint64_t id = 10;
    for (const PathState s : {a, b, c}) {
        PathSet::PathSlot pa;
        pa.id = id;
        pa.state = s;
        set.add(pa);
        id += 10;
    }
    return set;
}

TEST(PmlDrPathSet, SlotsAreFoundByPathAndNeverMove) {
    PathSet set = three(PathState::Alive, PathState::Alive, PathState::Alive);
    EXPECT_EQ(set.size(), 3u);
    EXPECT_EQ(set.find(20), 1u);
    EXPECT_EQ(set.find(30), 2u);
    EXPECT_EQ(set.find(99), kNoSlot);
    EXPECT_GE(set.memory_bytes(), 3 * sizeof(PathSet::PathSlot));
}

TEST(PmlDrPathSet, SuspectIsPreferredOnlyWhenNothingIsAlive) {
    PathSet set = three(PathState::Alive, PathState::Suspect, PathState::Standby);
    EXPECT_TRUE(set.preferred(0));
    EXPECT_FALSE(set.preferred(1));
    EXPECT_FALSE(set.preferred(2)) << "a standby path waits to be promoted";
    set[0].state = PathState::Failed;
    EXPECT_FALSE(set.any_alive());
    EXPECT_FALSE(set.preferred(0));
    EXPECT_TRUE(set.preferred(1));
}

TEST(PmlDrPathSet, ChooseTakesTheHintElseRoundRobinAliveFirst) {
    PathSet set = three(PathState::Alive, PathState::Suspect, PathState::Alive);
    EXPECT_EQ(set.choose(30, 0), 2u) << "a preferred hint wins";
    EXPECT_EQ(set.choose(20, 0), 0u) << "a Suspect hint is passed over while a path is Alive";
    EXPECT_EQ(set.choose(kAnyPath, 1), 2u) << "round robin from slot 1, Alive first";
    EXPECT_EQ(set.choose(kAnyPath, 5), 2u) << "the start wraps";
    EXPECT_EQ(set.choose(kAnyPath, 0, slot_bit(0) | slot_bit(2)), 1u)
        << "Suspect when the Alive ones are to be avoided";
    EXPECT_EQ(set.choose(kAnyPath, 0, slot_bit(0) | slot_bit(1) | slot_bit(2)), kNoSlot);
    set[0].state = PathState::Failed;
    set[2].state = PathState::Standby;
    EXPECT_EQ(set.choose(kAnyPath, 0), 1u);
    EXPECT_EQ(PathSet{}.choose(kAnyPath, 0), kNoSlot);
}

TEST(PmlDrPathSet, HeardSinceLooksAtTheOtherLivePaths) {
    PathSet set = three(PathState::Alive, PathState::Failed, PathState::Suspect);
    set[0].last_heard = 100;
    set[1].last_heard = 500;  // Failed: says nothing
    set[2].last_heard = 200;
    EXPECT_TRUE(set.heard_since(0, 150)) << "slot 2 at 200";
    EXPECT_FALSE(set.heard_since(2, 150)) << "its own answers do not count";
    EXPECT_FALSE(set.heard_since(0, 200)) << "strictly after";
}

}  // namespace
