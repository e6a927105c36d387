#include "simulator.hpp"

#include <algorithm>
#include <stdexcept>

namespace sim {
namespace {

// std heap algorithms build a max-heap; "later" as the comparator puts the
// earliest (time, insertion order) at the front.
struct Later {
    template <class E>
    bool operator()(const E& a, const E& b) const noexcept {
        return a.at != b.at ? a.at > b.at : a.order > b.order;
    }
};

}  // namespace

const char* stop_reason_name(StopReason reason) noexcept {
    switch (reason) {
        case StopReason::Idle:
            return "Idle";
        case StopReason::TimeReached:
            return "TimeReached";
        case StopReason::PredicateFalse:
            return "PredicateFalse";
        case StopReason::StepLimit:
            return "StepLimit";
    }
    return "?";
}

// A run started from inside a callback would interleave two loops over one
// clock; nothing good comes of it, so it is refused.
class Simulator::RunGuard {
  public:
    explicit RunGuard(bool& running) : running_(running) {
        if (running_)
            throw std::logic_error("Simulator: nested run from inside a callback");
        running_ = true;
    }
    ~RunGuard() { running_ = false; }
    RunGuard(const RunGuard&) = delete;
    RunGuard& operator=(const RunGuard&) = delete;

  private:
    bool& running_;
};

void Simulator::schedule(Micros at, EventFn fn) {
    if (at == kNever)
        throw std::invalid_argument("Simulator::schedule: time kNever");
    events_.push_back(Event{std::max(at, now()), next_order_++, std::move(fn)});
    std::push_heap(events_.begin(), events_.end(), Later{});
}

SourceId Simulator::add_deadline_source(DeadlineFn next_deadline, TimerFn on_timer) {
    const SourceId id = next_source_id_++;
    sources_.push_back(
        std::make_unique<Source>(Source{id, std::move(next_deadline), std::move(on_timer), false}));
    return id;
}

void Simulator::remove_deadline_source(SourceId id) {
    // Only marked here: the source may be the one whose callback is running.
    for (auto& s : sources_) {
        if (s->id == id) {
            s->removed = true;
            sources_dirty_ = true;
        }
    }
}

void Simulator::compact_sources() {
    if (!sources_dirty_)
        return;
    std::erase_if(sources_, [](const std::unique_ptr<Source>& s) { return s->removed; });
    sources_dirty_ = false;
}

Simulator::Next Simulator::peek() {
    compact_sources();
    Next next{events_.empty() ? kNever : events_.front().at, nullptr};
    // Indexed loop: a next_deadline() that registers a source must not
    // invalidate the iteration.
    for (std::size_t i = 0; i < sources_.size(); ++i) {  // NOLINT(modernize-loop-convert)
        Source* s = sources_[i].get();
        if (s->removed)
            continue;  // removed by an earlier next_deadline() call
        const Micros deadline = s->next_deadline();
        // Strict '<': events win ties, then the earliest-registered source.
        if (deadline < next.at) {
            next.at = deadline;
            next.source = s;
        }
    }
    return next;
}

void Simulator::execute(const Next& next) {
    // A deadline already in the past fires now: time cannot be rewound.
    clock_.advance_to(std::max(next.at, now()));
    ++total_steps_;
    if (next.source != nullptr) {
        next.source->on_timer(now());
        return;
    }
    std::pop_heap(events_.begin(), events_.end(), Later{});
    // Move the event out first: its callback may schedule more events.
    Event event = std::move(events_.back());
    events_.pop_back();
    event.fn();
}

RunResult Simulator::run_loop(const std::function<bool()>* pred, Micros horizon,
                              std::uint64_t max_steps) {
    RunGuard guard(running_);
    std::uint64_t steps = 0;
    for (;;) {
        if (pred != nullptr && !(*pred)())
            return {StopReason::PredicateFalse, steps, now()};
        const Next next = peek();
        if (next.at == kNever)
            return {StopReason::Idle, steps, now()};
        if (next.at > horizon) {
            clock_.advance_to(std::max(horizon, now()));
            return {StopReason::TimeReached, steps, now()};
        }
        if (steps >= max_steps)
            return {StopReason::StepLimit, steps, now()};
        execute(next);
        ++steps;
    }
}

RunResult Simulator::run_until(Micros t, std::uint64_t max_steps) {
    RunResult result = run_loop(nullptr, t, max_steps);
    // run_until promises the clock at t even when work ran out before it.
    if (result.reason == StopReason::Idle && t != kNever) {
        clock_.advance_to(std::max(t, now()));
        result = {StopReason::TimeReached, result.steps, now()};
    }
    return result;
}

RunResult Simulator::run_until_idle(Micros time_limit, std::uint64_t max_steps) {
    return run_loop(nullptr, time_limit, max_steps);
}

RunResult Simulator::run_while(const std::function<bool()>& pred, Micros time_limit,
                               std::uint64_t max_steps) {
    return run_loop(&pred, time_limit, max_steps);
}

}  // namespace sim
