#include "deadline_timer.hpp"

#include <ctime>

#include "opal_prelude.hpp"

namespace plugin::common {

// The precise clock (about 30 ns a read on this VM, 5 for the coarse one):
// pml dr measures round trips of tens of microseconds and arms probe
// timeouts of about a millisecond, which the coarse clock's scheduler tick
// (1-4 ms) turned into RTT samples of 0 or 4 ms and deadlines late by a tick.
Micros monotonic_now() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<Micros>(ts.tv_sec) * kSeconds + ts.tv_nsec / 1000;
}

DeadlineTimer::~DeadlineTimer() {
    shutdown();
}

void DeadlineTimer::init(Callback on_fire, event_base* base) noexcept {
    on_fire_ = std::move(on_fire);
    if (ev_ == nullptr) {
        ev_ = opal_event_evtimer_new(base != nullptr ? base : opal_sync_event_base,
                                     &DeadlineTimer::trampoline, this);
    }
}

void DeadlineTimer::shutdown() noexcept {
    if (ev_ != nullptr) {
        opal_event_evtimer_del(ev_);  // waits for a callback still running: no lock may be held
        opal_event_free(ev_);
        ev_ = nullptr;
    }
    armed_for_ = kNever;
}

void DeadlineTimer::arm(Micros deadline, Micros now) noexcept {
    if (deadline == kNever || deadline >= armed_for_.load(std::memory_order_relaxed))
        return;
    armed_for_.store(deadline, std::memory_order_relaxed);
    if (ev_ == nullptr)
        return;  // polling only
    const Micros delay = deadline > now ? deadline - now : 0;
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(delay / kSeconds);
    tv.tv_usec = static_cast<suseconds_t>(delay % kSeconds);
    opal_event_evtimer_add(ev_, &tv);
}

void DeadlineTimer::poll(Micros now) noexcept {
    const Micros due = armed_for_.load(std::memory_order_relaxed);
    if (due != kNever && now >= due)
        fire(now);
}

void DeadlineTimer::trampoline(int, short, void* arg) noexcept {
    auto* self = static_cast<DeadlineTimer*>(arg);
    const Micros now = monotonic_now();
    // libevent may wake us a little early (its clock is cached/coarse):
    // a core must never see its deadline fire before it is due.
    const Micros deadline = self->armed_for_.load(std::memory_order_relaxed);
    if (deadline != kNever && now < deadline) {
        self->armed_for_.store(kNever, std::memory_order_relaxed);
        self->arm(deadline, now);
        return;
    }
    self->fire(now);
}

void DeadlineTimer::fire(Micros now) noexcept {
    armed_for_.store(kNever, std::memory_order_relaxed);
    // Not event_del(): with threads, it waits for the callback if the event
    // loop runs it in another thread right now - and that callback waits for
    // the lock our caller holds (a deadlock seen under MPI_THREAD_MULTIPLE
    // over tcp). A firing that is already under way then runs for nothing.
    if (ev_ != nullptr)
        event_del_noblock(ev_);
    if (on_fire_)
        on_fire_(now);
}

}  // namespace plugin::common
