#include "regions.hpp"

namespace btl::drtcp::core {

namespace {
std::uint64_t mix(std::uint64_t z) noexcept {  // splitmix64 finaliser: keys look random
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
}  // namespace

RegionTable::RegionTable(std::uint64_t salt) noexcept : next_(mix(salt + 1)) {}

std::uint64_t RegionTable::add(std::uint64_t base, std::uint64_t len) {
    std::uint64_t key = 0;
    do {
        key = mix(next_ += 0x9E3779B97F4A7C15ull);
    } while (key == 0 || regions_.count(key) != 0);
    regions_.emplace(key, Region{base, len});
    return key;
}

bool RegionTable::remove(std::uint64_t key) {
    return regions_.erase(key) != 0;
}

bool RegionTable::covers(std::uint64_t key, std::uint64_t addr, std::uint64_t len) const {
    const auto it = regions_.find(key);
    if (it == regions_.end())
        return false;
    const Region& r = it->second;
    // Written so that no sum can wrap around.
    return addr >= r.base && addr - r.base <= r.len && len <= r.len - (addr - r.base);
}

}  // namespace btl::drtcp::core
