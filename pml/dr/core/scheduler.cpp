#include "scheduler.hpp"

#include <algorithm>

namespace pml::dr::core {

std::size_t pick_weighted(std::span<const double> weights,
                          std::span<const std::uint64_t> assigned) noexcept {
    constexpr double kTinyWeight = 1e-6;
    const std::size_t n = std::min(weights.size(), assigned.size());
    std::size_t best = 0;
    double best_load = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double w = weights[i] > 0.0 ? weights[i] : kTinyWeight;
        const double load = static_cast<double>(assigned[i]) / w;
        if (i == 0 || load < best_load) {
            best = i;
            best_load = load;
        }
    }
    return best;
}

}  // namespace pml::dr::core
