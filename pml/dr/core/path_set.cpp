#include "path_set.hpp"

#include <algorithm>

namespace pml::dr::core {

using channel_detail::kNoSlot;
using channel_detail::slot_bit;

bool PathSet::any_alive() const noexcept {
    return std::any_of(slots_.begin(), slots_.end(),
                       [](const PathSlot& pa) { return pa.state == PathState::Alive; });
}

bool PathSet::preferred(std::uint8_t slot) const noexcept {
    switch (slots_[slot].state) {
        case PathState::Alive:
            return true;
        case PathState::Suspect:
            return !any_alive();
        case PathState::Failed:
        case PathState::Standby:
            return false;
    }
    return false;
}

std::uint8_t PathSet::choose(PathId hint, std::size_t start, std::uint32_t avoid) const noexcept {
    if (hint != kAnyPath) {
        const std::uint8_t s = find(hint);
        if (s != kNoSlot && (avoid & slot_bit(s)) == 0 && preferred(s))
            return s;
    }
    const std::size_t n = slots_.size();
    if (n == 0)
        return kNoSlot;
    start %= n;  // once; the walk below wraps without dividing
    for (const PathState want : {PathState::Alive, PathState::Suspect}) {
        for (std::size_t i = 0, at = start; i < n; ++i, at = at + 1 == n ? 0 : at + 1) {
            const auto s = static_cast<std::uint8_t>(at);
            if (slots_[s].state == want && (avoid & slot_bit(s)) == 0)
                return s;
        }
    }
    return kNoSlot;
}

bool PathSet::heard_since(std::uint8_t slot, Micros since) const noexcept {
    for (std::size_t i = 0; i < slots_.size(); ++i)
        if (i != slot && slots_[i].state != PathState::Failed && slots_[i].last_heard > since)
            return true;
    return false;
}

}  // namespace pml::dr::core
