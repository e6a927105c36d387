// The sender's side of one peer's frame sequence (the reliability channel's
// send window; issue 26: the channel split into what it is, as RxTracker is
// its receive side): the frames from una() to next_seq() - 1 hold slots in a
// ring of `window` TxFrames (a power of two, the channel's, passed in rather
// than kept per peer), allocated with the first frame and freed when the
// peer goes idle. Seqs are wrap-safe 32-bit serial numbers; 0 is never sent.
//
// What the window knows: which seqs are out, how far the peer acknowledged
// them (cumulatively, by ACK frame or by the ack_seq its own frames carry),
// and how many are unacknowledged or still hold a slot. Timers, paths and
// what a frame's state means are the channel's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "channel.hpp"
#include "seq.hpp"

namespace pml::dr::core {

// Named (not anonymous) so that ReliableChannel::Peer, which has external
// linkage, may hold these types; the namespace keeps them out of the way.
namespace channel_detail {

inline constexpr std::uint8_t kNoSlot = 0xFF;

// The seq after s. 0 means "none" on the wire and is skipped.
constexpr std::uint32_t seq_after(std::uint32_t s) noexcept {
    const auto n = static_cast<std::uint32_t>(s + 1u);
    return n == 0 ? 1u : n;
}

struct TxFrame {
    FrameToken token = 0;
    Micros last_tx = 0;          // time of the latest transmission
    std::uint64_t tx_order = 0;  // per-peer transmission counter at that time
    std::uint32_t seq = 0;
    std::uint32_t pending = 0;  // path slots that owe a local completion
    std::uint32_t bytes = 0;    // for counters only
    FrameState state = FrameState::Free;
    std::uint8_t path = kNoSlot;  // slot whose PTO timer covers the frame
    std::uint8_t tx_count = 0;    // transmissions, saturating (1: an RTT sample may come of it)
    // Transmitted on more than one path: its acknowledgement says nothing
    // about which one delivered it, so it credits none.
    bool mixed = false;
};

}  // namespace channel_detail

class TxWindow {
  public:
    using TxFrame = channel_detail::TxFrame;

    // Nothing sent yet; `first` is the first seq to assign, and everything
    // before it counts as acknowledged.
    explicit TxWindow(std::uint32_t first = 1) noexcept { restart(first); }

    [[nodiscard]] std::uint32_t next_seq() const noexcept { return next_seq_; }
    // The oldest seq holding a slot (== next_seq(): none).
    [[nodiscard]] std::uint32_t una() const noexcept { return una_; }
    // The highest cumulative ack applied.
    [[nodiscard]] std::uint32_t cum_acked() const noexcept { return cum_acked_; }
    // The highest ack_seq the peer's frames carried (>= cum_acked()), applied
    // in batches (the channel's settle()).
    [[nodiscard]] std::uint32_t carried() const noexcept { return carried_; }
    // InFlight frames, and InFlight + Acked ones (those holding a slot).
    [[nodiscard]] std::uint32_t unacked() const noexcept { return unacked_; }
    [[nodiscard]] std::uint32_t unreleased() const noexcept { return unreleased_; }
    // Seqs from una() to next_seq() - 1.
    [[nodiscard]] std::uint32_t span() const noexcept { return next_seq_ - una_; }
    [[nodiscard]] bool allocated() const noexcept { return ring_ != nullptr; }
    // The ring's heap bytes.
    [[nodiscard]] std::size_t memory_bytes() const noexcept {
        return allocated() ? (std::size_t{mask_} + 1) * sizeof(TxFrame) : 0;
    }
    // Whether another frame fits (an unallocated window holds nothing).
    [[nodiscard]] bool has_room(std::uint32_t window) const noexcept {
        return !allocated() || span() < window;
    }

    // The slot of `seq`; allocated() only. A seq outside [una, next_seq)
    // reads another frame's slot (callers compare TxFrame::seq).
    TxFrame& at(std::uint32_t seq) noexcept { return ring_[seq & mask_]; }
    const TxFrame& at(std::uint32_t seq) const noexcept { return ring_[seq & mask_]; }

    // A new frame: the next seq (returned) and its slot, reset to `frame`
    // (its seq filled in). The ring is allocated with the first one. The
    // caller checked has_room() and sets the frame's state.
    std::uint32_t add(std::uint32_t window, TxFrame frame) {
        if (!allocated()) {
            ring_ = std::make_unique<TxFrame[]>(window);
            mask_ = window - 1;
        }
        const std::uint32_t seq = next_seq_;
        next_seq_ = channel_detail::seq_after(seq);
        frame.seq = seq;
        at(seq) = frame;
        ++unacked_;
        ++unreleased_;
        return seq;
    }
    // A frame of the window was acknowledged / gave up its slot.
    void acked_one() noexcept { --unacked_; }
    void released_one() noexcept { --unreleased_; }
    // Frees the slots at the oldest end that their frames gave up, and keeps
    // cum_acked() >= una() - 1 (only a lying peer sacks frames past its
    // cumulative ack), so ACK processing never walks more than a window.
    void advance_una() noexcept;
    // The peer's ACK frame acknowledged every seq up to cum (checked newer).
    void ack_to(std::uint32_t cum) noexcept {
        cum_acked_ = cum;
        if (plugin::common::seq_lt(carried_, cum_acked_))
            carried_ = cum_acked_;
    }
    // One of the peer's frames carried ack_seq (checked newer than carried()).
    void carry(std::uint32_t ack_seq) noexcept { carried_ = ack_seq; }
    // Nothing out any more (the peer died): every slot is free, the seqs go on.
    void forget_all() noexcept {
        una_ = next_seq_;
        unacked_ = 0;
        unreleased_ = 0;
    }
    // Gives the ring back (the peer went idle); allocated again by add().
    void free_slots() noexcept {
        ring_.reset();
        mask_ = 0;
    }
    // Starts over at `first` (a new or woken peer), as the constructor.
    void restart(std::uint32_t first) noexcept {
        next_seq_ = una_ = first;
        cum_acked_ = carried_ = static_cast<std::uint32_t>(first - 1u);
        unacked_ = unreleased_ = 0;
    }

  private:
    std::unique_ptr<TxFrame[]> ring_;
    std::uint32_t mask_ = 0;  // window - 1 while ring_ is allocated
    std::uint32_t next_seq_ = 1;
    std::uint32_t una_ = 1;
    std::uint32_t cum_acked_ = 0;
    std::uint32_t carried_ = 0;
    std::uint32_t unacked_ = 0;
    std::uint32_t unreleased_ = 0;
};

}  // namespace pml::dr::core
