// Between Open MPI's types (opal_value_t, opal_list_t of values, names and
// lookup data) and the core's Value/KvList/ProcName.
#pragma once
#include <string>
#include <vector>

#include "opal_prelude.hpp"
#include "value.hpp"
#include "wire.hpp"

namespace plugin::pmix::mca {

namespace core = plugin::pmix::core;
using plugin::common::ProcName;

inline ProcName name_of(const opal_process_name_t& n) noexcept {
    return {n.jobid, n.vpid};
}
inline opal_process_name_t opal_name(ProcName n) noexcept {
    opal_process_name_t o;
    o.jobid = n.jobid;
    o.vpid = n.vpid;
    return o;
}

// False for a type we cannot carry (it is then left out, and logged).
bool to_core(const opal_value_t& in, core::Value& out);
core::KeyValue to_core_kv(const opal_value_t& in, core::Scope scope = core::Scope::Global);
// opal_list_t of opal_value_t; NULL is an empty list.
core::KvList to_core_list(opal_list_t* list);
// A fresh opal_value_t (OBJ_NEW) with key and value: the caller owns it.
opal_value_t* to_opal(std::string_view key, const core::Value& v);
// Fills an existing, constructed opal_value_t (its key is set too).
void fill_opal(opal_value_t& out, std::string_view key, const core::Value& v);
// A fresh opal_list_t of values (OBJ_NEW).
opal_list_t* to_opal_list(const core::KvList& list);
void append_values(opal_list_t* out, const core::KvList& list);

// opal_list_t of opal_namelist_t; NULL is empty.
std::vector<ProcName> names_of(opal_list_t* list);
void append_names(opal_list_t* out, const std::vector<ProcName>& names);

// A NULL-terminated argv; NULL is empty.
std::vector<std::string> strings_of(char** argv);
// A fresh NULL-terminated argv (opal_argv_free releases it).
char** to_argv(const std::vector<std::string>& items);

// The value a list holds under key, or nullptr.
opal_value_t* find_value(opal_list_t* list, const char* key);

}  // namespace plugin::pmix::mca
