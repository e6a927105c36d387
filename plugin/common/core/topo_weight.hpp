// Topology-aware path weights: where a BTL module's network device sits
// relative to the process (its NUMA distance) and the device's link speed,
// mapped to the module's latency and bandwidth weights (btl_latency,
// btl_bandwidth), which the BML and the PMLs read: the lowest latency carries
// first frags (eager), bandwidth splits long messages.
//
// Pure: the locality comes from the hwloc reader (plugin/common/topo) and the
// link speed from the glue. Where the topology says nothing (one NUMA node,
// an unbound process, no PCI locality for the device) the weights are the
// configured ones, unchanged.
#pragma once
#include <cstdint>
#include <string>

namespace plugin::common::topo {

// What the topology says about one device, seen from this process.
enum class Locality : std::uint8_t {
    Unknown,     // no PCI device or no NUMA affinity for it (virtual, shared memory, no info)
    SingleNuma,  // the machine has one NUMA node: every device is as near as any other
    Unbound,     // the process may run on every NUMA node: no device is nearer
    Near,        // the device hangs off the process's NUMA node(s)
    Far,         // the device is on another NUMA node (distance_ratio > 1)
};

const char* locality_name(Locality l) noexcept;

struct DeviceLocality {
    Locality kind = Locality::Unknown;
    // NUMA distance from the process's node(s) to the device's, over the
    // local distance (SLIT: 21 / 10 = 2.1); 1 when near; averaged over the
    // process's nodes when it is bound to several.
    double distance_ratio = 1.0;
    // For the log: where the device and the process are ("NUMA 1 (distance 21/10)").
    std::string detail;
};

struct Weights {
    std::uint32_t latency = 0;    // btl_latency (relative; lower is preferred for eager)
    std::uint32_t bandwidth = 0;  // btl_bandwidth (Mbps; relative share of long messages)
    friend bool operator==(const Weights&, const Weights&) = default;
};

// Link speed (Mbps) at or above which crossing to a far NUMA node costs the
// full distance ratio in bandwidth; slower links lose proportionally less
// (the inter-socket link is not what limits them), never less than
// kMinCrossCost of it. Unknown speed (0): the full cost.
inline constexpr std::uint64_t kFullCrossCostMbps = 10000;
inline constexpr double kMinCrossCost = 0.25;
// Ratios beyond this are treated as this (a bogus matrix must not zero a path).
inline constexpr double kMaxDistanceRatio = 8.0;

// The module's weights given its configured ones (`base`: btl_<name>_latency
// and _bandwidth), the device's locality and its link speed (0: unknown).
//   Unknown, SingleNuma, Unbound, Near: base, unchanged.
//   Far, ratio r, cost c = clamp(speed / kFullCrossCostMbps, kMinCrossCost, 1)
//   (1 when the speed is unknown):
//     latency   = ceil(base.latency * r), at least base.latency + 1
//     bandwidth = base.bandwidth / (1 + (r - 1) * c), at least 1 when base > 0
// A far device thus always ranks below a near one of the same base weights:
// behind it for eager frames, a smaller share of long messages.
Weights topo_weights(const Weights& base, const DeviceLocality& loc,
                     std::uint64_t link_mbps) noexcept;

// One line for the log: "eth2: far (NUMA 1, distance 21/10), 25000 Mbps:
// latency 100 -> 210, bandwidth 1000 -> 476".
std::string describe(const char* device, const DeviceLocality& loc, std::uint64_t link_mbps,
                     const Weights& before, const Weights& after);

}  // namespace plugin::common::topo
