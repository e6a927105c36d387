#include "convert.hpp"

#include <bit>
#include <cstddef>
#include <cstring>
#include <sys/time.h>

namespace plugin::pmix::mca {

// Scalars are copied as their low bytes (see to_core).
static_assert(std::endian::native == std::endian::little, "convert.cpp assumes little-endian");

namespace {

// Bytes of the union member a scalar type is read through; 0 = not a scalar.
std::uint8_t scalar_size(opal_data_type_t t) noexcept {
    switch (t) {
        case OPAL_BOOL:
            return sizeof(bool);
        case OPAL_BYTE:
        case OPAL_INT8:
        case OPAL_UINT8:
        case OPAL_PERSIST:
        case OPAL_SCOPE:
        case OPAL_DATA_RANGE:
        case OPAL_PROC_STATE:
        case OPAL_DATA_TYPE:
            return 1;
        case OPAL_INT16:
        case OPAL_UINT16:
            return 2;
        case OPAL_PID:
            return sizeof(pid_t);
        case OPAL_INT:
        case OPAL_UINT:
        case OPAL_INT32:
        case OPAL_UINT32:
        case OPAL_FLOAT:
        case OPAL_JOBID:
        case OPAL_VPID:
        case OPAL_STATUS:
        case OPAL_INFO_DIRECTIVES:
            return 4;
        case OPAL_SIZE:
            return sizeof(size_t);
        case OPAL_INT64:
        case OPAL_UINT64:
        case OPAL_DOUBLE:
            return 8;
        case OPAL_TIME:
            return sizeof(time_t);
        default:
            return 0;
    }
}

// Where in the union a scalar lives: OPAL_VPID values go through
// data.name.vpid (opal_value_load/unload), everything else starts at 0.
std::size_t scalar_offset(opal_data_type_t t) noexcept {
    return t == OPAL_VPID ? offsetof(opal_process_name_t, vpid) : 0;
}

}  // namespace

bool to_core(const opal_value_t& in, core::Value& out) {
    const auto type = static_cast<std::uint16_t>(in.type);
    if (const std::uint8_t n = scalar_size(in.type); n != 0) {
        std::uint64_t bits = 0;
        const auto* base = reinterpret_cast<const std::uint8_t*>(&in.data) + scalar_offset(in.type);
        std::memcpy(&bits, base, n);  // little-endian: the low n bytes
        out = core::Value::scalar(type, n, bits);
        return true;
    }
    switch (in.type) {
        case OPAL_STRING:
            out = in.data.string == nullptr ? core::Value::null_string(type)
                                            : core::Value::string(type, in.data.string);
            return true;
        case OPAL_BYTE_OBJECT: {
            const auto n = in.data.bo.bytes == nullptr || in.data.bo.size < 0
                               ? 0
                               : static_cast<std::size_t>(in.data.bo.size);
            out = core::Value::blob(type, {in.data.bo.bytes, n});
            return true;
        }
        case OPAL_TIMEVAL:
            out = core::Value::blob(
                type, {reinterpret_cast<const std::uint8_t*>(&in.data.tv), sizeof(in.data.tv)});
            return true;
        case OPAL_NAME:
            out = core::Value::proc(type, name_of(in.data.name));
            return true;
        case OPAL_PTR:
            // Only ORTE's per-process lists (pmix.pdata) travel as pointers.
            out = core::Value::nested(type, to_core_list(static_cast<opal_list_t*>(in.data.ptr)));
            return true;
        default:
            return false;
    }
}

core::KeyValue to_core_kv(const opal_value_t& in, core::Scope scope) {
    core::KeyValue kv;
    kv.key = in.key == nullptr ? "" : in.key;
    kv.scope = scope;
    if (!to_core(in, kv.value))
        kv.key.clear();  // the caller drops entries without a key
    return kv;
}

core::KvList to_core_list(opal_list_t* list) {
    core::KvList out;
    if (list == nullptr)
        return out;
    opal_value_t* v;
    OPAL_LIST_FOREACH(v, list, opal_value_t) {
        core::KeyValue kv = to_core_kv(*v);
        if (!kv.key.empty())
            out.push_back(std::move(kv));
    }
    return out;
}

void fill_opal(opal_value_t& out, std::string_view key, const core::Value& v) {
    char* k = strndup(key.data(), key.size());  // `key` may be out.key itself
    free(out.key);
    out.key = k;
    out.type = static_cast<opal_data_type_t>(v.type);
    std::memset(&out.data, 0, sizeof(out.data));
    switch (v.shape) {
        case core::Shape::Scalar:
            std::memcpy(reinterpret_cast<std::uint8_t*>(&out.data) +
                            scalar_offset(static_cast<opal_data_type_t>(v.type)),
                        &v.bits, v.size);
            break;
        case core::Shape::String:
            out.data.string = v.null ? nullptr : strndup(v.bytes.data(), v.bytes.size());
            break;
        case core::Shape::Bytes:
            if (v.type == OPAL_TIMEVAL) {
                std::memcpy(&out.data.tv, v.bytes.data(),
                            std::min(v.bytes.size(), sizeof(out.data.tv)));
                break;
            }
            out.data.bo.size = static_cast<int32_t>(v.bytes.size());
            out.data.bo.bytes = nullptr;
            if (!v.bytes.empty()) {
                out.data.bo.bytes = static_cast<uint8_t*>(malloc(v.bytes.size()));
                std::memcpy(out.data.bo.bytes, v.bytes.data(), v.bytes.size());
            }
            break;
        case core::Shape::Name:
            out.data.name = opal_name(v.name);
            break;
        case core::Shape::List:
            out.data.ptr = to_opal_list(v.list);
            break;
    }
}

opal_value_t* to_opal(std::string_view key, const core::Value& v) {
    auto* out = OBJ_NEW(opal_value_t);
    fill_opal(*out, key, v);
    return out;
}

opal_list_t* to_opal_list(const core::KvList& list) {
    auto* out = OBJ_NEW(opal_list_t);
    append_values(out, list);
    return out;
}

void append_values(opal_list_t* out, const core::KvList& list) {
    for (const core::KeyValue& kv : list)
        opal_list_append(out, &to_opal(kv.key, kv.value)->super);
}

std::vector<ProcName> names_of(opal_list_t* list) {
    std::vector<ProcName> out;
    if (list == nullptr)
        return out;
    opal_namelist_t* n;
    OPAL_LIST_FOREACH(n, list, opal_namelist_t) {
        out.push_back(name_of(n->name));
    }
    return out;
}

void append_names(opal_list_t* out, const std::vector<ProcName>& names) {
    for (const ProcName& p : names) {
        auto* n = OBJ_NEW(opal_namelist_t);
        n->name = opal_name(p);
        opal_list_append(out, &n->super);
    }
}

std::vector<std::string> strings_of(char** argv) {
    std::vector<std::string> out;
    for (char** a = argv; a != nullptr && *a != nullptr; ++a)
        out.emplace_back(*a);
    return out;
}

char** to_argv(const std::vector<std::string>& items) {
    char** argv = nullptr;
    for (const std::string& s : items)
        opal_argv_append_nosize(&argv, s.c_str());
    return argv;
}

opal_value_t* find_value(opal_list_t* list, const char* key) {
    if (list == nullptr)
        return nullptr;
    opal_value_t* v;
    OPAL_LIST_FOREACH(v, list, opal_value_t) {
        if (v->key != nullptr && std::strcmp(v->key, key) == 0)
            return v;
    }
    return nullptr;
}

}  // namespace plugin::pmix::mca
