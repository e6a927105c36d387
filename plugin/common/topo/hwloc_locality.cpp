#include "hwloc_locality.hpp"

#include <cstdio>
#include <memory>

namespace plugin::common::topo {

namespace {

struct BitmapFree {
    void operator()(hwloc_bitmap_s* b) const noexcept { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFree>;

// The OS device (network or OpenFabrics) named `name`, else the PCI device
// at `busid`.
hwloc_obj_t find_device(hwloc_topology_t topo, std::string_view name, std::string_view busid) {
    if (!name.empty()) {
        for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o != nullptr;
             o = hwloc_get_next_osdev(topo, o)) {
            if (o->name != nullptr && name == o->name)
                return o;
        }
    }
    if (!busid.empty()) {
        const std::string id(busid);
        return hwloc_get_pcidev_by_busidstring(topo, id.c_str());
    }
    return nullptr;
}

// The NUMA distance matrix's values between two nodes (latency-like, both
// directions averaged); false when the topology has no matrix covering them.
class Distances {
  public:
    explicit Distances(hwloc_topology_t topo) : topo_(topo) {
        unsigned nr = 1;
        if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d_,
                                        HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
            nr == 0)
            d_ = nullptr;
    }
    ~Distances() {
        if (d_ != nullptr)
            hwloc_distances_release(topo_, d_);
    }
    Distances(const Distances&) = delete;
    Distances& operator=(const Distances&) = delete;

    bool get(hwloc_obj_t a, hwloc_obj_t b, double& out) const {
        if (d_ == nullptr)
            return false;
        hwloc_uint64_t ab = 0;
        hwloc_uint64_t ba = 0;
        if (hwloc_distances_obj_pair_values(d_, a, b, &ab, &ba) != 0)
            return false;
        out = (static_cast<double>(ab) + static_cast<double>(ba)) / 2.0;
        return true;
    }
    [[nodiscard]] bool present() const noexcept { return d_ != nullptr; }

  private:
    hwloc_topology_t topo_;
    hwloc_distances_s* d_ = nullptr;
};

// Distance ratio from process node p to the nearest of the device's nodes.
double ratio_to(hwloc_topology_t topo, const Distances& dist, hwloc_obj_t p,
                hwloc_const_nodeset_t dev_nodes, double& raw, double& local) {
    if (hwloc_bitmap_isset(dev_nodes, p->os_index)) {
        raw = local = 1.0;
        return 1.0;
    }
    double self = 0.0;
    const bool have_self = dist.get(p, p, self) && self > 0.0;
    double best = -1.0;
    int i = -1;
    hwloc_bitmap_foreach_begin(i, dev_nodes) {
        hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(i));
        double v = 0.0;
        if (n != nullptr && have_self && dist.get(p, n, v) && (best < 0.0 || v < best))
            best = v;
    }
    hwloc_bitmap_foreach_end();
    if (best <= 0.0) {
        raw = kDefaultRemoteRatio;
        local = 1.0;
        return kDefaultRemoteRatio;
    }
    raw = best;
    local = self;
    return best / self;
}

std::string nodes_str(hwloc_const_bitmap_t b) {
    char* s = nullptr;
    if (hwloc_bitmap_list_asprintf(&s, b) < 0 || s == nullptr)
        return "?";
    std::string out(s);
    std::free(s);
    return out;
}

}  // namespace

DeviceLocality locate_device(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset,
                             std::string_view osdev_name, std::string_view pci_busid) {
    DeviceLocality loc;
    if (topo == nullptr) {
        loc.detail = "no topology";
        return loc;
    }
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    // The NUMA nodes that tell where something is: a node local to every cpu
    // (attached to the machine: the only one of a one-node machine, CXL or
    // other memory-only nodes) is as near to one device as to another.
    Bitmap placed(hwloc_bitmap_alloc());
    if (!placed)
        return loc;
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr);
         n != nullptr; n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) {
        if (n->cpuset != nullptr && !hwloc_bitmap_isincluded(root->cpuset, n->cpuset))
            hwloc_bitmap_set(placed.get(), n->os_index);
    }
    if (hwloc_bitmap_weight(placed.get()) <= 1) {
        loc.kind = Locality::SingleNuma;
        return loc;
    }
    hwloc_obj_t dev = find_device(topo, osdev_name, pci_busid);
    if (dev == nullptr) {
        loc.detail = "device not in the topology";
        return loc;
    }
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, dev);
    Bitmap dev_nodes(hwloc_bitmap_alloc());
    Bitmap cpu_nodes(hwloc_bitmap_alloc());
    Bitmap mine(hwloc_bitmap_alloc());
    if (!dev_nodes || !cpu_nodes || !mine)
        return loc;
    if (anc != nullptr && anc->nodeset != nullptr)
        hwloc_bitmap_and(dev_nodes.get(), anc->nodeset, placed.get());
    if (hwloc_bitmap_iszero(dev_nodes.get()) ||
        hwloc_bitmap_isincluded(placed.get(), dev_nodes.get())) {
        loc.detail = "device attached to the whole machine";
        return loc;
    }
    // The process's NUMA nodes: those its cpus belong to. Unbound: it may
    // run on every node that has cpus.
    if (hwloc_cpuset_to_nodeset(topo, root->cpuset, cpu_nodes.get()) != 0)
        return loc;
    hwloc_bitmap_and(cpu_nodes.get(), cpu_nodes.get(), placed.get());
    if (cpuset == nullptr || hwloc_bitmap_iszero(cpuset) ||
        hwloc_cpuset_to_nodeset(topo, cpuset, mine.get()) != 0)
        hwloc_bitmap_zero(mine.get());
    hwloc_bitmap_and(mine.get(), mine.get(), placed.get());
    if (hwloc_bitmap_iszero(mine.get()) || hwloc_bitmap_isincluded(cpu_nodes.get(), mine.get())) {
        loc.kind = Locality::Unbound;
        loc.detail = "device on NUMA " + nodes_str(dev_nodes.get());
        return loc;
    }
    if (hwloc_bitmap_isincluded(mine.get(), dev_nodes.get())) {
        loc.kind = Locality::Near;
        loc.detail = "NUMA " + nodes_str(dev_nodes.get());
        return loc;
    }
    // Far, or partly: the ratio averaged over the process's nodes.
    const Distances dist(topo);
    double sum = 0.0;
    double raw = 0.0;
    double local = 0.0;
    int count = 0;
    int i = -1;
    hwloc_bitmap_foreach_begin(i, mine.get()) {
        hwloc_obj_t p = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(i));
        if (p != nullptr) {
            sum += ratio_to(topo, dist, p, dev_nodes.get(), raw, local);
            ++count;
        }
    }
    hwloc_bitmap_foreach_end();
    loc.distance_ratio = count > 0 ? sum / count : kDefaultRemoteRatio;
    loc.kind = loc.distance_ratio > 1.0 ? Locality::Far : Locality::Near;
    char buf[160];
    if (count == 1 && dist.present())
        std::snprintf(buf, sizeof buf, "NUMA %s, process on NUMA %s, distance %.0f/%.0f",
                      nodes_str(dev_nodes.get()).c_str(), nodes_str(mine.get()).c_str(), raw,
                      local);
    else
        std::snprintf(buf, sizeof buf, "NUMA %s, process on NUMA %s, distance ratio %.2f%s",
                      nodes_str(dev_nodes.get()).c_str(), nodes_str(mine.get()).c_str(),
                      loc.distance_ratio, dist.present() ? "" : " (no distance matrix)");
    loc.detail = buf;
    return loc;
}

std::string ucx_device_osdev(std::string_view ucx_device) {
    std::string_view d = ucx_device;
    if (const auto colon = d.find(':'); colon != std::string_view::npos)
        d = d.substr(0, colon);
    if (d.empty() || d == "memory" || d == "cma" || d == "self" || d == "lo" || d == "knem" ||
        d == "xpmem")
        return {};
    return std::string(d);
}

}  // namespace plugin::common::topo
