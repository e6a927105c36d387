// Topology-aware BTL weights, the Open MPI side: the process's binding and
// Open MPI's own hwloc topology (opal_hwloc_topology, discovered once by the
// runtime; never a discovery of ours), a device's locality in it
// (topo/hwloc_locality.hpp) and the module's latency and bandwidth set from
// core/topo_weight.hpp. Shared by btl drtcp and btl drucx.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "log.hpp"
#include "topo_weight.hpp"

struct mca_base_component_2_1_0_t;
struct mca_btl_base_module_t;

namespace plugin::common {

// The component's topology parameters: <fw>_<name>_numa_weights (on/off)
// and the read-only <fw>_<name>_numa_weights_chosen (what init chose, per
// module; ompi_info lists it at level 9). Returns the number that failed to
// register.
struct TopoParams {
    bool enabled = true;
    char* chosen = nullptr;  // the variable's storage (Open MPI's string)
};
int register_topo_params(const mca_base_component_2_1_0_t* component, TopoParams& p) noexcept;

// A device, as a module names it.
struct TopoDevice {
    std::string label;      // for the log ("eth0", "tcp/eth0", "posix/memory")
    std::string osdev;      // hwloc OS device name; empty: no hardware device
    std::string pci_busid;  // when the OS device is not in the topology ("0000:81:00.0")
    std::uint64_t link_mbps = 0;
};

// Sets m's btl_latency and btl_bandwidth from its configured values and the
// device's locality (unchanged when off, or where the topology says
// nothing), logs one line at Info level, and appends it to p.chosen.
topo::Weights apply_topo_weights(mca_btl_base_module_t& m, const TopoDevice& dev, TopoParams& p,
                                 LogSink& log) noexcept;

}  // namespace plugin::common
