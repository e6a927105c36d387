#include "mca_params.hpp"

#include <unistd.h>

#include <memory>
#include <vector>

#include "fault.hpp"
#include "opal_prelude.hpp"

namespace plugin::common {

std::array<ParamSpec, 4> btl_fault_specs(BtlFaultParams& p) noexcept {
    const BtlFaultParams d;
    return {
        ParamSpec{"fault_drop",
                  "Testing: probability (0 up to, not including, 1) that an arriving frame is "
                  "dropped (its sender saw it sent)",
                  ParamType::Double, &p.drop, 0, d.drop, nullptr, nullptr, 4,
                  ParamRange::Probability},
        ParamSpec{"fault_corrupt",
                  "Testing: probability (0 up to, not including, 1) that an arriving frame gets "
                  "one bit flipped",
                  ParamType::Double, &p.corrupt, 0, d.corrupt, nullptr, nullptr, 4,
                  ParamRange::Probability},
        ParamSpec{"fault_fail_after",
                  "Testing: after this many frames sent the module dies as if its network "
                  "were gone (0: never)",
                  ParamType::Unsigned, &p.fail_after, d.fail_after},
        ParamSpec{"fault_seed", "Testing: seed of the fault injection (runs replay exactly)",
                  ParamType::Unsigned, &p.seed, d.seed},
    };
}

namespace {

// One registered parameter. For a non-string one the MCA base writes the
// user's text into `text` and we parse it into the caller's typed storage;
// for a string one only what the user gave is kept (for explain_invalid).
struct Registered {
    std::string owner;  // "<framework>_<component>": the component, by name
    std::string full_name;
    ParamKind kind = ParamKind::Int;
    ParamRange range = ParamRange::Any;
    const ParamEnumValue* enum_values = nullptr;
    void* storage = nullptr;
    ParamValue default_value;
    std::string default_text;
    char* text = nullptr;  // MCA string storage: the base strdup()s / free()s it
    int index = -1;
    bool set = false;   // the value came from somewhere other than the default
    std::string given;  // the text the user gave (when set)
    std::string error;  // bad_param_message, empty when it parsed
};

// Registration happens once per component and process, from one thread.
std::vector<std::unique_ptr<Registered>>& registry() {
    static std::vector<std::unique_ptr<Registered>> r;
    return r;
}

std::string owner_of(const mca_base_component_2_1_0_t* component) {
    std::string n = component->mca_type_name;
    n += '_';
    n += component->mca_component_name;
    return n;
}

Registered& slot_for(const mca_base_component_2_1_0_t* component, const std::string& full_name) {
    for (auto& r : registry()) {
        if (r->full_name == full_name)
            return *r;
    }
    registry().push_back(std::make_unique<Registered>());
    registry().back()->owner = owner_of(component);
    registry().back()->full_name = full_name;
    return *registry().back();
}

ParamKind kind_of(ParamType type) noexcept {
    switch (type) {
        case ParamType::Int:
            return ParamKind::Int;
        case ParamType::Unsigned:
            return ParamKind::Unsigned;
        case ParamType::SizeT:
            return ParamKind::SizeT;
        case ParamType::Bool:
            return ParamKind::Bool;
        case ParamType::Double:
            return ParamKind::Double;
        case ParamType::Enum:
            return ParamKind::Enum;
        case ParamType::String:
            break;
    }
    return ParamKind::Int;
}

ParamValue default_of(const ParamSpec& p) noexcept {
    ParamValue v;
    v.integer = p.int_default;
    v.size = static_cast<unsigned long long>(p.int_default);
    v.real = p.double_default;
    v.flag = p.int_default != 0;
    return v;
}

void store(ParamKind kind, void* storage, const ParamValue& v) noexcept {
    switch (kind) {
        case ParamKind::Int:
        case ParamKind::Enum:
            *static_cast<int*>(storage) = static_cast<int>(v.integer);
            break;
        case ParamKind::Unsigned:
            *static_cast<unsigned*>(storage) = static_cast<unsigned>(v.size);
            break;
        case ParamKind::SizeT:
            *static_cast<std::size_t*>(storage) = static_cast<std::size_t>(v.size);
            break;
        case ParamKind::Bool:
            *static_cast<bool*>(storage) = v.flag;
            break;
        case ParamKind::Double:
            *static_cast<double*>(storage) = v.real;
            break;
    }
}

std::string full_name_of(const mca_base_component_2_1_0_t* component, const char* name) {
    return owner_of(component) + '_' + name;
}

mca_base_var_info_lvl_t level_of(const ParamSpec& p) noexcept {
    const int level = p.info_level < 1 ? 1 : (p.info_level > 9 ? 9 : p.info_level);
    return static_cast<mca_base_var_info_lvl_t>(OPAL_INFO_LVL_1 + level - 1);
}

// Whether the user set the variable (environment, file, command line).
bool set_by_user(int index) noexcept {
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
    if (mca_base_var_get_value(index, nullptr, &source, nullptr) != OPAL_SUCCESS)
        return false;
    return source != MCA_BASE_VAR_SOURCE_DEFAULT;
}

int register_string(const mca_base_component_2_1_0_t* component, const ParamSpec& p) {
    // The MCA base copies the default and frees/replaces on set.
    *static_cast<const char**>(p.storage) = p.string_default;
    const int index = mca_base_component_var_register(
        component, p.name, p.help, MCA_BASE_VAR_TYPE_STRING, nullptr, 0,
        static_cast<mca_base_var_flag_t>(0), level_of(p), MCA_BASE_VAR_SCOPE_READONLY, p.storage);
    if (index < 0)
        return index;
    // Kept so that a validate() message about it can name the value given.
    Registered& r = slot_for(component, full_name_of(component, p.name));
    r.index = index;
    r.set = set_by_user(index);
    const char* text = *static_cast<const char* const*>(p.storage);
    r.given = r.set && text != nullptr ? text : "";
    r.error.clear();
    return index;
}

int register_parsed(const mca_base_component_2_1_0_t* component, const ParamSpec& p) {
    Registered& r = slot_for(component, full_name_of(component, p.name));
    r.kind = kind_of(p.type);
    r.range = p.range;
    r.enum_values = p.enum_values;
    r.storage = p.storage;
    r.default_value = default_of(p);
    r.default_text = format_param(r.kind, r.default_value, r.enum_values);
    r.set = false;
    r.given.clear();
    r.error.clear();
    store(r.kind, r.storage, r.default_value);

    std::string help = p.help;
    if (r.kind == ParamKind::Enum)
        help += " (one of: " + enum_names(r.enum_values) + ")";
    r.text = const_cast<char*>(r.default_text.c_str());  // the base strdup()s it
    r.index = mca_base_component_var_register(
        component, p.name, help.c_str(), MCA_BASE_VAR_TYPE_STRING, nullptr, 0,
        static_cast<mca_base_var_flag_t>(0), level_of(p), MCA_BASE_VAR_SCOPE_READONLY, &r.text);
    if (r.index < 0) {
        r.text = nullptr;
        return r.index;
    }
    if (!set_by_user(r.index))
        return r.index;
    r.set = true;
    // An empty value reaches us as NULL (the base stores no empty strings).
    r.given = r.text != nullptr ? r.text : "";
    const ParamParse parsed = parse_param(r.kind, r.given, r.enum_values, r.range);
    if (parsed.ok)
        store(r.kind, r.storage, parsed.value);
    else
        r.error = bad_param_message(r.full_name, r.given, parsed.reason);
    return r.index;
}

bool name_at(std::string_view text, std::size_t pos, std::size_t len) noexcept {
    auto word = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    };
    const bool before = pos == 0 || !word(text[pos - 1]);
    const bool after = pos + len == text.size() || !word(text[pos + len]);
    return before && after;
}

}  // namespace

int register_params(const mca_base_component_2_1_0_t* component,
                    std::span<const ParamSpec> params) noexcept {
    int failures = 0;
    for (const ParamSpec& p : params) {
        int idx = -1;
        try {
            if (p.type == ParamType::String)
                idx = register_string(component, p);
            else
                idx = register_parsed(component, p);
        } catch (...) {
            idx = -1;
        }
        if (idx < 0)
            ++failures;
    }
    return failures;
}

std::string param_error(const mca_base_component_2_1_0_t* component) {
    const std::string owner = owner_of(component);
    for (const auto& r : registry()) {
        if (r->owner == owner && !r->error.empty())
            return r->error;
    }
    return {};
}

std::string explain_invalid(const mca_base_component_2_1_0_t* component,
                            std::string_view validate_error) {
    std::string out(validate_error);
    // The longest parameter name the message mentions (pml_dr_probe_max, not
    // a shorter one it starts with).
    const Registered* best = nullptr;
    const std::string owner = owner_of(component);
    for (const auto& r : registry()) {
        if (r->owner != owner || !r->set)
            continue;
        for (std::size_t pos = validate_error.find(r->full_name); pos != std::string_view::npos;
             pos = validate_error.find(r->full_name, pos + 1)) {
            if (name_at(validate_error, pos, r->full_name.size()) &&
                (best == nullptr || r->full_name.size() > best->full_name.size()))
                best = r.get();
        }
    }
    if (best != nullptr)
        return bad_param_message(best->full_name, best->given, validate_error);
    return "invalid MCA parameters: " + out;
}

void exit_on_bad_params(const mca_base_component_2_1_0_t* component,
                        std::string_view validate_error) noexcept {
    std::string message;
    try {
        message = param_error(component);
        if (message.empty() && !validate_error.empty())
            message = explain_invalid(component, validate_error);
    } catch (...) {
        message = "invalid MCA parameter (out of memory describing it)";
    }
    if (message.empty())
        return;
    const opal_proc_t* me = opal_proc_local_get();
    const bool first = me == nullptr || me->proc_name.vpid == 0;
    if (!first)
        sleep(5);  // mpirun ends the job on the first process's report (and kills us)
    opal_output(0, "%s %s: %s", component->mca_type_name, component->mca_component_name,
                message.c_str());
    // Straight out: returning an error from a selection function makes Open
    // MPI add misleading messages of its own, and exit() would run the
    // runtime's half-initialised destructors.
    _exit(1);
}

}  // namespace plugin::common
