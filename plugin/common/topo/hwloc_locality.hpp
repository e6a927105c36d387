// Reads a device's locality from an hwloc topology: the one Open MPI
// discovered (opal_hwloc_topology) in the components, one loaded from an XML
// file in the unit tests. Nothing here discovers a topology or reads the
// system: it walks the objects it is given.
#pragma once
#include <hwloc.h>

#include <string>
#include <string_view>

#include "topo_weight.hpp"

namespace plugin::common::topo {

// When the topology has no NUMA distance matrix, a device on another NUMA
// node is this much farther than a local one (ACPI's default SLIT: 20 / 10).
inline constexpr double kDefaultRemoteRatio = 2.0;

// Where a module's device is, seen from a process bound to `cpuset` (null
// or empty: not bound, the whole machine). The device is found by its OS
// device name (a network interface "eth2", an OpenFabrics device "mlx5_0")
// or, failing that, by PCI bus id ("0000:81:00.0"; may be empty).
DeviceLocality locate_device(hwloc_topology_t topology, hwloc_const_cpuset_t cpuset,
                             std::string_view osdev_name, std::string_view pci_busid = {});

// The OS device behind a UCX device name: "mlx5_0:1" -> "mlx5_0" (the port
// goes), "eth0" -> "eth0"; empty for devices that are no hardware ("memory",
// "cma", "self", "lo").
std::string ucx_device_osdev(std::string_view ucx_device);

}  // namespace plugin::common::topo
