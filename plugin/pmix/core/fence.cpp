#include "fence.hpp"

#include <algorithm>

namespace plugin::pmix::core {

using plugin::common::fail;

Result<Fence*> FenceTable::arrive(const std::vector<ProcName>& procs,
                                  std::vector<ProcName> expected, FenceWaiter who, bool collect) {
    if (!std::binary_search(expected.begin(), expected.end(), who.proc))
        return fail(ErrorCode::InvalidArgument, "not a participant of this fence");
    auto it = std::find_if(fences_.begin(), fences_.end(),
                           [&](const Fence& f) { return !f.in_host && f.procs == procs; });
    if (it == fences_.end()) {
        Fence f;
        f.id = next_id_++;
        f.procs = procs;
        f.expected = std::move(expected);
        fences_.push_back(std::move(f));
        it = std::prev(fences_.end());
    }
    Fence& f = *it;
    if (std::any_of(f.arrived.begin(), f.arrived.end(),
                    [&](const FenceWaiter& w) { return w.proc == who.proc; }))
        return fail(ErrorCode::Duplicate, "arrived twice at one fence");
    f.arrived.push_back(who);
    f.collect = f.collect || collect;
    return &f;
}

Fence* FenceTable::find(std::uint64_t id) {
    auto it =
        std::find_if(fences_.begin(), fences_.end(), [&](const Fence& f) { return f.id == id; });
    return it == fences_.end() ? nullptr : &*it;
}

std::optional<Fence> FenceTable::finish(std::uint64_t id) {
    auto it =
        std::find_if(fences_.begin(), fences_.end(), [&](const Fence& f) { return f.id == id; });
    if (it == fences_.end())
        return std::nullopt;
    Fence f = std::move(*it);
    fences_.erase(it);
    return f;
}

std::vector<Fence> FenceTable::member_lost(ProcName proc) {
    std::vector<Fence> out;
    for (auto it = fences_.begin(); it != fences_.end();) {
        if (!it->in_host && std::binary_search(it->expected.begin(), it->expected.end(), proc)) {
            out.push_back(std::move(*it));
            it = fences_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

}  // namespace plugin::pmix::core
