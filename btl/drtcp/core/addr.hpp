// btl drtcp addressing (sans I/O): the address list published through the
// modex, and the reachability rule that pairs local interfaces with a peer's
// addresses (IP addresses, CIDRs and the interface filter are
// plugin/common/core/netaddr.hpp).
//
// MODEX blob (published per process, version 2, big-endian):
//   | version u8 | count u8 | flags u16 (bit 0: put) | key (32 bytes) |  then `count` entries:
//   | family u8 (4|6) | prefix u8 | port u16 | links u16 | reserved u16 | addr 16 bytes |
// An IPv4 address fills the first 4 bytes of `addr`, the rest is zero.
// `key` is the process's random drtcp key (drawn at component init): the
// modex is how the launcher hands the ranks of a job each other's private
// data, and a pair of processes authenticates with a key derived from both
// (plugin/common/core/auth.hpp pair_key).
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

#include "auth.hpp"
#include "netaddr.hpp"
#include "result.hpp"

namespace btl::drtcp::core {

using plugin::common::Result;

using plugin::common::Cidr;
using plugin::common::IfList;
using plugin::common::IpAddr;
using plugin::common::kFamilyV4;
using plugin::common::kFamilyV6;
using plugin::common::LocalIf;
using plugin::common::parse_cidr;
using plugin::common::parse_if_list;
using plugin::common::parse_ip;
using plugin::common::select_interfaces;

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
    plugin::common::auth::Key key{};
};
inline constexpr std::uint8_t kModexVersion = 2;
inline constexpr std::size_t kModexHeader = 4 + plugin::common::auth::kKeySize;

std::vector<std::uint8_t> encode_modex(std::span<const PublishedAddr> addrs, std::uint16_t flags,
                                       const plugin::common::auth::Key& key);
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
