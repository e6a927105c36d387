#include "pending.hpp"

namespace btl::drucx::core {

namespace {
// ticket = generation << 32 | (index + 1): never 0.
std::uint64_t ticket_of(std::size_t index, std::uint32_t generation) noexcept {
    return (std::uint64_t{generation} << 32) | (index + 1);
}
}  // namespace

PendingTable::PendingTable(std::size_t capacity, std::size_t per_peer)
    : slots_(capacity), per_peer_(per_peer) {
    free_.reserve(capacity);
    for (std::size_t i = capacity; i > 0; --i)
        free_.push_back(static_cast<std::uint32_t>(i - 1));
}

std::size_t PendingTable::of_peer(std::uint32_t peer) const noexcept {
    return peer < counts_.size() ? counts_[peer] : 0;
}

std::optional<std::uint64_t> PendingTable::add(const PendingOp& op) {
    if (!can_add(op.peer))
        return std::nullopt;
    const std::uint32_t index = free_.back();
    free_.pop_back();
    Slot& s = slots_[index];
    s.op = op;
    s.used = true;
    ++used_;
    if (op.peer >= counts_.size())
        counts_.resize(op.peer + 1, 0);
    ++counts_[op.peer];
    return ticket_of(index, s.generation);
}

void PendingTable::release(std::size_t index) {
    Slot& s = slots_[index];
    --counts_[s.op.peer];
    s.used = false;
    s.op = {};
    ++s.generation;  // tickets of the old entry no longer match
    if (s.generation == 0)
        s.generation = 1;
    --used_;
    free_.push_back(static_cast<std::uint32_t>(index));
}

std::optional<PendingOp> PendingTable::complete(std::uint64_t ticket) {
    const std::uint64_t low = ticket & 0xFFFFFFFFu;
    if (low == 0 || low > slots_.size())
        return std::nullopt;
    const std::size_t index = low - 1;
    const Slot& s = slots_[index];
    if (!s.used || s.generation != static_cast<std::uint32_t>(ticket >> 32))
        return std::nullopt;
    const PendingOp op = s.op;
    release(index);
    return op;
}

void PendingTable::fail_peer(std::uint32_t peer, std::vector<PendingOp>& out) {
    if (of_peer(peer) == 0)
        return;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].used && slots_[i].op.peer == peer) {
            out.push_back(slots_[i].op);
            release(i);
        }
    }
}

}  // namespace btl::drucx::core
