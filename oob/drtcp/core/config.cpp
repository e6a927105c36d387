#include "config.hpp"

#include <charconv>
#include <string_view>

namespace oob::drtcp::core {

namespace {

bool parse_port(std::string_view text, std::uint16_t& out) {
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v == 0 || v > 65535)
        return false;
    out = static_cast<std::uint16_t>(v);
    return true;
}

}  // namespace

std::string validate(const RawParams& raw, Config& out) {
    Config c;
    const std::string_view inc = raw.if_include != nullptr ? raw.if_include : "";
    const std::string_view exc = raw.if_exclude != nullptr ? raw.if_exclude : "";
    if (!inc.empty() && !exc.empty())
        return "oob_drtcp_if_include and oob_drtcp_if_exclude are mutually exclusive";
    if (auto l = plugin::common::parse_if_list(inc); l)
        c.include = *l;
    else
        return "oob_drtcp_if_include: " + std::string(l.error().message);
    if (auto l = plugin::common::parse_if_list(exc); l)
        c.exclude = *l;
    else
        return "oob_drtcp_if_exclude: " + std::string(l.error().message);
    c.include_set = !c.include.empty();
    // "port" or "first-last".
    if (const std::string_view ports = raw.static_ports != nullptr ? raw.static_ports : "";
        !ports.empty()) {
        const auto dash = ports.find('-');
        const bool ok = dash == std::string_view::npos
                            ? parse_port(ports, c.port_min) && parse_port(ports, c.port_max)
                            : parse_port(ports.substr(0, dash), c.port_min) &&
                                  parse_port(ports.substr(dash + 1), c.port_max);
        if (!ok || c.port_min > c.port_max)
            return "oob_drtcp_static_ports: want a port or a range first-last within 1..65535";
    }
    if (raw.max_msg_size_mb == 0 || raw.max_msg_size_mb > 4095)
        return "oob_drtcp_max_msg_size: 1..4095 MiB";
    c.max_msg_bytes = raw.max_msg_size_mb << 20;
    if (raw.connect_attempts == 0 || raw.connect_attempts > 1000)
        return "oob_drtcp_connect_attempts: 1..1000";
    if (raw.connect_timeout_ms == 0)
        return "oob_drtcp_connect_timeout: must be positive";
    c.retry.connect_timeout = static_cast<Micros>(raw.connect_timeout_ms) * plugin::common::kMillis;
    c.retry.retry_delay = static_cast<Micros>(raw.retry_delay_ms) * plugin::common::kMillis;
    c.retry.attempts = raw.connect_attempts;
    if (raw.keepalive_time_s > 0 && (raw.keepalive_intvl_s == 0 || raw.keepalive_probes == 0))
        return "oob_drtcp_keepalive_intvl and _probes must be positive when keepalive is on";
    if (raw.user_timeout_ms > 0 && raw.user_timeout_ms < 2000)
        return "oob_drtcp_user_timeout: 0 (off) or at least 2000 ms";
    c.user_timeout_ms = raw.user_timeout_ms;
    c.keepalive_time_s = raw.keepalive_time_s;
    c.keepalive_intvl_s = raw.keepalive_intvl_s;
    c.keepalive_probes = raw.keepalive_probes;
    c.auth = raw.auth;
    out = std::move(c);
    return {};
}

}  // namespace oob::drtcp::core
