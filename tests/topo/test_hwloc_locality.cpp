// Device locality on hand-written hwloc XML topologies (this directory):
// two_socket_two_nics.xml (NICs on each socket, SLIT 10/21), one_socket.xml,
// two_socket_no_pci.xml (no I/O objects), two_socket_memory_node.xml (a
// memory-only node, no distance matrix).
#include "hwloc_locality.hpp"

#include <gtest/gtest.h>

#include <string>

namespace plugin::common::topo {
namespace {

constexpr Weights kTcp{100, 1000};

class Topo {
  public:
    explicit Topo(const char* file) {
        const std::string path = std::string(TOPO_XML_DIR) + "/" + file;
        EXPECT_EQ(hwloc_topology_init(&t_), 0);
        EXPECT_EQ(hwloc_topology_set_xml(t_, path.c_str()), 0) << path;
        // As Open MPI loads it: PCI devices and OS devices kept.
        hwloc_topology_set_io_types_filter(t_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        EXPECT_EQ(hwloc_topology_load(t_), 0) << path;
    }
    ~Topo() { hwloc_topology_destroy(t_); }
    Topo(const Topo&) = delete;
    Topo& operator=(const Topo&) = delete;
    hwloc_topology_t get() const { return t_; }

  private:
    hwloc_topology_t t_ = nullptr;
};

// A process bound to the listed cpus (os indexes).
struct Binding {
    explicit Binding(const char* list) { hwloc_bitmap_list_sscanf(set, list); }
    ~Binding() { hwloc_bitmap_free(set); }
    Binding(const Binding&) = delete;
    Binding& operator=(const Binding&) = delete;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
};

TEST(HwlocLocality, TwoSocketsNearNicWeightedAboveFar) {
    const Topo t("two_socket_two_nics.xml");
    const Binding socket0("0-1");
    const DeviceLocality eth2 = locate_device(t.get(), socket0.set, "eth2");
    const DeviceLocality eth3 = locate_device(t.get(), socket0.set, "eth3");
    EXPECT_EQ(eth2.kind, Locality::Near) << eth2.detail;
    EXPECT_EQ(eth3.kind, Locality::Far) << eth3.detail;
    EXPECT_DOUBLE_EQ(eth3.distance_ratio, 2.1);
    EXPECT_EQ(eth3.detail, "NUMA 1, process on NUMA 0, distance 21/10");
    const Weights near = topo_weights(kTcp, eth2, 0);
    const Weights far = topo_weights(kTcp, eth3, 0);
    EXPECT_LT(near.latency, far.latency);
    EXPECT_GT(near.bandwidth, far.bandwidth);
    EXPECT_EQ(near, kTcp);
    std::printf("socket 0: %s\n          %s\n", describe("eth2", eth2, 0, kTcp, near).c_str(),
                describe("eth3", eth3, 0, kTcp, far).c_str());

    // Bound to socket 1 the roles swap.
    const Binding socket1("3");
    EXPECT_EQ(locate_device(t.get(), socket1.set, "eth2").kind, Locality::Far);
    EXPECT_EQ(locate_device(t.get(), socket1.set, "eth3").kind, Locality::Near);
}

TEST(HwlocLocality, UcxDevicesByOpenFabricsNameAndBusId) {
    const Topo t("two_socket_two_nics.xml");
    const Binding socket1("2-3");
    const DeviceLocality ib0 = locate_device(t.get(), socket1.set, ucx_device_osdev("mlx5_0:1"));
    const DeviceLocality ib1 = locate_device(t.get(), socket1.set, ucx_device_osdev("mlx5_1:1"));
    EXPECT_EQ(ib0.kind, Locality::Far);
    EXPECT_EQ(ib1.kind, Locality::Near);
    EXPECT_GT(topo_weights({1, 10000}, ib1, 100000).bandwidth,
              topo_weights({1, 10000}, ib0, 100000).bandwidth);
    // A netdev UCX names (tcp transport) and a device found by PCI bus id.
    EXPECT_EQ(locate_device(t.get(), socket1.set, ucx_device_osdev("ib1")).kind, Locality::Near);
    EXPECT_EQ(locate_device(t.get(), socket1.set, "vlan7", "0000:01:00.0").kind, Locality::Far);
}

TEST(HwlocLocality, NoLocalityOrNoBindingLeavesWeights) {
    const Topo t("two_socket_two_nics.xml");
    const Binding socket0("0");
    // Not in the topology (a virtual interface), or tied to no NUMA node.
    for (const char* dev : {"lo", "docker0", "eth9"}) {
        const DeviceLocality l = locate_device(t.get(), socket0.set, dev);
        EXPECT_EQ(l.kind, Locality::Unknown) << dev;
        EXPECT_EQ(topo_weights(kTcp, l, 0), kTcp) << dev;
    }
    // Unbound (every cpu, or no binding known): no NIC is nearer.
    const Binding all("0-3");
    for (hwloc_const_cpuset_t set :
         {static_cast<hwloc_const_cpuset_t>(all.set), static_cast<hwloc_const_cpuset_t>(nullptr)}) {
        const DeviceLocality a = locate_device(t.get(), set, "eth2");
        const DeviceLocality b = locate_device(t.get(), set, "eth3");
        EXPECT_EQ(a.kind, Locality::Unbound);
        EXPECT_EQ(topo_weights(kTcp, a, 0), topo_weights(kTcp, b, 0));
        EXPECT_EQ(topo_weights(kTcp, a, 0), kTcp);
    }
    // UCX names of no hardware.
    for (const char* d : {"memory", "cma", "self", "lo"})
        EXPECT_EQ(ucx_device_osdev(d), "") << d;
}

TEST(HwlocLocality, SingleSocketEqualWeights) {
    const Topo t("one_socket.xml");
    const Binding core0("0");
    const DeviceLocality eth0 = locate_device(t.get(), core0.set, "eth0");
    const DeviceLocality eth1 = locate_device(t.get(), core0.set, "eth1");
    EXPECT_EQ(eth0.kind, Locality::SingleNuma);
    EXPECT_EQ(eth1.kind, Locality::SingleNuma);
    EXPECT_EQ(topo_weights(kTcp, eth0, 10000), kTcp);
    EXPECT_EQ(topo_weights(kTcp, eth1, 10000), kTcp);
    std::printf("one socket: %s\n", describe("eth0", eth0, 0, kTcp, kTcp).c_str());
}

TEST(HwlocLocality, NoPciInformationFallsBack) {
    const Topo t("two_socket_no_pci.xml");
    const Binding socket0("0-1");
    for (const char* dev : {"eth2", "eth3", "mlx5_0"}) {
        const DeviceLocality l = locate_device(t.get(), socket0.set, dev, "0000:01:00.0");
        EXPECT_EQ(l.kind, Locality::Unknown) << dev;
        EXPECT_EQ(topo_weights(kTcp, l, 0), kTcp);
    }
    std::printf(
        "no PCI: %s\n",
        describe("eth2", locate_device(t.get(), socket0.set, "eth2"), 0, kTcp, kTcp).c_str());
}

TEST(HwlocLocality, BoundAcrossBothSocketsIsUnbound) {
    const Topo t("two_socket_two_nics.xml");
    // A cpu on each socket: every NUMA node is the process's, none is nearer.
    const Binding both("1-2");
    EXPECT_EQ(locate_device(t.get(), both.set, "eth2").kind, Locality::Unbound);
}

TEST(HwlocLocality, MemoryOnlyNodeAndNoDistanceMatrix) {
    const Topo t("two_socket_memory_node.xml");
    // Every cpu: unbound, although the memory-only node is not among its nodes.
    const Binding all("0-3");
    EXPECT_EQ(locate_device(t.get(), all.set, "eth2").kind, Locality::Unbound);
    // Bound to socket 0: eth3 is far at the default ratio.
    const Binding socket0("0-1");
    const DeviceLocality eth3 = locate_device(t.get(), socket0.set, "eth3");
    EXPECT_EQ(eth3.kind, Locality::Far);
    EXPECT_DOUBLE_EQ(eth3.distance_ratio, kDefaultRemoteRatio);
    EXPECT_EQ(eth3.detail, "NUMA 1, process on NUMA 0, distance ratio 2.00 (no distance matrix)");
    EXPECT_EQ(locate_device(t.get(), socket0.set, "eth2").kind, Locality::Near);
    EXPECT_EQ(topo_weights(kTcp, eth3, 0), (Weights{200, 500}));
}

TEST(HwlocLocality, NoTopology) {
    const DeviceLocality l = locate_device(nullptr, nullptr, "eth0");
    EXPECT_EQ(l.kind, Locality::Unknown);
}

}  // namespace
}  // namespace plugin::common::topo
