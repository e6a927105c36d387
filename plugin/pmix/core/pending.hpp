// Requests parked until something arrives for a process: gets waiting for a
// local client's commit or for a remote daemon's direct-modex reply. Several
// waiters on one process share one upstream request; every entry has a
// deadline; the table is bounded. Sans I/O (time is passed in).
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "value.hpp"

namespace plugin::pmix::core {

class PendingTable {
  public:
    explicit PendingTable(std::size_t max_waiters) : max_waiters_(max_waiters) {}
    // Parks `token` on `proc`. True when it is the first waiter (the caller
    // then starts the upstream request); NoResources when full.
    Result<bool> add(ProcName proc, std::uint64_t token, std::uint64_t deadline);
    // Every waiter on `proc`, removed.
    std::vector<std::uint64_t> take(ProcName proc);
    // Every entry whose deadline is at or before `now`, removed.
    std::vector<std::pair<ProcName, std::vector<std::uint64_t>>> expire(std::uint64_t now);
    // Removes one waiter wherever it is (its requester went away).
    void drop(std::uint64_t token);
    bool contains(ProcName proc) const { return entries_.contains(proc); }
    std::size_t waiters() const noexcept { return waiters_; }

  private:
    struct Entry {
        std::uint64_t deadline = 0;
        std::vector<std::uint64_t> tokens;
    };
    std::map<ProcName, Entry> entries_;
    std::size_t waiters_ = 0;
    std::size_t max_waiters_;
};

}  // namespace plugin::pmix::core
