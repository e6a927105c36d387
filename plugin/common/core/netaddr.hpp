// IP addresses, CIDR prefixes and the include/exclude interface filter
// (sans I/O), shared by the TCP components (btl drtcp, oob drtcp).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"

namespace plugin::common {

struct IpAddr {
    std::uint8_t family = 4;  // 4 or 6
    std::array<std::uint8_t, 16> bytes{};
    friend bool operator==(const IpAddr&, const IpAddr&) = default;

    [[nodiscard]] std::size_t size() const noexcept { return family == 4 ? 4 : 16; }
    [[nodiscard]] bool loopback() const noexcept;
    [[nodiscard]] bool link_local() const noexcept;
    [[nodiscard]] std::string str() const;
};

Result<IpAddr> parse_ip(std::string_view text);

struct Cidr {
    IpAddr addr;
    std::uint8_t prefix = 0;
    [[nodiscard]] bool contains(const IpAddr& a) const noexcept;
};
// "10.1.0.0/16", "fd00::/8", or a bare address (a host prefix).
Result<Cidr> parse_cidr(std::string_view text);

// One usable local address of one interface.
struct LocalIf {
    std::string name;  // interface name, e.g. "eth0"
    IpAddr addr;
    std::uint8_t prefix = 0;
};

// An include or exclude list: comma-separated interface names and CIDRs.
struct IfList {
    std::vector<std::string> names;
    std::vector<Cidr> cidrs;
    [[nodiscard]] bool empty() const noexcept { return names.empty() && cidrs.empty(); }
    [[nodiscard]] bool matches(const LocalIf& i) const noexcept;
};
Result<IfList> parse_if_list(std::string_view text);

// Families a module may use: bit 0 IPv4, bit 1 IPv6.
inline constexpr unsigned kFamilyV4 = 1;
inline constexpr unsigned kFamilyV6 = 2;

// The interfaces a component listens on. With an include list only those;
// else all but the exclude list. Link-local IPv6 addresses are never used
// (they need a scope). One address per interface name: its IPv4 address when
// it has one that passes, else its first IPv6 one. Both lists set is an
// error (the caller reports it).
Result<std::vector<LocalIf>> select_interfaces(std::span<const LocalIf> all, const IfList& include,
                                               const IfList& exclude, unsigned families);

}  // namespace plugin::common
