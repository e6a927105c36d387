// Discrete-event loop over a virtual clock.
//
// Two kinds of work drive a run:
//  - events: one-shot callbacks at a virtual time (frame deliveries, link
//    outages, test scripting). Equal times run in insertion order, so a run
//    never depends on heap internals.
//  - deadline sources: sans-I/O engines expose `next_deadline()` and
//    `on_timer(now)` instead of arming timers; the loop re-queries every
//    source after each step, exactly like the glue re-arms its one opal timer.
//
// Every run call has a step cap (and optionally a time cap) so a livelocked
// engine ends a test with a failure instead of a hang.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "clock.hpp"
#include "time.hpp"

namespace sim {

using plugin::common::kNever;
using plugin::common::Micros;

using EventFn = std::function<void()>;
using DeadlineFn = std::function<Micros()>;
using TimerFn = std::function<void(Micros now)>;
using SourceId = std::uint64_t;

inline constexpr std::uint64_t kDefaultMaxSteps = 1'000'000;

enum class StopReason {
    Idle,            // no events pending and every source reports kNever
    TimeReached,     // the requested time or time limit was reached
    PredicateFalse,  // run_while: the predicate turned false
    StepLimit,       // the step cap was hit: likely a livelock
};

const char* stop_reason_name(StopReason reason) noexcept;

struct RunResult {
    StopReason reason;
    std::uint64_t steps;  // events + timer firings executed by this call
    Micros now;           // virtual time when the call returned
};

class Simulator {
  public:
    explicit Simulator(Micros start = 0) : clock_(start) {}
    Simulator(const Simulator&) = delete;
    Simulator& operator=(const Simulator&) = delete;

    Micros now() const noexcept { return clock_.now(); }
    const VirtualClock& clock() const noexcept { return clock_; }

    // A time in the past runs at now(): engines may compute "now + 0".
    void schedule(Micros at, EventFn fn);
    void schedule_after(Micros delay, EventFn fn) { schedule(now() + delay, std::move(fn)); }

    // On equal deadlines, pending events run before sources, and sources fire
    // in registration order. Removal is safe from inside any callback.
    SourceId add_deadline_source(DeadlineFn next_deadline, TimerFn on_timer);
    void remove_deadline_source(SourceId id);

    // Convenience for anything with `Micros next_deadline() const` and
    // `void on_timer(Micros)`. The engine must outlive its registration.
    template <class Engine>
    SourceId add_engine(Engine& engine) {
        return add_deadline_source([&engine] { return engine.next_deadline(); },
                                   [&engine](Micros t) { engine.on_timer(t); });
    }

    // Runs everything due at or before t, then leaves the clock at t
    // (unless the step cap stopped it earlier).
    RunResult run_until(Micros t, std::uint64_t max_steps = kDefaultMaxSteps);
    RunResult run_for(Micros duration, std::uint64_t max_steps = kDefaultMaxSteps) {
        return run_until(now() + duration, max_steps);
    }

    // Runs until nothing is left to do, the absolute time_limit is reached or
    // the step cap is hit, whichever comes first.
    RunResult run_until_idle(Micros time_limit = kNever,
                             std::uint64_t max_steps = kDefaultMaxSteps);

    // Runs while pred() holds (checked before every step). Stops early when
    // idle: nothing could ever change pred's answer then.
    RunResult run_while(const std::function<bool()>& pred, Micros time_limit,
                        std::uint64_t max_steps = kDefaultMaxSteps);

    std::size_t pending_events() const noexcept { return events_.size(); }
    std::uint64_t total_steps() const noexcept { return total_steps_; }

  private:
    struct Event {
        Micros at;
        std::uint64_t order;  // insertion counter: FIFO among equal times
        EventFn fn;
    };
    struct Source {
        SourceId id;
        DeadlineFn next_deadline;
        TimerFn on_timer;
        bool removed = false;
    };
    // The earliest piece of work: an event when source is null; at == kNever
    // when there is nothing to do.
    struct Next {
        Micros at;
        Source* source;
    };
    class RunGuard;

    Next peek();
    void execute(const Next& next);
    RunResult run_loop(const std::function<bool()>* pred, Micros horizon, std::uint64_t max_steps);
    void compact_sources();

    VirtualClock clock_;
    std::vector<Event> events_;  // binary heap ordered by (at, order)
    std::uint64_t next_order_ = 0;
    // unique_ptr keeps a Source at a fixed address while its callback runs,
    // even if that callback registers further sources.
    std::vector<std::unique_ptr<Source>> sources_;
    SourceId next_source_id_ = 1;
    bool sources_dirty_ = false;
    std::uint64_t total_steps_ = 0;
    bool running_ = false;
};

}  // namespace sim
