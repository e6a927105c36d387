// Table-driven MCA parameter registration. A component declares each of its
// parameters once, in one table (name, help, type, storage, default); one call
// registers the lot with Open MPI so ompi_info lists them with help text.
//
// Bad values: Open MPI reads junk in a numeric parameter as 0 (and an enum
// it cannot read makes the whole component vanish, "component not found").
// So every non-string parameter is registered as a string and parsed strictly
// by parse_param (core/param_parse.hpp); a value that does not parse leaves
// the default in storage and is remembered. When the component is selected,
// exit_on_bad_params reports it - one line naming the parameter and the value -
// and ends the process, so mpirun exits non-zero at once.
#pragma once
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "param_parse.hpp"

// Open MPI's mca_base_component_t is a typedef of this struct.
struct mca_base_component_2_1_0_t;

namespace plugin::common {

enum class ParamType { Int, Unsigned, SizeT, Bool, Double, String, Enum };

// Enum-valued parameters (e.g. csum=auto|always|never) take a ParamEnumValue
// list ending in {0, nullptr} (param_parse.hpp); storage is an int holding
// the chosen value.

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
    int info_level = 4;                  // OPAL_INFO_LVL_1..9 as 1..9
    ParamRange range = ParamRange::Any;  // e.g. Probability for fault_* parameters
};

struct BtlFaultParams;

// The four btl_<name>_fault_* parameters (testing only), stored in `p`.
std::array<ParamSpec, 4> btl_fault_specs(BtlFaultParams& p) noexcept;

// Registers every entry; returns the number that failed to register (0 on
// success). A value that does not parse is not a registration failure: the
// component must stay loadable so that it can say what is wrong when selected.
int register_params(const mca_base_component_2_1_0_t* component,
                    std::span<const ParamSpec> params) noexcept;

// The first of the component's parameters whose value did not parse, as a
// message naming the parameter and the value; empty if every value parsed.
std::string param_error(const mca_base_component_2_1_0_t* component);

// A component's validate() message ("pml_dr_eager_limit must be at least
// 1024 bytes") as one naming the value too, when the message names one of the
// component's parameters that was set: invalid value for MCA parameter
// pml_dr_eager_limit: "10" (pml_dr_eager_limit must be at least 1024 bytes).
std::string explain_invalid(const mca_base_component_2_1_0_t* component,
                            std::string_view validate_error);

// Called where a selected component turns its parameters into a Config. If a
// value did not parse, or validate_error is not empty, prints one line naming
// the parameter and the value on stderr and ends the process with status 1
// (declining selection instead would leave the user with Open MPI's
// "component not found" and the help messages Debian's 4.1.4 cannot forward).
// The first process (vpid 0: mpirun, or rank 0) reports at once; the others
// wait a moment first, so that mpirun, ending the job on the first exit,
// usually shows the message once. Returns only when everything is valid.
void exit_on_bad_params(const mca_base_component_2_1_0_t* component,
                        std::string_view validate_error) noexcept;

}  // namespace plugin::common
