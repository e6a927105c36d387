// The paths to one peer (the reliability channel's path set; issue 26: the
// channel split into what it is, beside RxTracker and TxWindow): one slot per
// path the glue offered, in the order they were added (a slot never moves,
// so frames and timers name paths by slot), each with its state, timers, RTT
// estimate and counters. What the set answers: which slot is a path, which
// slots new traffic may take, whether the peer answered on another path.
// The state machine and its transitions (with their logging) are the
// channel's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "channel.hpp"
#include "recovery.hpp"
#include "tx_window.hpp"

namespace pml::dr::core {

namespace channel_detail {

constexpr std::uint32_t slot_bit(std::uint8_t slot) noexcept {
    return std::uint32_t{1} << slot;
}

struct PathSlot {
    PathId id = 0;
    PathState state = PathState::Alive;
    bool standby = false;  // added as a standby path (promoted ones go back)
    // Its due timers were deferred after an absence of ours; cleared when it
    // makes progress (a silent path is deferred once, not on every late visit).
    bool absence_deferred = false;
    unsigned pto_count = 0;           // consecutive PTO (or probe) expiries without progress
    unsigned wd_retries = 0;          // watchdog expiries since the last completion
    Micros ack_deadline = kNever;     // the PTO timer: armed while frames are outstanding
    Micros wd_deadline = kNever;      // the watchdog: armed while completions are owed
    Micros probe_deadline = kNever;   // PROBE timer: Suspect and idle, or Failed
    std::uint32_t outstanding = 0;    // unacked frames whose ACK this path's timer covers
    std::uint32_t local_pending = 0;  // transmissions awaiting local completion
    Micros last_heard = 0;            // last ack progress for frames sent on it, or arrival over it
    Micros last_probe = 0;            // when the latest PTO probe or PROBE went out on it
    std::uint32_t probe_id = 0;       // the PROBE awaiting its answer (0: none)
    // Our latest PROBE until its answer came (0: none), also once progress
    // made it moot (probe_id cleared): the peer still answers it.
    std::uint32_t probe_in_flight = 0;
    Micros probe_sent = 0;            // when it went out
    std::uint64_t probe_order = 0;    // the peer's tx counter then: frames up to it went before
    unsigned probe_attempts = 0;      // unanswered re-admission probes since the path failed
    recovery::RttEstimator rtt;
    PathCounters counters;
};

}  // namespace channel_detail

class PathSet {
  public:
    using PathSlot = channel_detail::PathSlot;
    using iterator = std::vector<PathSlot>::iterator;
    using const_iterator = std::vector<PathSlot>::const_iterator;

    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
    PathSlot& operator[](std::size_t slot) noexcept { return slots_[slot]; }
    const PathSlot& operator[](std::size_t slot) const noexcept { return slots_[slot]; }
    iterator begin() noexcept { return slots_.begin(); }
    iterator end() noexcept { return slots_.end(); }
    [[nodiscard]] const_iterator begin() const noexcept { return slots_.begin(); }
    [[nodiscard]] const_iterator end() const noexcept { return slots_.end(); }
    // A new path in the next slot.
    void add(const PathSlot& pa) { slots_.push_back(pa); }
    [[nodiscard]] std::size_t memory_bytes() const noexcept {
        return slots_.capacity() * sizeof(PathSlot);
    }

    // The slot of path `id` (kNoSlot: not one of ours).
    [[nodiscard]] std::uint8_t find(PathId id) const noexcept {
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].id == id)
                return static_cast<std::uint8_t>(i);
        return channel_detail::kNoSlot;
    }
    // Preferred for new traffic: Alive, or Suspect when no path is Alive.
    [[nodiscard]] bool preferred(std::uint8_t slot) const noexcept;
    [[nodiscard]] bool any_alive() const noexcept;
    // A usable path: the hint if usable, else round-robin from `start`, Alive
    // before Suspect; slots in `avoid` are skipped. kNoSlot: none.
    [[nodiscard]] std::uint8_t choose(PathId hint, std::size_t start,
                                      std::uint32_t avoid = 0) const noexcept;
    // The peer answered on another path that is not Failed since `since`.
    [[nodiscard]] bool heard_since(std::uint8_t slot, Micros since) const noexcept;

  private:
    std::vector<PathSlot> slots_;
};

}  // namespace pml::dr::core
