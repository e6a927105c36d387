#include "topo_weight.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace plugin::common::topo {

const char* locality_name(Locality l) noexcept {
    switch (l) {
        case Locality::Unknown:
            return "no PCI locality";
        case Locality::SingleNuma:
            return "single NUMA node";
        case Locality::Unbound:
            return "process not bound to a NUMA node";
        case Locality::Near:
            return "near";
        case Locality::Far:
            return "far";
    }
    return "?";
}

Weights topo_weights(const Weights& base, const DeviceLocality& loc,
                     std::uint64_t link_mbps) noexcept {
    if (loc.kind != Locality::Far || !(loc.distance_ratio > 1.0))
        return base;
    const double r = std::min(loc.distance_ratio, kMaxDistanceRatio);
    const double cost =
        link_mbps == 0
            ? 1.0
            : std::clamp(static_cast<double>(link_mbps) / static_cast<double>(kFullCrossCostMbps),
                         kMinCrossCost, 1.0);
    Weights w;
    // At least one more than the base (a far device never ties a near one),
    // at most UINT32_MAX (no wrap).
    constexpr double kMaxLatency = 4294967295.0;
    const double lat = std::max(std::ceil(static_cast<double>(base.latency) * r),
                                static_cast<double>(base.latency) + 1.0);
    w.latency = static_cast<std::uint32_t>(std::min(lat, kMaxLatency));
    const double bw = static_cast<double>(base.bandwidth) / (1.0 + (r - 1.0) * cost);
    w.bandwidth =
        base.bandwidth == 0 ? 0 : std::max<std::uint32_t>(1, static_cast<std::uint32_t>(bw));
    return w;
}

std::string describe(const char* device, const DeviceLocality& loc, std::uint64_t link_mbps,
                     const Weights& before, const Weights& after) {
    char speed[32] = "speed unknown";
    if (link_mbps != 0)
        std::snprintf(speed, sizeof speed, "%llu Mbps", static_cast<unsigned long long>(link_mbps));
    char buf[384];
    std::snprintf(buf, sizeof buf, "%s: %s%s%s%s, %s: latency %u -> %u, bandwidth %u -> %u%s",
                  device, locality_name(loc.kind), loc.detail.empty() ? "" : " (",
                  loc.detail.c_str(), loc.detail.empty() ? "" : ")", speed, before.latency,
                  after.latency, before.bandwidth, after.bandwidth,
                  before == after ? " (unchanged)" : "");
    return buf;
}

}  // namespace plugin::common::topo
