// What carries a BTL module's frames, as btl drucx tells pml dr: Open MPI's
// module struct has no field for it, and the one component name stands for
// either (drucx runs over shared memory or over tcp). Its module struct
// begins as a BtlModuleHead does: Open MPI's module struct, then the report.
// pml dr reads the report only from a module of a component that makes one
// and only if the magic number is right; any other BTL is judged by its name
// (pml/dr/core/trust.hpp).
#pragma once
#include "opal_prelude.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace plugin::common {

enum class BtlMedium : std::uint8_t {
    Unknown,  // not said: judge by the component's name
    Memory,   // shared memory of this node: nothing is lost, damaged, duplicated or reordered
    Network,  // a NIC or socket, or anything that may lose frames (faults injected)
};

struct BtlMediumReport {
    static constexpr std::uint64_t kMagic = 0x6472'6d65'6469'756dull;  // "drmedium"
    std::uint64_t magic = kMagic;
    BtlMedium medium = BtlMedium::Unknown;
};

// How a reporting module struct begins (`super` first: Open MPI casts
// between the two).
struct BtlModuleHead {
    mca_btl_base_module_t super;
    BtlMediumReport medium;
};

// The components whose modules begin as a BtlModuleHead.
inline bool reports_medium(const mca_btl_base_module_t* btl) noexcept {
    return std::strcmp(btl->btl_component->btl_version.mca_component_name, "drucx") == 0;
}

// What `btl` reports (Unknown: not one of ours, or it says nothing).
inline BtlMedium reported_medium(const mca_btl_base_module_t* btl) noexcept {
    if (!reports_medium(btl))
        return BtlMedium::Unknown;
    const auto* head = reinterpret_cast<const BtlModuleHead*>(btl);
    return head->medium.magic == BtlMediumReport::kMagic ? head->medium.medium : BtlMedium::Unknown;
}

}  // namespace plugin::common
