#include "fault.hpp"

#include <algorithm>

namespace plugin::common {

namespace {
double clamp01(double p) noexcept {
    return p > 0.0 ? std::min(p, 1.0) : 0.0;  // NaN reads as 0
}
}  // namespace

bool validate_faults(const BtlFaultParams& raw, BtlFaults& out) noexcept {
    if (!is_probability(raw.drop) || !is_probability(raw.corrupt))
        return false;
    out = {raw.drop, raw.corrupt, raw.fail_after, raw.seed};
    return true;
}

FaultInjector::FaultInjector(double drop, double corrupt, double duplicate,
                             std::uint64_t seed) noexcept
    : drop_(clamp01(drop)),
      corrupt_(clamp01(corrupt)),
      dup_(clamp01(duplicate)),
      enabled_(drop_ > 0 || corrupt_ > 0 || dup_ > 0),
      state_(seed) {}

std::uint64_t FaultInjector::bits() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double FaultInjector::uniform() noexcept {
    return static_cast<double>(bits() >> 11) * 0x1.0p-53;
}

FaultPlan FaultInjector::next(std::size_t frame_len) noexcept {
    FaultPlan plan;
    if (!enabled())
        return plan;
    if (drop_ > 0 && uniform() < drop_) {
        plan.drop = true;
        ++counters_.dropped;
        return plan;
    }
    if (corrupt_ > 0 && frame_len > 0 && uniform() < corrupt_) {
        plan.corrupt = true;
        plan.byte = static_cast<std::size_t>(bits() % frame_len);
        plan.mask = static_cast<std::uint8_t>(1u << (bits() % 8));
        ++counters_.corrupted;
    }
    if (dup_ > 0 && uniform() < dup_) {
        plan.duplicate = true;
        ++counters_.duplicated;
    }
    return plan;
}

}  // namespace plugin::common
