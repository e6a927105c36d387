// The ids rendezvous frames name requests by (CTS and PUT name the sender's,
// FRAG and PUT-done the receiver's): slots of a table, never pointers. An id
// is the slot's generation (high 32 bits), the table's tag (bit 31: sends and
// receives never share an id) and the slot's index + 1, so an id from the
// wire that was never issued, was released, belongs to a reused slot or to
// the other table finds nothing; 0 is never issued. Registering and releasing
// allocate nothing once the table has grown to the most requests active at
// once, which is what bounds it.
#pragma once

#include <cstdint>
#include <vector>

#include "matching.hpp"  // Handle, PeerId

namespace pml::dr::core {

class RequestTable {
  public:
    // tag: 0 or 1, told apart in every id.
    explicit RequestTable(std::uint32_t tag) noexcept : tag_(tag != 0 ? kTagBit : 0) {}

    struct Entry {
        Handle handle = 0;
        PeerId peer = 0;
        std::uint64_t want_len = 0;  // receives: the bytes accepted
    };

    std::uint64_t add(const Entry& e) {
        std::uint32_t index = 0;
        if (free_.empty()) {
            index = static_cast<std::uint32_t>(slots_.size());
            slots_.push_back(Slot{});
        } else {
            index = free_.back();
            free_.pop_back();
        }
        Slot& s = slots_[index];
        s.entry = e;
        s.live = true;
        return id_of(index);
    }

    // nullptr: not an id this table issued and still holds.
    [[nodiscard]] const Entry* find(std::uint64_t id) const noexcept {
        const Slot* s = slot(id);
        return s != nullptr ? &s->entry : nullptr;
    }

    // Releasing an unknown or released id does nothing.
    void remove(std::uint64_t id) noexcept {
        Slot* s = slot(id);
        if (s == nullptr)
            return;
        s->live = false;
        if (++s->generation == 0)
            s->generation = 1;
        free_.push_back(static_cast<std::uint32_t>((id & kIndexMask) - 1u));
    }

    // Moves the handles of every entry bound to `peer` into `out`, releasing them.
    void take_bound_to(PeerId peer, std::vector<Handle>& out) {
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            Slot& s = slots_[i];
            if (!s.live || s.entry.peer != peer)
                continue;
            out.push_back(s.entry.handle);
            remove(id_of(static_cast<std::uint32_t>(i)));
        }
    }

    [[nodiscard]] std::size_t size() const noexcept { return slots_.size() - free_.size(); }
    // Slots ever allocated: the most entries held at once.
    [[nodiscard]] std::size_t slots() const noexcept { return slots_.size(); }

  private:
    struct Slot {
        Entry entry;
        std::uint32_t generation = 1;
        bool live = false;
    };

    static constexpr std::uint32_t kTagBit = 1u << 31;
    static constexpr std::uint64_t kIndexMask = kTagBit - 1u;
    static constexpr std::size_t kNone = ~std::size_t{0};

    [[nodiscard]] std::uint64_t id_of(std::uint32_t index) const noexcept {
        return (static_cast<std::uint64_t>(slots_[index].generation) << 32) | tag_ | (index + 1u);
    }
    // The slot index `id` names while it is live (kNone: none).
    [[nodiscard]] std::size_t index_of(std::uint64_t id) const noexcept {
        const std::uint64_t low = id & kIndexMask;
        if ((id & kTagBit) != tag_ || low == 0 || low > slots_.size())
            return kNone;
        const Slot& s = slots_[low - 1];
        return s.live && s.generation == (id >> 32) ? low - 1 : kNone;
    }
    [[nodiscard]] const Slot* slot(std::uint64_t id) const noexcept {
        const std::size_t i = index_of(id);
        return i != kNone ? &slots_[i] : nullptr;
    }
    Slot* slot(std::uint64_t id) noexcept {
        const std::size_t i = index_of(id);
        return i != kNone ? &slots_[i] : nullptr;
    }

    std::uint32_t tag_;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_;
};

}  // namespace pml::dr::core
