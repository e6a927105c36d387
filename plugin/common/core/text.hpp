// Small text helpers for parameter values.
#pragma once
#include <string_view>
#include <vector>

namespace plugin::common {

// The items of a comma-separated list, spaces around them trimmed, empty
// items skipped ("eth0, 10.0.0.0/8,," -> {"eth0", "10.0.0.0/8"}).
inline std::vector<std::string_view> split_list(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const auto comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        while (!item.empty() && item.front() == ' ')
            item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ')
            item.remove_suffix(1);
        if (!item.empty())
            out.push_back(item);
    }
    return out;
}

// Whether an MCA selection value (`--mca <framework> a,b`) is an include
// list naming `component`. An exclude list (^a,b) never names what it wants.
inline bool selection_names(const char* selection, std::string_view component) {
    if (selection == nullptr || selection[0] == '^')
        return false;
    for (const std::string_view item : split_list(selection))
        if (item == component)
            return true;
    return false;
}

}  // namespace plugin::common
