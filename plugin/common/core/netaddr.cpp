#include "netaddr.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "text.hpp"

namespace plugin::common {

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
    for (const std::string_view item : split_list(text)) {
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

}  // namespace plugin::common
