#include "value.hpp"

#include <algorithm>

namespace plugin::pmix::core {

using plugin::common::fail;

Value Value::scalar(std::uint16_t type, std::uint8_t size, std::uint64_t bits) {
    Value v;
    v.shape = Shape::Scalar;
    v.type = type;
    v.size = size;
    v.bits = bits;
    return v;
}

Value Value::string(std::uint16_t type, std::string_view text) {
    Value v;
    v.shape = Shape::String;
    v.type = type;
    v.bytes = text;
    return v;
}

Value Value::null_string(std::uint16_t type) {
    Value v;
    v.shape = Shape::String;
    v.type = type;
    v.null = true;
    return v;
}

Value Value::blob(std::uint16_t type, std::span<const std::uint8_t> data) {
    Value v;
    v.shape = Shape::Bytes;
    v.type = type;
    v.bytes.assign(data.begin(), data.end());
    return v;
}

Value Value::proc(std::uint16_t type, ProcName name) {
    Value v;
    v.shape = Shape::Name;
    v.type = type;
    v.name = name;
    return v;
}

Value Value::nested(std::uint16_t type, std::vector<KeyValue> items) {
    Value v;
    v.shape = Shape::List;
    v.type = type;
    v.list = std::move(items);
    return v;
}

void Encoder::text(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    bytes({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
}

void Encoder::end_length(std::size_t at) {
    const auto n = static_cast<std::uint32_t>(buf_.size() - at - 4);
    const std::uint32_t be = plugin::common::to_big_endian(n);
    std::memcpy(buf_.data() + at, &be, 4);
}

std::string read_text(ByteReader& r, std::size_t max) {
    const std::uint32_t n = r.u32();
    if (!r.ok())
        return {};
    if (n > max || n > r.remaining()) {
        r.fail(Error(ErrorCode::BadLength, "text longer than allowed or present"));
        return {};
    }
    const auto b = r.bytes(n);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

void encode_value(Encoder& e, const Value& v) {
    e.u8(static_cast<std::uint8_t>(v.shape));
    e.u16(v.type);
    switch (v.shape) {
        case Shape::Scalar:
            e.u8(v.size);
            e.u64(v.bits);
            break;
        case Shape::String:
            e.u8(v.null ? 1 : 0);
            e.text(v.null ? std::string_view{} : std::string_view{v.bytes});
            break;
        case Shape::Bytes:
            e.text(v.bytes);
            break;
        case Shape::Name:
            e.name(v.name);
            break;
        case Shape::List:
            encode_kvlist(e, v.list);
            break;
    }
}

void encode_kvlist(Encoder& e, const KvList& list) {
    e.u32(static_cast<std::uint32_t>(list.size()));
    for (const KeyValue& kv : list) {
        e.text(kv.key);
        e.u8(static_cast<std::uint8_t>(kv.scope));
        encode_value(e, kv.value);
    }
}

void encode_record(Encoder& e, const Record& rec) {
    e.name(rec.proc);
    const std::size_t at = e.begin_length();
    encode_kvlist(e, rec.values);
    e.end_length(at);
}

void encode_names(Encoder& e, std::span<const ProcName> names) {
    e.u32(static_cast<std::uint32_t>(names.size()));
    for (const ProcName& n : names)
        e.name(n);
}

Value decode_value(ByteReader& r, int depth) {
    Value v;
    const std::uint8_t shape = r.u8();
    v.type = r.u16();
    if (!r.ok())
        return v;
    switch (static_cast<Shape>(shape)) {
        case Shape::Scalar: {
            v.shape = Shape::Scalar;
            v.size = r.u8();
            v.bits = r.u64();
            if (r.ok() && v.size != 1 && v.size != 2 && v.size != 4 && v.size != 8)
                r.fail(Error(ErrorCode::BadField, "scalar size not 1, 2, 4 or 8"));
            else if (r.ok() && v.size < 8 && (v.bits >> (8 * v.size)) != 0)
                r.fail(Error(ErrorCode::BadField, "scalar wider than its size"));
            break;
        }
        case Shape::String: {
            v.shape = Shape::String;
            const std::uint8_t null = r.u8();
            v.bytes = read_text(r, r.remaining());
            if (r.ok() && (null > 1 || (null == 1 && !v.bytes.empty())))
                r.fail(Error(ErrorCode::BadField, "bad NULL-string flag"));
            v.null = null == 1;
            break;
        }
        case Shape::Bytes:
            v.shape = Shape::Bytes;
            v.bytes = read_text(r, r.remaining());
            break;
        case Shape::Name:
            v.shape = Shape::Name;
            v.name = r.name();
            break;
        case Shape::List:
            v.shape = Shape::List;
            if (depth + 1 >= kMaxDepth) {
                r.fail(Error(ErrorCode::BadField, "lists nested too deep"));
                break;
            }
            v.list = decode_kvlist(r, depth + 1);
            break;
        default:
            r.fail(Error(ErrorCode::BadType, "unknown value shape"));
    }
    return v;
}

KvList decode_kvlist(ByteReader& r, int depth) {
    KvList out;
    const std::uint32_t n = r.u32();
    // Each entry takes at least 4 (key) + 1 (scope) + 3 (shape, type) bytes:
    // a count the bytes cannot hold is rejected before anything is built.
    if (r.ok() && n > r.remaining() / 8) {
        r.fail(Error(ErrorCode::BadLength, "more entries than bytes"));
        return out;
    }
    for (std::uint32_t i = 0; i < n && r.ok(); ++i) {
        KeyValue kv;
        kv.key = read_text(r, kMaxKeyLength);
        const std::uint8_t scope = r.u8();
        if (r.ok() && (scope < 1 || scope > 3))
            r.fail(Error(ErrorCode::BadField, "bad scope"));
        kv.scope = static_cast<Scope>(scope);
        kv.value = decode_value(r, depth);
        if (r.ok() && kv.key.empty())
            r.fail(Error(ErrorCode::BadField, "empty key"));
        out.push_back(std::move(kv));
    }
    if (!r.ok())
        out.clear();
    return out;
}

std::vector<ProcName> decode_names(ByteReader& r) {
    std::vector<ProcName> out;
    const std::uint32_t n = r.u32();
    if (r.ok() && n > r.remaining() / 8) {
        r.fail(Error(ErrorCode::BadLength, "more names than bytes"));
        return out;
    }
    out.reserve(n);
    for (std::uint32_t i = 0; i < n && r.ok(); ++i)
        out.push_back(r.name());
    if (!r.ok())
        out.clear();
    return out;
}

Result<std::vector<Record>> decode_records(std::span<const std::uint8_t> data) {
    std::vector<Record> out;
    ByteReader r(data);
    while (r.ok() && r.remaining() > 0) {
        Record rec;
        rec.proc = r.name();
        const std::uint32_t len = r.u32();
        if (r.ok() && len > r.remaining()) {
            r.fail(Error(ErrorCode::BadLength, "record longer than the data"));
            break;
        }
        ByteReader body = r.sub(len);
        rec.values = decode_kvlist(body);
        body.expect_end();
        if (!body.ok())
            return fail(body.error());
        out.push_back(std::move(rec));
    }
    if (!r.ok())
        return fail(r.error());
    return out;
}

const Value* find_key(const KvList& list, std::string_view key) noexcept {
    for (const KeyValue& kv : list)
        if (kv.key == key)
            return &kv.value;
    return nullptr;
}

std::vector<ProcName> canonical(std::vector<ProcName> procs) {
    std::sort(procs.begin(), procs.end());
    procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
    return procs;
}

}  // namespace plugin::pmix::core
