// btl drtcp memory registrations (sans I/O): the regions a PUT may write.
// Over TCP nothing needs pinning; registration exists so that a PUT frame —
// an address and bytes arriving from the network — can only write inside
// memory this process handed out for it. A key names a region; a PUT must
// name a live key and fall wholly inside that region, or the connection is
// closed as hostile.
#pragma once
#include <cstdint>
#include <unordered_map>

namespace btl::drtcp::core {

class RegionTable {
  public:
    // `salt` makes keys differ between processes and runs (not a secret:
    // a stale or foreign key should simply not match).
    explicit RegionTable(std::uint64_t salt = 0) noexcept;

    // A new key for [base, base + len).
    std::uint64_t add(std::uint64_t base, std::uint64_t len);
    bool remove(std::uint64_t key);
    // True when [addr, addr + len) lies inside the region named by `key`.
    [[nodiscard]] bool covers(std::uint64_t key, std::uint64_t addr, std::uint64_t len) const;
    [[nodiscard]] std::size_t size() const noexcept { return regions_.size(); }

  private:
    struct Region {
        std::uint64_t base;
        std::uint64_t len;
    };
    std::unordered_map<std::uint64_t, Region> regions_;
    std::uint64_t next_;
};

}  // namespace btl::drtcp::core
