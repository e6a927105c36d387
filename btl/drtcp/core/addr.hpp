// btl drtcp addressing (sans I/O): IP addresses and CIDR prefixes, the
// include/exclude interface filter, the address list published through the
// modex, and the reachability rule that pairs local interfaces with a peer's
// addresses.
//
// MODEX blob (published per process, version 1, big-endian):
//   | version u8 | count u8 | flags u16 (bit 0: put) |  then `count` entries:
//   | family u8 (4|6) | prefix u8 | port u16 | links u16 | reserved u16 | addr 16 bytes |
// An IPv4 address fills the first 4 bytes of `addr`, the rest is zero.
// The peer's blob is treated as hostile: bad version, count, family, prefix,
// port 0 or nonzero padding refuse the whole blob (that peer is unreachable
// through drtcp; the job goes on over other BTLs).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"

namespace btl::drtcp::core {

using plugin::common::Result;

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

// The interfaces drtcp opens modules on. With an include list only those;
// else all but the exclude list. Link-local IPv6 addresses are never used
// (they need a scope). One address per interface name: its IPv4 address when
// it has one that passes, else its first IPv6 one. Both lists set is an
// error (the caller reports it).
Result<std::vector<LocalIf>> select_interfaces(std::span<const LocalIf> all, const IfList& include,
                                               const IfList& exclude, unsigned families);

struct PublishedAddr {
    IpAddr addr;
    std::uint8_t prefix = 0;
    std::uint16_t port = 0;
    std::uint16_t links = 1;
    friend bool operator==(const PublishedAddr&, const PublishedAddr&) = default;
};
inline constexpr std::size_t kMaxPublished = 64;
inline constexpr std::uint16_t kModexPut = 0x0001;  // this process's modules offer put

struct Published {
    std::vector<PublishedAddr> addrs;
    std::uint16_t flags = 0;
};

std::vector<std::uint8_t> encode_modex(std::span<const PublishedAddr> addrs, std::uint16_t flags);
Result<Published> decode_modex(std::span<const std::uint8_t> bytes);

// Reachability. A local interface can talk to a peer's address when:
//   3  both sit in the same subnet (the local prefix contains the remote
//      address), or both are loopback and the peer is on this node;
//   1  same family, neither loopback nor link-local (reached by routing);
//   0  otherwise (different family, or a loopback address across nodes).
int reach_score(const LocalIf& local, const PublishedAddr& remote, bool same_node) noexcept;

// Pairs local interfaces with the peer's addresses one to one: the pairs
// with the best score first (then in list order). Each side computes the
// same pairing from its view, so a connection always arrives at the module
// that expects it. -1: this interface has no partner on that peer.
std::vector<int> pair_addresses(std::span<const LocalIf> locals,
                                std::span<const PublishedAddr> remotes, bool same_node);

}  // namespace btl::drtcp::core
