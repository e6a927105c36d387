// drtcp addressing and configuration: CIDR parsing and matching, the
// include/exclude filter (mutually exclusive), the modex codec against
// hostile input, the reachability rule, and parameter validation.
#include <gtest/gtest.h>

#include <random>

#include "addr.hpp"
#include "config.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;

IpAddr ip(const char* s) {
    return *parse_ip(s);
}
LocalIf iface(const char* name, const char* addr, std::uint8_t prefix) {
    return {name, ip(addr), prefix};
}

TEST(DrtcpAddr, CidrParsingAndMatching) {
    auto c = parse_cidr("10.71.0.0/16");
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->contains(ip("10.71.200.3")));
    EXPECT_FALSE(c->contains(ip("10.72.0.1")));
    EXPECT_FALSE(c->contains(ip("fd71::1")));
    auto c6 = parse_cidr("fd71::/64");
    ASSERT_TRUE(c6.has_value());
    EXPECT_TRUE(c6->contains(ip("fd71::9")));
    EXPECT_FALSE(c6->contains(ip("fd72::9")));
    auto odd = parse_cidr("192.168.1.128/25");
    ASSERT_TRUE(odd.has_value());
    EXPECT_TRUE(odd->contains(ip("192.168.1.200")));
    EXPECT_FALSE(odd->contains(ip("192.168.1.100")));
    EXPECT_EQ(parse_cidr("10.0.0.1")->prefix, 32);
    for (const char* bad : {"10.0.0.0/33", "10.0.0/8", "10.0.0.0/", "10.0.0.0/x", "fd00::/129"})
        EXPECT_FALSE(parse_cidr(bad).has_value()) << bad;
    EXPECT_TRUE(ip("127.0.0.5").loopback());
    EXPECT_TRUE(ip("::1").loopback());
    EXPECT_TRUE(ip("fe80::1").link_local());
}

TEST(DrtcpAddr, IncludeExcludeByNameOrCidr) {
    const std::vector<LocalIf> all = {iface("lo", "127.0.0.1", 8), iface("raila", "10.71.0.1", 24),
                                      iface("railb", "10.72.0.1", 24),
                                      iface("railb", "fd72::1", 64), iface("eth0", "fe80::1", 64)};
    auto by_name =
        select_interfaces(all, *parse_if_list("raila, railb"), {}, kFamilyV4 | kFamilyV6);
    ASSERT_TRUE(by_name.has_value());
    ASSERT_EQ(by_name->size(), 2u);  // one address per interface, IPv4 preferred
    EXPECT_EQ(by_name->at(1).addr, ip("10.72.0.1"));
    auto v6_rail = select_interfaces(all, *parse_if_list("fd72::/64"), {}, kFamilyV4 | kFamilyV6);
    ASSERT_EQ(v6_rail->size(), 1u);
    EXPECT_EQ(v6_rail->at(0).addr, ip("fd72::1"));
    auto by_cidr = select_interfaces(all, *parse_if_list("10.72.0.0/16"), {}, kFamilyV4);
    ASSERT_EQ(by_cidr->size(), 1u);
    EXPECT_EQ(by_cidr->at(0).name, "railb");
    auto excl = select_interfaces(all, {}, *parse_if_list(kDefaultExclude), kFamilyV4 | kFamilyV6);
    ASSERT_EQ(excl->size(), 2u);  // loopback out, link-local never in, railb once
    auto v6 = select_interfaces(all, {}, {}, kFamilyV6);
    EXPECT_EQ(v6->size(), 1u);
    auto both = select_interfaces(all, *parse_if_list("raila"), *parse_if_list("railb"), 3);
    EXPECT_FALSE(both.has_value());
    EXPECT_FALSE(parse_if_list("eth0,10.0.0.0/99").has_value());
}

TEST(DrtcpAddr, ModexRoundTripAndHostileBlobs) {
    std::vector<PublishedAddr> addrs = {{ip("10.71.0.3"), 24, 4000, 2},
                                        {ip("fd72::3"), 64, 4001, 1}};
    plugin::common::auth::Key key{};
    for (std::size_t i = 0; i < key.size(); ++i)
        key[i] = static_cast<std::uint8_t>(i * 7 + 1);
    const auto blob = encode_modex(addrs, kModexPut, key);
    auto back = decode_modex(blob);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->addrs, addrs);
    EXPECT_EQ(back->flags, kModexPut);
    EXPECT_EQ(back->key, key);
    auto flags = blob;
    flags[2] = 0x80;  // an unknown flag
    EXPECT_EQ(decode_modex(flags).error().code, ErrorCode::BadField);
    // Every truncation and every single-byte corruption: an error or a
    // decoded list, never a crash (run under the sanitizers too).
    for (std::size_t n = 0; n < blob.size(); ++n)
        EXPECT_FALSE(decode_modex(std::span(blob).first(n)).has_value()) << n;
    std::mt19937_64 rng(3);
    for (int i = 0; i < 3000; ++i) {
        auto bad = blob;
        bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        (void)decode_modex(bad);
    }
    auto version = blob;
    version[0] = 1;  // the old blob, without a key
    EXPECT_EQ(decode_modex(version).error().code, ErrorCode::BadVersion);
    auto port0 = blob;
    port0[kModexHeader + 2] = port0[kModexHeader + 3] = 0;
    EXPECT_EQ(decode_modex(port0).error().code, ErrorCode::BadField);
    auto family = blob;
    family[kModexHeader] = 5;
    EXPECT_EQ(decode_modex(family).error().code, ErrorCode::BadField);
}

TEST(DrtcpAddr, ReachabilityPrefersSameSubnetAndSpreadsRails) {
    const std::vector<LocalIf> locals = {iface("raila", "10.71.0.1", 24),
                                         iface("railb", "10.72.0.1", 24)};
    const std::vector<PublishedAddr> remotes = {{ip("10.72.0.2"), 24, 1, 1},
                                                {ip("10.71.0.2"), 24, 1, 1}};
    EXPECT_EQ(pair_addresses(locals, remotes, false), (std::vector<int>{1, 0}));
    // No common subnet: routed, and each local takes a different address.
    const std::vector<PublishedAddr> far = {{ip("192.0.2.9"), 24, 1, 1},
                                            {ip("198.51.100.9"), 24, 1, 1}};
    const auto p = pair_addresses(locals, far, false);
    EXPECT_NE(p[0], p[1]);
    // Uneven interface counts: both sides agree on one pair, the extra
    // interface gets no partner (a second connection would be refused).
    const std::vector<LocalIf> two = {iface("a", "10.0.0.1", 24), iface("b", "10.1.0.1", 24)};
    const std::vector<PublishedAddr> one = {{ip("10.0.0.2"), 24, 1, 1}};
    EXPECT_EQ(pair_addresses(two, one, false), (std::vector<int>{0, -1}));
    const std::vector<LocalIf> single = {iface("x", "10.0.0.2", 24)};
    const std::vector<PublishedAddr> pub_two = {{ip("10.0.0.1"), 24, 1, 1},
                                                {ip("10.1.0.1"), 24, 1, 1}};
    EXPECT_EQ(pair_addresses(single, pub_two, false), (std::vector<int>{0}));
    // Loopback only within a node; never across families.
    const std::vector<LocalIf> lo = {iface("lo", "127.0.0.1", 8)};
    const std::vector<PublishedAddr> rlo = {{ip("127.0.0.1"), 8, 1, 1}};
    EXPECT_EQ(pair_addresses(lo, rlo, true), (std::vector<int>{0}));
    EXPECT_EQ(pair_addresses(lo, rlo, false), (std::vector<int>{-1}));
    EXPECT_EQ(reach_score(locals[0], {ip("fd71::2"), 64, 1, 1}, false), 0);
    EXPECT_EQ(reach_score(locals[0], {ip("127.0.0.1"), 8, 1, 1}, true), 0);
}

TEST(DrtcpConfig, ValidationNamesTheParameter) {
    Config c;
    RawParams r = default_params();
    EXPECT_EQ(validate(r, c), "");
    EXPECT_FALSE(c.include_set);
    EXPECT_TRUE(c.exclude.matches(iface("lo", "127.0.0.1", 8)));
    r.if_include = "eth0";
    r.if_exclude = "lo";
    EXPECT_NE(validate(r, c).find("mutually exclusive"), std::string::npos);
    r.if_exclude = "";
    EXPECT_EQ(validate(r, c), "");
    EXPECT_TRUE(c.include_set);
    r = default_params();
    r.links = 0;
    EXPECT_NE(validate(r, c).find("links"), std::string::npos);
    r = default_params();
    r.faults.drop = 1.5;
    EXPECT_NE(validate(r, c).find("fault"), std::string::npos);
    r = default_params();
    r.port_min_v4 = 65000;
    r.port_range_v4 = 1000;
    EXPECT_NE(validate(r, c).find("port"), std::string::npos);
    r = default_params();
    r.if_family = 5;
    EXPECT_NE(validate(r, c).find("if_family"), std::string::npos);
}

}  // namespace

#include "regions.hpp"

namespace {

TEST(DrtcpRegions, PutTargetsMustLieInsideALiveRegion) {
    btl::drtcp::core::RegionTable t(42);
    const std::uint64_t a = t.add(1000, 100);
    const std::uint64_t b = t.add(5000, 10);
    EXPECT_NE(a, b);
    EXPECT_NE(a, 0u);
    EXPECT_TRUE(t.covers(a, 1000, 100));
    EXPECT_TRUE(t.covers(a, 1050, 50));
    EXPECT_FALSE(t.covers(a, 1050, 51));
    EXPECT_FALSE(t.covers(a, 999, 2));
    EXPECT_FALSE(t.covers(b, 1000, 1));             // another region's address
    EXPECT_FALSE(t.covers(a ^ 1, 1000, 1));         // a key never handed out
    EXPECT_FALSE(t.covers(a, UINT64_MAX - 5, 10));  // wrap-around
    EXPECT_FALSE(t.covers(a, 1010, UINT64_MAX));
    EXPECT_TRUE(t.remove(a));
    EXPECT_FALSE(t.covers(a, 1000, 1));  // deregistered
    EXPECT_FALSE(t.remove(a));
    EXPECT_EQ(t.size(), 1u);
}

}  // namespace
