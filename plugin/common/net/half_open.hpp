// Accepted connections that have not yet said who they are, bounded in
// number and in time (sans I/O; every listener of ours keeps one). A caller
// that connects and stays silent cannot pile up sockets or hold one for
// long: past `max` the oldest goes, and each must identify itself within
// `timeout`. A connection leaves the set when it identifies itself or closes.
#pragma once
#include <algorithm>
#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

#include "time.hpp"

namespace plugin::common::net {

template <typename Id>
class HalfOpenSet {
  public:
    static constexpr std::size_t kDefaultMax = 64;

    // `timeout` 0: no time limit.
    explicit HalfOpenSet(Micros timeout, std::size_t max = kDefaultMax) noexcept
        : timeout_(timeout), max_(max == 0 ? 1 : max) {}

    void set_timeout(Micros timeout) noexcept { timeout_ = timeout; }

    // Makes room for one more: the oldest connection that must go first,
    // if the set is full. The caller closes it (and calls leave()).
    [[nodiscard]] std::optional<Id> evict_for_new() const {
        if (pending_.size() < max_)
            return std::nullopt;
        return pending_.front().id;
    }
    // A connection was accepted at `now`.
    void enter(Id id, Micros now) {
        pending_.push_back({id, timeout_ == 0 ? plugin::common::kNever : now + timeout_});
    }
    // It identified itself, or it closed.
    void leave(Id id) noexcept {
        const auto it = std::find_if(pending_.begin(), pending_.end(),
                                     [&](const Entry& e) { return e.id == id; });
        if (it != pending_.end())
            pending_.erase(it);
    }
    void clear() noexcept { pending_.clear(); }
    [[nodiscard]] bool contains(Id id) const noexcept {
        return std::any_of(pending_.begin(), pending_.end(),
                           [&](const Entry& e) { return e.id == id; });
    }
    // Those whose time is up at `now`, oldest first (they stay in the set
    // until the caller closes them).
    [[nodiscard]] std::vector<Id> overdue(Micros now) const {
        std::vector<Id> late;
        for (const Entry& e : pending_)
            if (e.deadline <= now)
                late.push_back(e.id);
        return late;
    }
    [[nodiscard]] Micros next_deadline() const noexcept {
        Micros d = plugin::common::kNever;
        for (const Entry& e : pending_)
            d = std::min(d, e.deadline);
        return d;
    }
    [[nodiscard]] std::size_t size() const noexcept { return pending_.size(); }
    [[nodiscard]] bool empty() const noexcept { return pending_.empty(); }

  private:
    struct Entry {
        Id id;
        Micros deadline;
    };
    Micros timeout_;
    std::size_t max_;
    std::deque<Entry> pending_;  // in order of acceptance
};

}  // namespace plugin::common::net
