#include "mca_params.hpp"

#include "fault.hpp"
#include "ompi_prelude.hpp"

namespace plugin::common {

std::array<ParamSpec, 4> btl_fault_specs(BtlFaultParams& p) noexcept {
    const BtlFaultParams d;
    return {
        ParamSpec{"fault_drop",
                  "Testing: probability (0..1) that an arriving frame is dropped (its sender saw "
                  "it sent)",
                  ParamType::Double, &p.drop, 0, d.drop},
        ParamSpec{"fault_corrupt",
                  "Testing: probability (0..1) that an arriving frame gets one bit flipped",
                  ParamType::Double, &p.corrupt, 0, d.corrupt},
        ParamSpec{"fault_fail_after",
                  "Testing: after this many frames sent the module dies as if its network "
                  "were gone (0: never)",
                  ParamType::Unsigned, &p.fail_after, d.fail_after},
        ParamSpec{"fault_seed", "Testing: seed of the fault injection (runs replay exactly)",
                  ParamType::Unsigned, &p.seed, d.seed},
    };
}

namespace {

mca_base_var_type_t to_var_type(ParamType type) noexcept {
    switch (type) {
        case ParamType::Int:
            return MCA_BASE_VAR_TYPE_INT;
        case ParamType::Unsigned:
            return MCA_BASE_VAR_TYPE_UNSIGNED_INT;
        case ParamType::SizeT:
            return MCA_BASE_VAR_TYPE_SIZE_T;
        case ParamType::Bool:
            return MCA_BASE_VAR_TYPE_BOOL;
        case ParamType::Double:
            return MCA_BASE_VAR_TYPE_DOUBLE;
        case ParamType::String:
            return MCA_BASE_VAR_TYPE_STRING;
        case ParamType::Enum:
            return MCA_BASE_VAR_TYPE_INT;
    }
    return MCA_BASE_VAR_TYPE_INT;
}

void store_default(const ParamSpec& p) noexcept {
    switch (p.type) {
        case ParamType::Int:
        case ParamType::Enum:
            *static_cast<int*>(p.storage) = static_cast<int>(p.int_default);
            break;
        case ParamType::Unsigned:
            *static_cast<unsigned*>(p.storage) = static_cast<unsigned>(p.int_default);
            break;
        case ParamType::SizeT:
            *static_cast<std::size_t*>(p.storage) = static_cast<std::size_t>(p.int_default);
            break;
        case ParamType::Bool:
            *static_cast<bool*>(p.storage) = p.int_default != 0;
            break;
        case ParamType::Double:
            *static_cast<double*>(p.storage) = p.double_default;
            break;
        case ParamType::String:
            // The MCA base takes ownership semantics of string storage: it
            // copies the default and frees/replaces on set; hand it a const default.
            *static_cast<const char**>(p.storage) = p.string_default;
            break;
    }
}

mca_base_var_enum_t* make_enum(const mca_base_component_2_1_0_t* component,
                               const ParamSpec& p) noexcept {
    if (p.type != ParamType::Enum || p.enum_values == nullptr)
        return nullptr;
    // mca_base_var_enum_create copies the strings; the value array must be
    // terminated by {0, NULL}. ParamEnumValue has the same shape.
    static_assert(sizeof(ParamEnumValue) == sizeof(mca_base_var_enum_value_t));
    char name[128];
    snprintf(name, sizeof name, "%s_%s_%s", component->mca_type_name, component->mca_component_name,
             p.name);
    mca_base_var_enum_t* e = nullptr;
    if (mca_base_var_enum_create(name,
                                 reinterpret_cast<const mca_base_var_enum_value_t*>(p.enum_values),
                                 &e) != OPAL_SUCCESS) {
        return nullptr;
    }
    return e;
}

}  // namespace

int register_params(const mca_base_component_2_1_0_t* component,
                    std::span<const ParamSpec> params) noexcept {
    int failures = 0;
    for (const ParamSpec& p : params) {
        store_default(p);
        mca_base_var_enum_t* enumerator = make_enum(component, p);
        const int level = p.info_level < 1 ? 1 : (p.info_level > 9 ? 9 : p.info_level);
        const int idx = mca_base_component_var_register(
            component, p.name, p.help, to_var_type(p.type), enumerator, 0,
            static_cast<mca_base_var_flag_t>(0),
            static_cast<mca_base_var_info_lvl_t>(OPAL_INFO_LVL_1 + level - 1),
            MCA_BASE_VAR_SCOPE_READONLY, p.storage);
        if (enumerator != nullptr)
            OBJ_RELEASE(enumerator);
        if (idx < 0)
            ++failures;
    }
    return failures;
}

}  // namespace plugin::common
