#include "addr.hpp"

#include <algorithm>

#include "wire_io.hpp"

namespace btl::drtcp::core {

using plugin::common::ByteReader;
using plugin::common::ByteWriter;
using plugin::common::ErrorCode;
using plugin::common::fail;

std::vector<std::uint8_t> encode_modex(std::span<const PublishedAddr> addrs, std::uint16_t flags,
                                       const plugin::common::auth::Key& key) {
    const std::size_t n = std::min(addrs.size(), kMaxPublished);
    std::vector<std::uint8_t> out(kModexHeader + 24 * n);
    ByteWriter w(out);
    w.u8(kModexVersion);
    w.u8(static_cast<std::uint8_t>(n));
    w.u16(flags);
    w.bytes(key);
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
    if (version != kModexVersion)
        return fail(ErrorCode::BadVersion, "drtcp modex version");
    if ((pub.flags & ~kModexPut) != 0)
        return fail(ErrorCode::BadField, "drtcp modex flags");
    if (count > kMaxPublished || bytes.size() != kModexHeader + 24 * std::size_t{count})
        return fail(ErrorCode::BadLength, "drtcp modex length");
    const auto key = r.bytes(pub.key.size());
    if (!r.ok())
        return fail(r.error());
    std::copy(key.begin(), key.end(), pub.key.begin());
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
