// What the receiver knows of one peer's frame sequence (the reliability
// channel's receive side, issue 26: the channel split into what it is):
// every seq up to cum() arrived; arrivals past a gap are kept in a ring
// bitmap of `window` bits, allocated with the first of them. Seqs are
// wrap-safe 32-bit serial numbers; 0 is never sent, and cum() steps over it.
// The window is the channel's (a power of two, a multiple of 64), passed in
// rather than kept per peer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "seq.hpp"

namespace pml::dr::core {

class RxTracker {
  public:
    enum class Seen : std::uint8_t {
        New,        // not arrived yet, within the window
        Duplicate,  // at or below cum(), or its bit is set
        TooFar,     // more than a window past cum(): the sender cannot have sent it yet
    };

    explicit RxTracker(std::uint32_t cum = 0) noexcept : cum_(cum) {}

    [[nodiscard]] std::uint32_t cum() const noexcept { return cum_; }
    // Arrivals past a gap (bits set).
    [[nodiscard]] std::uint32_t ahead() const noexcept { return ahead_; }

    // The usual arrival: the next seq with nothing past a gap. take_next()
    // records it (no bitmap involved).
    [[nodiscard]] bool is_next(std::uint32_t seq) const noexcept {
        return seq == static_cast<std::uint32_t>(cum_ + 1u) && seq != 0 && ahead_ == 0;
    }
    void take_next() noexcept {
        cum_ = static_cast<std::uint32_t>(cum_ + 1u);
        if (cum_ == ~std::uint32_t{0})
            cum_ = 0;  // 0 is never sent: step over it too
    }

    // seq != 0.
    [[nodiscard]] Seen check(std::uint32_t seq, std::uint32_t window) const noexcept {
        const std::int32_t d = plugin::common::seq_diff(seq, cum_);
        if (d > static_cast<std::int32_t>(window))
            return Seen::TooFar;
        // cum + 1 never has its bit set: advance() moves over set bits.
        if (d <= 0 || (d > 1 && bit(seq, window)))
            return Seen::Duplicate;
        return Seen::New;
    }
    // Records a New seq; true when it arrived past a gap.
    bool record(std::uint32_t seq, std::uint32_t window);
    // Whether seq arrived (for selective ACKs).
    [[nodiscard]] bool arrived(std::uint32_t seq, std::uint32_t window) const noexcept {
        if (plugin::common::seq_le(seq, cum_))
            return true;
        return plugin::common::seq_diff(seq, cum_) <= static_cast<std::int32_t>(window) &&
               bit(seq, window);
    }

    [[nodiscard]] std::size_t memory_bytes() const noexcept {
        return bits_.capacity() * sizeof(std::uint64_t);
    }

  private:
    [[nodiscard]] bool bit(std::uint32_t seq, std::uint32_t window) const noexcept {
        if (bits_.empty())
            return false;
        const std::uint32_t pos = seq & (window - 1);
        return ((bits_[pos / 64] >> (pos % 64)) & 1u) != 0;
    }
    void put(std::uint32_t seq, std::uint32_t window, bool on) noexcept;
    // Moves cum over every contiguous arrival (and over seq 0).
    void advance(std::uint32_t window) noexcept;

    std::vector<std::uint64_t> bits_;  // bit (seq % window) for seqs after cum_
    std::uint32_t cum_ = 0;
    std::uint32_t ahead_ = 0;
};

}  // namespace pml::dr::core
