// btl drucx completion bookkeeping (sans I/O): operations handed to UCX and
// not completed yet (sends, puts, gets), each holding a BTL descriptor or an
// RDMA callback (the cookie).
//
// The glue adds an entry before it posts the operation and passes the ticket
// as the request's user data. UCX completes it later (or the peer fails
// first: fail_peer() hands back every entry of that peer so each completes
// in error exactly once). A ticket names a slot and its generation, so a late
// completion for an entry already failed, whose slot now holds another
// operation, is recognised and ignored instead of completing the wrong one.
//
// Bounded: `capacity` entries in all, `per_peer` per peer; add() refuses
// beyond them, which the glue turns into back-pressure (alloc returns NULL,
// sendi and put say busy).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace btl::drucx::core {

enum class OpKind : std::uint8_t { Send, Put, Get };

struct PendingOp {
    void* cookie = nullptr;
    OpKind kind = OpKind::Send;
    std::uint32_t peer = 0;
};

class PendingTable {
  public:
    PendingTable(std::size_t capacity, std::size_t per_peer);

    // A ticket (never 0), or nullopt when a bound is reached.
    std::optional<std::uint64_t> add(const PendingOp& op);
    // The entry a ticket names, removed; nullopt when the ticket is stale
    // (already completed or failed) or was never handed out.
    std::optional<PendingOp> complete(std::uint64_t ticket);
    // Removes every entry of `peer`, appending them to `out` (slot order,
    // not posting order).
    void fail_peer(std::uint32_t peer, std::vector<PendingOp>& out);

    [[nodiscard]] std::size_t size() const noexcept { return used_; }
    [[nodiscard]] std::size_t of_peer(std::uint32_t peer) const noexcept;
    [[nodiscard]] bool can_add(std::uint32_t peer) const noexcept {
        return used_ < slots_.size() && of_peer(peer) < per_peer_;
    }

  private:
    struct Slot {
        PendingOp op;
        std::uint32_t generation = 1;
        bool used = false;
    };
    void release(std::size_t index);

    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_;    // free slot indices (stack)
    std::vector<std::uint32_t> counts_;  // entries per peer (grown on demand)
    std::size_t per_peer_;
    std::size_t used_ = 0;
};

}  // namespace btl::drucx::core
