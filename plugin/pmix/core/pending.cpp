#include "pending.hpp"

#include <algorithm>

namespace plugin::pmix::core {

using plugin::common::fail;

Result<bool> PendingTable::add(ProcName proc, std::uint64_t token, std::uint64_t deadline) {
    if (waiters_ >= max_waiters_)
        return fail(ErrorCode::NoResources, "too many pending requests");
    auto [it, first] = entries_.try_emplace(proc);
    if (first)
        it->second.deadline = deadline;
    it->second.tokens.push_back(token);
    ++waiters_;
    return first;
}

std::vector<std::uint64_t> PendingTable::take(ProcName proc) {
    auto it = entries_.find(proc);
    if (it == entries_.end())
        return {};
    std::vector<std::uint64_t> out = std::move(it->second.tokens);
    entries_.erase(it);
    waiters_ -= out.size();
    return out;
}

std::vector<std::pair<ProcName, std::vector<std::uint64_t>>> PendingTable::expire(
    std::uint64_t now) {
    std::vector<std::pair<ProcName, std::vector<std::uint64_t>>> out;
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->second.deadline <= now) {
            waiters_ -= it->second.tokens.size();
            out.emplace_back(it->first, std::move(it->second.tokens));
            it = entries_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

void PendingTable::drop(std::uint64_t token) {
    for (auto it = entries_.begin(); it != entries_.end();) {
        auto& t = it->second.tokens;
        const auto before = t.size();
        std::erase(t, token);
        waiters_ -= before - t.size();
        if (t.empty())
            it = entries_.erase(it);
        else
            ++it;
    }
}

}  // namespace plugin::pmix::core
