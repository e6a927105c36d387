#include "addr.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "text.hpp"
#include "wire_io.hpp"

namespace btl::drtcp::core {

using plugin::common::ByteReader;
using plugin::common::ByteWriter;
using plugin::common::ErrorCode;
using plugin::common::fail;

bool IpAddr::loopback() const noexcept {
    if (family == 4)
        return bytes[0] == 127;
    static constexpr std::array<std::uint8_t, 16> kOne{0, 0, 0, 0, 0, 0, 0, 0,
                                                       0, 0, 0, 0, 0, 0, 0, 1};
    return bytes == kOne;
}

bool IpAddr::link_local() const noexcept {
    if (family == 4)
        return bytes[0] == 169 && bytes[1] == 254;
    return bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80;
}

std::string IpAddr::str() const {
    char buf[INET6_ADDRSTRLEN] = {};
    if (inet_ntop(family == 4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof buf) == nullptr)
        return "?";
    return buf;
}

Result<IpAddr> parse_ip(std::string_view text) {
    const std::string s(text);
    IpAddr a;
    if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
        a.family = 4;
        return a;
    }
    if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
        a.family = 6;
        return a;
    }
    return fail(ErrorCode::InvalidArgument, "not an IPv4 or IPv6 address");
}

bool Cidr::contains(const IpAddr& a) const noexcept {
    if (a.family != addr.family)
        return false;
    const unsigned full = prefix / 8;
    if (!std::equal(a.bytes.begin(), a.bytes.begin() + full, addr.bytes.begin()))
        return false;
    const unsigned rest = prefix % 8;
    if (rest == 0)
        return true;
    const auto mask = static_cast<std::uint8_t>(0xFF << (8 - rest));
    return (a.bytes[full] & mask) == (addr.bytes[full] & mask);
}

Result<Cidr> parse_cidr(std::string_view text) {
    const auto slash = text.find('/');
    auto ip = parse_ip(text.substr(0, slash));
    if (!ip)
        return fail(ip.error());
    Cidr c{*ip, static_cast<std::uint8_t>(ip->size() * 8)};
    if (slash == std::string_view::npos)
        return c;
    const std::string_view len = text.substr(slash + 1);
    if (len.empty() || len.size() > 3 ||
        !std::all_of(len.begin(), len.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        return fail(ErrorCode::InvalidArgument, "CIDR prefix is not a number");
    const int n = std::stoi(std::string(len));
    if (n > static_cast<int>(ip->size() * 8))
        return fail(ErrorCode::OutOfRange, "CIDR prefix longer than the address");
    c.prefix = static_cast<std::uint8_t>(n);
    return c;
}

bool IfList::matches(const LocalIf& i) const noexcept {
    return std::find(names.begin(), names.end(), i.name) != names.end() ||
           std::any_of(cidrs.begin(), cidrs.end(),
                       [&](const Cidr& c) { return c.contains(i.addr); });
}

Result<IfList> parse_if_list(std::string_view text) {
    IfList list;
    for (const std::string_view item : plugin::common::split_list(text)) {
        // A name never starts with a digit or holds ':' or '/'; an address does.
        const bool looks_ip = (item.front() >= '0' && item.front() <= '9') ||
                              item.find_first_of(":/") != std::string_view::npos;
        if (!looks_ip) {
            list.names.emplace_back(item);
            continue;
        }
        auto c = parse_cidr(item);
        if (!c)
            return fail(c.error());
        list.cidrs.push_back(*c);
    }
    return list;
}

Result<std::vector<LocalIf>> select_interfaces(std::span<const LocalIf> all, const IfList& include,
                                               const IfList& exclude, unsigned families) {
    if (!include.empty() && !exclude.empty())
        return fail(ErrorCode::InvalidArgument, "if_include and if_exclude are mutually exclusive");
    std::vector<LocalIf> out;
    for (const LocalIf& i : all) {
        const unsigned fam = i.addr.family == 4 ? kFamilyV4 : kFamilyV6;
        if ((families & fam) == 0 || (i.addr.family == 6 && i.addr.link_local()))
            continue;
        if (!include.empty() ? !include.matches(i) : exclude.matches(i))
            continue;
        // One address per interface: a second would only open a second
        // connection over the same wire. IPv4 first, then the first IPv6.
        auto same = std::find_if(out.begin(), out.end(),
                                 [&](const LocalIf& o) { return o.name == i.name; });
        if (same == out.end())
            out.push_back(i);
        else if (same->addr.family == 6 && i.addr.family == 4)
            *same = i;
    }
    return out;
}

std::vector<std::uint8_t> encode_modex(std::span<const PublishedAddr> addrs, std::uint16_t flags) {
    const std::size_t n = std::min(addrs.size(), kMaxPublished);
    std::vector<std::uint8_t> out(4 + 24 * n);
    ByteWriter w(out);
    w.u8(1);
    w.u8(static_cast<std::uint8_t>(n));
    w.u16(flags);
    for (std::size_t i = 0; i < n; ++i) {
        const PublishedAddr& a = addrs[i];
        w.u8(a.addr.family);
        w.u8(a.prefix);
        w.u16(a.port);
        w.u16(a.links);
        w.u16(0);
        w.bytes(a.addr.bytes);
    }
    return out;
}

Result<Published> decode_modex(std::span<const std::uint8_t> bytes) {
    ByteReader r(bytes);
    const std::uint8_t version = r.u8();
    const std::uint8_t count = r.u8();
    Published pub;
    pub.flags = r.u16();
    if (!r.ok())
        return fail(r.error());
    if (version != 1)
        return fail(ErrorCode::BadVersion, "drtcp modex version");
    if ((pub.flags & ~kModexPut) != 0)
        return fail(ErrorCode::BadField, "drtcp modex flags");
    if (count > kMaxPublished || bytes.size() != 4 + 24 * std::size_t{count})
        return fail(ErrorCode::BadLength, "drtcp modex length");
    std::vector<PublishedAddr>& out = pub.addrs;
    out.resize(count);
    for (PublishedAddr& a : out) {
        a.addr.family = r.u8();
        a.prefix = r.u8();
        a.port = r.u16();
        a.links = r.u16();
        r.expect_zero(2);
        const auto raw = r.bytes(16);
        if (!r.ok())
            return fail(r.error());
        std::copy(raw.begin(), raw.end(), a.addr.bytes.begin());
        if (a.addr.family != 4 && a.addr.family != 6)
            return fail(ErrorCode::BadField, "drtcp modex address family");
        if (a.prefix > a.addr.size() * 8 || a.port == 0 || a.links == 0)
            return fail(ErrorCode::BadField, "drtcp modex prefix, port or links");
        if (a.addr.family == 4 &&
            std::any_of(a.addr.bytes.begin() + 4, a.addr.bytes.end(), [](auto b) { return b; }))
            return fail(ErrorCode::BadField, "drtcp modex IPv4 padding");
    }
    return pub;
}

int reach_score(const LocalIf& local, const PublishedAddr& remote, bool same_node) noexcept {
    if (local.addr.family != remote.addr.family)
        return 0;
    const bool local_lo = local.addr.loopback();
    const bool remote_lo = remote.addr.loopback();
    if (local_lo || remote_lo)
        return (local_lo && remote_lo && same_node) ? 3 : 0;
    if (Cidr{local.addr, local.prefix}.contains(remote.addr))
        return 3;
    if (local.addr.link_local() || remote.addr.link_local())
        return 0;
    return 1;
}

std::vector<int> pair_addresses(std::span<const LocalIf> locals,
                                std::span<const PublishedAddr> remotes, bool same_node) {
    struct Candidate {
        int score;
        std::size_t local;
        std::size_t remote;
    };
    std::vector<Candidate> cands;
    for (std::size_t l = 0; l < locals.size(); ++l)
        for (std::size_t r = 0; r < remotes.size(); ++r)
            if (const int score = reach_score(locals[l], remotes[r], same_node); score > 0)
                cands.push_back({score, l, r});
    // Best score first; among equals the lower address in the sorted order of
    // the two addresses, which both sides see the same way.
    const auto key = [&](const Candidate& c) {
        const auto& a = locals[c.local].addr.bytes;
        const auto& b = remotes[c.remote].addr.bytes;
        return std::make_pair(std::min(a, b), std::max(a, b));
    };
    std::stable_sort(cands.begin(), cands.end(), [&](const Candidate& x, const Candidate& y) {
        if (x.score != y.score)
            return x.score > y.score;
        return key(x) < key(y);
    });
    std::vector<int> out(locals.size(), -1);
    std::vector<bool> taken(remotes.size(), false);
    for (const Candidate& c : cands) {
        if (out[c.local] >= 0 || taken[c.remote])
            continue;
        out[c.local] = static_cast<int>(c.remote);
        taken[c.remote] = true;
    }
    return out;
}

}  // namespace btl::drtcp::core
