// Table-driven MCA parameter registration. A component declares each of its
// parameters once, in one table (name, help, type, storage, default); one call
// registers the lot with Open MPI so ompi_info lists them with help text.
#pragma once
#include <array>
#include <cstddef>
#include <span>

// Open MPI's mca_base_component_t is a typedef of this struct.
struct mca_base_component_2_1_0_t;

namespace plugin::common {

enum class ParamType { Int, Unsigned, SizeT, Bool, Double, String, Enum };

// Enum-valued parameters (e.g. csum=auto|always|never) take a list ending in
// {0, nullptr}; storage is an int holding the chosen value.
struct ParamEnumValue {
    int value;
    const char* name;
};

struct ParamSpec {
    const char* name;  // without the "<fw>_<component>_" prefix
    const char* help;  // says what it does; never restates the default
    ParamType type;
    void* storage;  // int*, unsigned*, size_t*, bool*, double*, char** (string)
    // Default value, by type. Written into storage before registration.
    long long int_default = 0;
    double double_default = 0.0;
    const char* string_default = nullptr;
    const ParamEnumValue* enum_values = nullptr;
    int info_level = 4;  // OPAL_INFO_LVL_1..9 as 1..9
};

struct BtlFaultParams;

// The four btl_<name>_fault_* parameters (testing only), stored in `p`.
std::array<ParamSpec, 4> btl_fault_specs(BtlFaultParams& p) noexcept;

// Registers every entry; returns the number that failed (0 on success).
int register_params(const mca_base_component_2_1_0_t* component,
                    std::span<const ParamSpec> params) noexcept;

}  // namespace plugin::common
