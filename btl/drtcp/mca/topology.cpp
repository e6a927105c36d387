// btl drtcp: topology-aware module weights (issue 29). Each module's
// interface is looked up in Open MPI's hwloc topology (by name; by the PCI
// device sysfs names when hwloc does not list it), and its latency and
// bandwidth are weighed by the NUMA distance to this process and the link's
// speed (plugin/common/mca/topology.hpp). Kept apart from component.cpp:
// two one-line hooks call in.
#include <cctype>
#include <climits>
#include <fstream>
#include <string>
#include <unistd.h>

#include "btl.hpp"
#include "topology.hpp"

namespace btl::drtcp::mca {

namespace {

plugin::common::TopoParams& topo_params() noexcept {
    static plugin::common::TopoParams p;
    return p;
}

// "0000:81:00.0"
bool is_pci_busid(std::string_view s) {
    if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.')
        return false;
    for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u, 11u})
        if (std::isxdigit(static_cast<unsigned char>(s[i])) == 0)
            return false;
    return true;
}

// The PCI device under an interface in sysfs (the last PCI bus id on its
// device path: a virtio NIC sits one level below its PCI function); empty
// for virtual interfaces.
std::string sysfs_pci_busid(const std::string& ifname) {
    const std::string link = "/sys/class/net/" + ifname + "/device";
    char buf[PATH_MAX];
    char* real = ::realpath(link.c_str(), buf);
    if (real == nullptr)
        return {};
    std::string path(real);
    std::string found;
    std::size_t start = 0;
    while (start < path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos)
            end = path.size();
        const std::string_view part(path.data() + start, end - start);
        if (is_pci_busid(part))
            found = std::string(part);
        start = end + 1;
    }
    return found;
}

// The link's speed in Mbps (sysfs), 0 when unknown (down, virtual, -1).
std::uint64_t sysfs_speed_mbps(const std::string& ifname) {
    std::ifstream in("/sys/class/net/" + ifname + "/speed");
    long long v = -1;
    if (!(in >> v) || v <= 0)
        return 0;
    return static_cast<std::uint64_t>(v);
}

}  // namespace

int register_topology_params(const mca_base_component_t* component) noexcept {
    return plugin::common::register_topo_params(component, topo_params());
}

void apply_topology_weights() noexcept {
    State& s = state();
    try {
        for (Module* m : s.modules) {
            const core::LocalIf& itf = s.interfaces.at(static_cast<std::size_t>(m->interface));
            plugin::common::TopoDevice dev;
            dev.label = itf.name;
            dev.osdev = itf.name;
            dev.pci_busid = sysfs_pci_busid(itf.name);
            dev.link_mbps = sysfs_speed_mbps(itf.name);
            (void)plugin::common::apply_topo_weights(m->super, dev, topo_params(), s.log);
        }
    } catch (...) {
        // Out of memory building names: the modules keep today's weights.
    }
}

}  // namespace btl::drtcp::mca
