#include "config.hpp"

#include "fault.hpp"
#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

namespace btl::drucx::core {

using plugin::common::is_probability;

RawParams default_params() noexcept {
    return RawParams{};
}

namespace {
bool name_char(char c) noexcept {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == ':' ||
           c == '.';
}
}  // namespace

bool parse_name_list(const char* text, std::vector<std::string>& out) {
    out.clear();
    for (const std::string_view item : plugin::common::split_list(text != nullptr ? text : "")) {
        if (!std::all_of(item.begin(), item.end(), name_char))
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
    if (!plugin::common::validate_faults(raw.faults, c.faults))
        return "btl_drucx_fault_drop/corrupt must be probabilities in 0..1";
    out = c;
    return {};
}

}  // namespace btl::drucx::core
