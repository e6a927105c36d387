#include "config.hpp"

#include <cctype>
#include <cmath>
#include <string_view>

namespace btl::drucx::core {

RawParams default_params() noexcept {
    return RawParams{};
}

namespace {
bool is_probability(double p) noexcept {
    return std::isfinite(p) && p >= 0.0 && p <= 1.0;
}
bool name_char(char c) noexcept {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == ':' ||
           c == '.';
}
}  // namespace

bool parse_name_list(const char* text, std::vector<std::string>& out) {
    out.clear();
    std::string_view rest = text != nullptr ? text : "";
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        while (!item.empty() && item.front() == ' ')
            item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ')
            item.remove_suffix(1);
        if (item.empty())
            continue;
        for (const char c : item)
            if (!name_char(c))
                return false;
        if (item == "all" || item == "any") {
            out.clear();
            return true;
        }
        out.emplace_back(item);
    }
    return true;
}

std::string validate(const RawParams& raw, Config& out) {
    Config c;
    if (!parse_name_list(raw.tls, c.tls))
        return "btl_drucx_tls: names of UCX transports, comma-separated (e.g. posix,cma)";
    if (!parse_name_list(raw.devices, c.devices))
        return "btl_drucx_devices: names of UCX devices, comma-separated (e.g. memory,eth0)";
    if (raw.max_pending < 16 || raw.max_pending_peer < 4 || raw.max_pending_peer > raw.max_pending)
        return "btl_drucx_max_pending must be >= 16 and max_pending_peer in 4..max_pending";
    c.max_pending = raw.max_pending;
    c.max_pending_peer = raw.max_pending_peer;
    if (!is_probability(raw.fault_drop) || !is_probability(raw.fault_corrupt))
        return "btl_drucx_fault_drop/corrupt must be probabilities in 0..1";
    c.fault_drop = raw.fault_drop;
    c.fault_corrupt = raw.fault_corrupt;
    c.fault_fail_after = raw.fault_fail_after;
    c.fault_seed = raw.fault_seed;
    out = c;
    return {};
}

}  // namespace btl::drucx::core
