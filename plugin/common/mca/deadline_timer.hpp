// Timer glue: one opal event per core, armed at the core's next_deadline().
// Cores keep their timers as data; the glue only needs to wake them up once
// the earliest deadline passes. Re-arming to a later deadline is lazy (the
// event fires, the core finds nothing due, the glue re-arms), so arming is
// cheap on the hot path.
#pragma once
#include <atomic>
#include <functional>

#include "time.hpp"

struct event;
struct event_base;

namespace plugin::common {

// Monotonic time for the glue (cores never read clocks themselves).
Micros monotonic_now() noexcept;

class DeadlineTimer {
  public:
    using Callback = std::function<void(Micros now)>;

    DeadlineTimer() = default;
    DeadlineTimer(const DeadlineTimer&) = delete;
    DeadlineTimer& operator=(const DeadlineTimer&) = delete;
    ~DeadlineTimer();

    // base: the opal event base to use (nullptr: opal_sync_event_base).
    void init(Callback on_fire, event_base* base = nullptr) noexcept;
    void shutdown() noexcept;

    // Make sure the callback runs at or soon after `deadline` (kNever: no-op).
    void arm(Micros deadline, Micros now) noexcept;
    [[nodiscard]] Micros armed_for() const noexcept {
        return armed_for_.load(std::memory_order_relaxed);
    }

    // Polling path for progress loops: fires the callback when due.
    void poll(Micros now) noexcept;

  private:
    static void trampoline(int fd, short what, void* arg) noexcept;
    void fire(Micros now) noexcept;

    Callback on_fire_;
    event* ev_ = nullptr;
    // Written by the caller (under its lock) and by the event loop's thread
    // (the trampoline, without it): a lost race costs at most a spurious or
    // early firing, which the callback tolerates (it looks at the core's
    // real deadlines), never a missed one the caller's polling would not catch.
    std::atomic<Micros> armed_for_{kNever};
};

}  // namespace plugin::common
