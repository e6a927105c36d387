// TxWindow: the send side's record of one peer's frame sequence.
#include "tx_window.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using pml::dr::core::FrameState;
using pml::dr::core::TxWindow;
using TxFrame = TxWindow::TxFrame;

constexpr std::uint32_t kWindow = 64;

// Sends n frames; returns the seq of the first.
std::uint32_t send(TxWindow& w, std::uint32_t n) {
    const std::uint32_t first = w.next_seq();
    for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t seq = w.add(kWindow, TxFrame{.token = 100 + i});
        EXPECT_EQ(w.at(seq).seq, seq);
        w.at(seq).state = FrameState::InFlight;
    }
    return first;
}

// The peer acknowledged seq: the frame's slot is free again.
void ack(TxWindow& w, std::uint32_t seq) {
    w.at(seq).state = FrameState::Free;
    w.acked_one();
    w.released_one();
}

TEST(PmlDrTxWindow, TheRingComesWithTheFirstFrameAndGoesWhenIdle) {
    TxWindow w(1);
    EXPECT_FALSE(w.allocated());
    EXPECT_EQ(w.memory_bytes(), 0u);
    EXPECT_TRUE(w.has_room(kWindow)) << "an unallocated window holds nothing";
    EXPECT_EQ(w.cum_acked(), 0u);
    EXPECT_EQ(w.carried(), 0u);
    EXPECT_EQ(send(w, 3), 1u);
    EXPECT_TRUE(w.allocated());
    EXPECT_EQ(w.memory_bytes(), kWindow * sizeof(TxFrame));
    EXPECT_EQ(w.next_seq(), 4u);
    EXPECT_EQ(w.unacked(), 3u);
    EXPECT_EQ(w.unreleased(), 3u);
    EXPECT_EQ(w.at(2).token, 101u);
    for (std::uint32_t s = 1; s <= 3; ++s)
        ack(w, s);
    w.advance_una();
    EXPECT_EQ(w.una(), 4u);
    EXPECT_EQ(w.span(), 0u);
    w.free_slots();
    EXPECT_FALSE(w.allocated());
    EXPECT_EQ(send(w, 1), 4u) << "the seqs go on after the ring was given back";
}

TEST(PmlDrTxWindow, UnaStopsAtTheOldestFrameStillHoldingItsSlot) {
    TxWindow w(1);
    send(w, 5);
    ack(w, 1);
    ack(w, 3);  // a selective ack past a hole
    w.advance_una();
    EXPECT_EQ(w.una(), 2u);
    EXPECT_EQ(w.cum_acked(), 1u) << "kept at una - 1";
    EXPECT_EQ(w.carried(), 1u);
    ack(w, 2);
    w.advance_una();
    EXPECT_EQ(w.una(), 4u);
    EXPECT_EQ(w.unacked(), 2u);
    EXPECT_EQ(w.unreleased(), 2u);
}

TEST(PmlDrTxWindow, RoomEndsAtTheWindow) {
    TxWindow w(1);
    send(w, kWindow - 1);
    EXPECT_TRUE(w.has_room(kWindow));
    send(w, 1);
    EXPECT_FALSE(w.has_room(kWindow));
    ack(w, 1);
    EXPECT_FALSE(w.has_room(kWindow)) << "until una moves";
    w.advance_una();
    EXPECT_TRUE(w.has_room(kWindow));
}

TEST(PmlDrTxWindow, AcksRaiseCarriedAndCarriedNeverLags) {
    TxWindow w(1);
    send(w, 10);
    w.carry(4);
    EXPECT_EQ(w.carried(), 4u);
    EXPECT_EQ(w.cum_acked(), 0u) << "carried acks are applied in batches";
    w.ack_to(2);
    EXPECT_EQ(w.cum_acked(), 2u);
    EXPECT_EQ(w.carried(), 4u);
    w.ack_to(7);
    EXPECT_EQ(w.carried(), 7u);
}

TEST(PmlDrTxWindow, SeqsWrapPastZero) {
    TxWindow w(~std::uint32_t{0} - 1);
    EXPECT_EQ(send(w, 3), ~std::uint32_t{0} - 1);
    EXPECT_EQ(w.next_seq(), 2u) << "0 is never sent";
    EXPECT_EQ(w.at(1).seq, 1u);
    for (const std::uint32_t s : {~std::uint32_t{0} - 1, ~std::uint32_t{0}, 1u})
        ack(w, s);
    w.advance_una();
    EXPECT_EQ(w.una(), 2u);
    EXPECT_EQ(w.cum_acked(), 1u);
}

TEST(PmlDrTxWindow, ADeadPeerLeavesNothingOutAndRestartStartsOver) {
    TxWindow w(1);
    send(w, 4);
    w.forget_all();
    EXPECT_EQ(w.una(), w.next_seq());
    EXPECT_EQ(w.unacked(), 0u);
    EXPECT_EQ(w.unreleased(), 0u);
    w.restart(500);
    EXPECT_EQ(w.next_seq(), 500u);
    EXPECT_EQ(w.una(), 500u);
    EXPECT_EQ(w.cum_acked(), 499u);
    EXPECT_EQ(w.carried(), 499u);
}

}  // namespace
