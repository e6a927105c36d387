#include "scheduler.hpp"

#include <algorithm>

namespace pml::dr::core {

std::size_t pick_weighted(std::span<const double> weights,
                          std::span<const std::uint64_t> assigned) noexcept {
    const std::size_t n = std::min(weights.size(), assigned.size());
    const bool any_positive =
        std::any_of(weights.begin(), weights.begin() + static_cast<std::ptrdiff_t>(n),
                    [](double w) { return w > 0.0; });
    std::size_t best = 0;
    double best_load = 0.0;
    bool found = false;
    for (std::size_t i = 0; i < n; ++i) {
        // A path without weight (failed, or no bandwidth known) is used only
        // when no path has one: then all share by bytes assigned.
        if (any_positive && !(weights[i] > 0.0))
            continue;
        const double load = static_cast<double>(assigned[i]) / (any_positive ? weights[i] : 1.0);
        if (!found || load < best_load) {
            best = i;
            best_load = load;
            found = true;
        }
    }
    return best;
}

std::size_t pick_nearest(std::span<const PathRank> paths) noexcept {
    std::size_t best = kNoPath;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const PathRank& p = paths[i];
        if (!p.usable)
            continue;
        if (best == kNoPath || p.latency < paths[best].latency ||
            (p.latency == paths[best].latency && p.bandwidth > paths[best].bandwidth))
            best = i;
    }
    return best;
}

}  // namespace pml::dr::core
