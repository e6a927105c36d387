// The kept copy's life (core/frame_copy.hpp): every allowed and refused
// transition, and when a copy may be freed.
#include <gtest/gtest.h>

#include <array>

#include "frame_copy.hpp"

namespace {

using pml::dr::core::CopyLife;
using pml::dr::core::CopyState;
using pml::dr::core::to_string;
using pml::dr::core::transition_allowed;

constexpr std::array kAll = {CopyState::Built, CopyState::InChannel, CopyState::Handed,
                             CopyState::Acked, CopyState::Abandoned};

TEST(FrameCopy, TransitionTable) {
    const auto ok = [](CopyState from, CopyState to) {
        using S = CopyState;
        return (from == S::Built && to == S::InChannel) ||
               (from == S::InChannel &&
                (to == S::Handed || to == S::Acked || to == S::Abandoned)) ||
               (from == S::Handed && (to == S::Acked || to == S::Abandoned));
    };
    for (CopyState from : kAll)
        for (CopyState to : kAll)
            EXPECT_EQ(transition_allowed(from, to), ok(from, to))
                << to_string(from) << " -> " << to_string(to);
}

TEST(FrameCopy, NamesAreDistinct) {
    for (CopyState a : kAll) {
        EXPECT_NE(to_string(a), "?");
        for (CopyState b : kAll) {
            if (a != b) {
                EXPECT_NE(to_string(a), to_string(b));
            }
        }
    }
}

TEST(FrameCopy, ARefusedTransitionChangesNothing) {
    CopyLife life;
    EXPECT_FALSE(life.to(CopyState::Acked));  // never given to the channel
    EXPECT_EQ(life.state(), CopyState::Built);
    ASSERT_TRUE(life.to(CopyState::InChannel));
    ASSERT_TRUE(life.to(CopyState::Acked));
    EXPECT_FALSE(life.to(CopyState::Abandoned));  // released twice
    EXPECT_EQ(life.state(), CopyState::Acked);
}

TEST(FrameCopy, FreedOnlyWhenReleasedAndHeldByNothing) {
    CopyLife life;
    ASSERT_TRUE(life.to(CopyState::InChannel));
    EXPECT_FALSE(life.past_handover());
    life.hold();  // a BTL descriptor
    life.taken_by_btl();
    EXPECT_EQ(life.state(), CopyState::Handed);
    EXPECT_TRUE(life.past_handover());
    life.taken_by_btl();  // a second transmission: no change
    EXPECT_EQ(life.state(), CopyState::Handed);
    ASSERT_TRUE(life.to(CopyState::Acked));
    EXPECT_TRUE(life.released());
    EXPECT_FALSE(life.done());  // the descriptor still refers to it
    life.let_go();
    EXPECT_TRUE(life.done());
}

TEST(FrameCopy, AckedBeforeAnyBtlCompletionStaysAcked) {
    // self delivers inside the send: the ACK comes back before the BTL
    // reports the transmission taken.
    CopyLife life;
    ASSERT_TRUE(life.to(CopyState::InChannel));
    ASSERT_TRUE(life.to(CopyState::Acked));
    life.taken_by_btl();
    EXPECT_EQ(life.state(), CopyState::Acked);
    EXPECT_TRUE(life.past_handover());
    EXPECT_TRUE(life.done());
}

TEST(FrameCopy, AbandonedWithoutHandoverCountsAsPastIt) {
    CopyLife life;
    ASSERT_TRUE(life.to(CopyState::InChannel));
    ASSERT_TRUE(life.to(CopyState::Abandoned));
    EXPECT_TRUE(life.released());
    EXPECT_TRUE(life.past_handover());
}

}  // namespace
