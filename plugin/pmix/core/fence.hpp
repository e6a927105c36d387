// Local fence accounting on the server: one tracker per collective, keyed by
// its canonical participant list. When every local participant has arrived
// the glue hands the tracker's data to the launcher's fence (the daemons'
// allgather) and releases everyone with the result. Sans I/O.
#pragma once
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

#include "value.hpp"

namespace plugin::pmix::core {

struct FenceWaiter {
    ProcName proc{};
    std::uint64_t token = 0;  // the glue's handle on the reply to send
};

struct Fence {
    std::uint64_t id = 0;
    std::vector<ProcName> procs;     // canonical participant list
    std::vector<ProcName> expected;  // local members, sorted
    std::vector<FenceWaiter> arrived;
    bool collect = false;
    bool in_host = false;  // handed to the launcher; no more arrivals
    bool complete() const noexcept { return arrived.size() == expected.size(); }
};

class FenceTable {
  public:
    // `proc` arrives at the collective over `procs` (canonical), whose local
    // members are `expected`. Errors: not a member, arrived twice.
    Result<Fence*> arrive(const std::vector<ProcName>& procs, std::vector<ProcName> expected,
                          FenceWaiter who, bool collect);
    Fence* find(std::uint64_t id);
    // Removes a fence (released or failed) and returns it.
    std::optional<Fence> finish(std::uint64_t id);
    // A member is gone without finishing: every fence still gathering that
    // expects it can never complete; they are removed and returned so the
    // glue fails their waiters.
    std::vector<Fence> member_lost(ProcName proc);
    std::size_t size() const noexcept { return fences_.size(); }

  private:
    std::list<Fence> fences_;
    std::uint64_t next_id_ = 1;
};

}  // namespace plugin::pmix::core
