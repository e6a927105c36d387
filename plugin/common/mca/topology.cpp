// Glue: includes Open MPI (the prelude first, DESIGN.md section 2).
#include "opal_prelude.hpp"

#include <array>
#include <cstdio>

#include "hwloc_locality.hpp"
#include "mca_params.hpp"
#include "series.hpp"
#include "topology.hpp"

namespace plugin::common {

namespace {

constexpr const char* kNotYet = "(chosen when the modules start, in MPI_Init)";

// Open MPI's topology: loaded by the runtime (from mpirun's XML or shared
// memory, or discovered once by it); asked for here only if nobody has yet,
// and then by Open MPI's own call, which keeps it for every later user.
hwloc_topology_t process_topology() noexcept {
    if (opal_hwloc_topology == nullptr && opal_hwloc_base_get_topology() != OPAL_SUCCESS)
        return nullptr;
    return opal_hwloc_topology;
}

// NUMA nodes the kernel has online (0: unknown). When Open MPI has not
// loaded its topology yet, is not told to take one from a file
// (hwloc_base_topo_file) and there is only one node, no topology is needed
// to know that no device is nearer than another: the runtime is not made to
// discover one (tens of ms in every process) for nothing.
int numa_nodes_online() noexcept {
    std::FILE* f = std::fopen("/sys/devices/system/node/online", "r");
    if (f == nullptr)
        return 0;
    char buf[256] = {};
    const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
    std::fclose(f);
    if (!ok)
        return 0;
    buf[std::strcspn(buf, " \n")] = '\0';  // "0-1\n": the list parser wants no newline
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    if (nodes == nullptr)
        return 0;
    const int n = hwloc_bitmap_list_sscanf(nodes, buf) == 0 ? hwloc_bitmap_weight(nodes) : 0;
    hwloc_bitmap_free(nodes);
    return n;
}

void append_chosen(TopoParams& p, const std::string& line) {
    std::string all;
    if (p.chosen != nullptr && std::strcmp(p.chosen, kNotYet) != 0)
        all = std::string(p.chosen) + "; ";
    all += line;
    // The variable system owns the string it was given; it frees it with free().
    std::free(p.chosen);
    p.chosen = strdup(all.c_str());
}

}  // namespace

int register_topo_params(const mca_base_component_2_1_0_t* component, TopoParams& p) noexcept {
    // Through the parameter table: a value that does not parse is reported
    // with the component's other bad values (mca_params.hpp).
    const std::array specs{ParamSpec{
        "numa_weights",
        "Weigh each module by the NUMA distance from this process to its network device "
        "(hwloc): a device on another NUMA node gets a higher latency and a lower bandwidth "
        "weight, so first frags go to the nearest device and long messages mostly over it. "
        "No effect on one NUMA node, for an unbound process or a device without PCI locality",
        ParamType::Bool, &p.enabled, 1, 0.0, nullptr, nullptr, 5}};
    int failed = register_params(component, specs);
    p.chosen = const_cast<char*>(kNotYet);
    if (mca_base_component_var_register(
            component, "numa_weights_chosen",
            "What the modules' locality made of their latency and bandwidth weights (read only)",
            MCA_BASE_VAR_TYPE_STRING, nullptr, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_9,
            MCA_BASE_VAR_SCOPE_CONSTANT, &p.chosen) < 0)
        ++failed;
    return failed;
}

topo::Weights apply_topo_weights(mca_btl_base_module_t& m, const TopoDevice& dev, TopoParams& p,
                                 LogSink& log) noexcept {
    const topo::Weights before{m.btl_latency, m.btl_bandwidth};
    topo::Weights after = before;
    try {
        std::string line;
        if (!p.enabled) {
            line = dev.label + ": numa_weights off: latency " + std::to_string(before.latency) +
                   ", bandwidth " + std::to_string(before.bandwidth) + " (unchanged)";
        } else {
            topo::DeviceLocality loc;
            if (dev.osdev.empty() && dev.pci_busid.empty()) {
                loc.detail = "no network device";
            } else if (opal_hwloc_topology == nullptr && !topology_file_given() &&
                       numa_nodes_online() == 1) {
                loc.kind = topo::Locality::SingleNuma;
            } else if (hwloc_topology_t t = process_topology(); t == nullptr) {
                loc.detail = "no topology from Open MPI";
            } else {
                loc = topo::locate_device(t, opal_hwloc_my_cpuset, dev.osdev, dev.pci_busid);
            }
            after = topo::topo_weights(before, loc, dev.link_mbps);
            line = topo::describe(dev.label.c_str(), loc, dev.link_mbps, before, after);
        }
        m.btl_latency = after.latency;
        m.btl_bandwidth = after.bandwidth;
        logf(log, LogLevel::Info, "numa weights: %s", line.c_str());
        append_chosen(p, line);
    } catch (...) {
        m.btl_latency = before.latency;  // out of memory: today's weights
        m.btl_bandwidth = before.bandwidth;
        return before;
    }
    return after;
}

}  // namespace plugin::common
