// btl drucx: topology-aware module weight (issue 29). The UCX device the
// module runs on ("mlx5_0:1": the OpenFabrics device; "eth0" for the tcp
// transport; "memory" for shared memory: no device) is looked up in Open
// MPI's hwloc topology, and the module's latency and bandwidth are weighed
// by its NUMA distance to this process and the link's speed
// (plugin/common/mca/topology.hpp). Two one-line hooks in component.cpp.
#include <fstream>
#include <string>

#include "btl.hpp"
#include "hwloc_locality.hpp"
#include "topology.hpp"

namespace btl::drucx::mca {

namespace {

plugin::common::TopoParams& topo_params() noexcept {
    static plugin::common::TopoParams p;
    return p;
}

// Link speed in Mbps from sysfs, 0 when unknown: a netdev's speed, or an
// InfiniBand port's rate ("100 Gb/sec (4X EDR)").
std::uint64_t link_mbps(const std::string& ucx_device, const std::string& osdev) {
    long long v = -1;
    const auto colon = ucx_device.find(':');
    if (colon == std::string::npos) {
        std::ifstream in("/sys/class/net/" + osdev + "/speed");
        if (in >> v && v > 0)
            return static_cast<std::uint64_t>(v);
        return 0;
    }
    std::ifstream in("/sys/class/infiniband/" + osdev + "/ports/" + ucx_device.substr(colon + 1) +
                     "/rate");
    double gbps = 0.0;
    if (in >> gbps && gbps > 0.0)
        return static_cast<std::uint64_t>(gbps * 1000.0);
    return 0;
}

}  // namespace

int register_topology_params(const mca_base_component_t* component) noexcept {
    return plugin::common::register_topo_params(component, topo_params());
}

void apply_topology_weights(Module& m, const adapter::TlResource& res) noexcept {
    try {
        plugin::common::TopoDevice dev;
        dev.label = res.tl + "/" + res.device;
        dev.osdev = plugin::common::topo::ucx_device_osdev(res.device);
        if (!dev.osdev.empty())
            dev.link_mbps = link_mbps(res.device, dev.osdev);
        (void)plugin::common::apply_topo_weights(m.super, dev, topo_params(), state().log);
    } catch (...) {
        // Out of memory building names: the module keeps today's weights.
    }
}

}  // namespace btl::drucx::mca
