#include "config.hpp"

#include "fault.hpp"

#include <cmath>

namespace btl::drtcp::core {

using plugin::common::is_probability;

RawParams default_params() noexcept {
    return RawParams{};
}

namespace {
bool set(const char* s) noexcept {
    return s != nullptr && *s != '\0';
}
}  // namespace

std::string validate(const RawParams& raw, Config& out) {
    Config c;
    if (raw.links < 1 || raw.links > 16)
        return "btl_drtcp_links must be in 1..16";
    c.links = raw.links;
    if (set(raw.if_include) && set(raw.if_exclude))
        return "btl_drtcp_if_include and btl_drtcp_if_exclude are mutually exclusive: set one";
    if (set(raw.if_include)) {
        auto l = parse_if_list(raw.if_include);
        if (!l)
            return "btl_drtcp_if_include: bad entry (want interface names or CIDRs)";
        if (l->empty())
            return "btl_drtcp_if_include names nothing";
        c.include = *l;
        c.include_set = true;
    }
    auto ex = parse_if_list(set(raw.if_exclude) ? raw.if_exclude : kDefaultExclude);
    if (!ex)
        return "btl_drtcp_if_exclude: bad entry (want interface names or CIDRs)";
    if (!c.include_set)
        c.exclude = *ex;
    c.include_set = c.include_set || set(raw.if_exclude);
    switch (raw.if_family) {
        case static_cast<int>(FamilyChoice::Any):
            c.families = kFamilyV4 | kFamilyV6;
            break;
        case static_cast<int>(FamilyChoice::Ipv4):
            c.families = kFamilyV4;
            break;
        case static_cast<int>(FamilyChoice::Ipv6):
            c.families = kFamilyV6;
            break;
        default:
            return "btl_drtcp_if_family must be any, ipv4 or ipv6";
    }
    for (const unsigned v : {raw.port_min_v4, raw.port_min_v6})
        if (v > 65535)
            return "btl_drtcp_port_min_v4/v6 must be a TCP port (0..65535)";
    if (raw.port_min_v4 + raw.port_range_v4 > 65536 || raw.port_min_v6 + raw.port_range_v6 > 65536)
        return "btl_drtcp_port_min + port_range must stay below 65536";
    c.port_min_v4 = static_cast<std::uint16_t>(raw.port_min_v4);
    c.port_range_v4 = static_cast<std::uint16_t>(raw.port_range_v4);
    c.port_min_v6 = static_cast<std::uint16_t>(raw.port_min_v6);
    c.port_range_v6 = static_cast<std::uint16_t>(raw.port_range_v6);
    if (raw.sndbuf < 0 || raw.rcvbuf < 0)
        return "btl_drtcp_sndbuf/rcvbuf must be >= 0 (0: kernel default)";
    c.sndbuf = raw.sndbuf;
    c.rcvbuf = raw.rcvbuf;
    c.nodelay = raw.nodelay;
    if (raw.connect_timeout_ms == 0 || raw.connect_attempts == 0)
        return "btl_drtcp_connect_timeout and connect_attempts must be positive";
    c.connect.connect_timeout = raw.connect_timeout_ms * plugin::common::kMillis;
    c.connect.attempts = raw.connect_attempts;
    c.user_timeout_ms = raw.user_timeout_ms;
    if (raw.sendq_frames < 2 || raw.sendq_frames > 65536)
        return "btl_drtcp_sendq_frames must be in 2..65536";
    c.sendq_frames = raw.sendq_frames;
    c.auth = raw.auth;
    if (!plugin::common::validate_faults(raw.faults, c.faults))
        return "btl_drtcp_fault_drop/corrupt must be probabilities in 0..1";
    out = c;
    return {};
}

}  // namespace btl::drtcp::core
