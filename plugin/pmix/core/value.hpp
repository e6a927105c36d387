// The data the PMIx service moves around, without Open MPI types: typed
// values, key/value lists and per-process records, with their wire codec.
//
// The core never interprets a host type code: a Value carries the host's
// code (`type`) next to one of five shapes the codec understands, so a value
// comes back out with exactly the type it went in with (Open MPI's unload
// refuses a mismatch). Scalars travel as their integer bits, so whichever
// union member the host wrote them through reads back the same.
//
// Decoding treats its input as hostile: every length is checked against the
// bytes present, nesting is bounded, and a failure is an Error, never an
// exception or an allocation sized by the input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proc_name.hpp"
#include "result.hpp"
#include "wire_io.hpp"

namespace plugin::pmix::core {

using plugin::common::Error;
using plugin::common::ErrorCode;
using plugin::common::ProcName;
using plugin::common::Result;

// Open MPI's special ranks (OPAL_VPID_WILDCARD / OPAL_VPID_INVALID).
inline constexpr std::uint32_t kRankWildcard = 0xFFFFFFFEu;
inline constexpr std::uint32_t kRankInvalid = 0xFFFFFFFFu;

// Longest key we accept (PMIx keys are at most 511 characters).
inline constexpr std::size_t kMaxKeyLength = 511;
// Lists nest at most this deep (a job's per-process data is a list of lists).
inline constexpr int kMaxDepth = 3;

enum class Shape : std::uint8_t {
    Scalar = 1,  // 1, 2, 4 or 8 bytes of integer (or float) bits
    String = 2,  // text; may be a NULL string
    Bytes = 3,   // an opaque byte object
    Name = 4,    // a process name
    List = 5,    // a nested key/value list
};

// Visibility of a committed key (PMIx scopes).
enum class Scope : std::uint8_t {
    Local = 1,   // processes on the same node only
    Remote = 2,  // processes on other nodes only
    Global = 3,  // everyone
};

struct KeyValue;

struct Value {
    Shape shape = Shape::Scalar;
    std::uint16_t type = 0;      // the host's type code, returned untouched
    std::uint8_t size = 0;       // Scalar: 1, 2, 4 or 8
    std::uint64_t bits = 0;      // Scalar
    bool null = false;           // String: a NULL string
    std::string bytes;           // String, Bytes
    ProcName name{};             // Name
    std::vector<KeyValue> list;  // List

    static Value scalar(std::uint16_t type, std::uint8_t size, std::uint64_t bits);
    static Value string(std::uint16_t type, std::string_view text);
    static Value null_string(std::uint16_t type);
    static Value blob(std::uint16_t type, std::span<const std::uint8_t> data);
    static Value proc(std::uint16_t type, ProcName name);
    static Value nested(std::uint16_t type, std::vector<KeyValue> items);

    friend bool operator==(const Value&, const Value&) = default;
};

struct KeyValue {
    std::string key;
    Value value;
    Scope scope = Scope::Global;  // meaningful in commits only
    friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

using KvList = std::vector<KeyValue>;

// All the data of one process (or, with vpid kRankWildcard, of its job).
struct Record {
    ProcName proc{};
    KvList values;
    friend bool operator==(const Record&, const Record&) = default;
};

// A growable big-endian encoder (ByteWriter writes into a fixed span).
class Encoder {
  public:
    void u8(std::uint8_t v) { buf_.push_back(v); }
    void u16(std::uint16_t v) { put(v); }
    void u32(std::uint32_t v) { put(v); }
    void u64(std::uint64_t v) { put(v); }
    void i32(std::int32_t v) { put(static_cast<std::uint32_t>(v)); }
    void bytes(std::span<const std::uint8_t> b) { buf_.insert(buf_.end(), b.begin(), b.end()); }
    // u32 length + bytes.
    void text(std::string_view s);
    void name(ProcName n) {
        u32(n.jobid);
        u32(n.vpid);
    }
    // Reserve a u32 and fill it in later with the bytes written since.
    std::size_t begin_length() {
        const std::size_t at = buf_.size();
        u32(0);
        return at;
    }
    void end_length(std::size_t at);

    std::vector<std::uint8_t>& buffer() noexcept { return buf_; }
    std::size_t size() const noexcept { return buf_.size(); }

  private:
    template <class T>
    void put(T v) {
        const T be = plugin::common::to_big_endian(v);
        const auto* p = reinterpret_cast<const std::uint8_t*>(&be);
        buf_.insert(buf_.end(), p, p + sizeof(T));
    }
    std::vector<std::uint8_t> buf_;
};

using plugin::common::ByteReader;

// Reading helpers over ByteReader (sticky failure, see wire_io.hpp).
std::string read_text(ByteReader& r, std::size_t max);

void encode_value(Encoder& e, const Value& v);
void encode_kvlist(Encoder& e, const KvList& list);
// Record: name, u32 length, kv list. Self-delimiting, so the records of
// several daemons can be concatenated blindly and still be read back.
void encode_record(Encoder& e, const Record& rec);
void encode_names(Encoder& e, std::span<const ProcName> names);

// Decoders: the failure is left in the reader (check r.ok()).
Value decode_value(ByteReader& r, int depth = 0);
KvList decode_kvlist(ByteReader& r, int depth = 0);
std::vector<ProcName> decode_names(ByteReader& r);
// Every record in `data` (the whole span must be records).
Result<std::vector<Record>> decode_records(std::span<const std::uint8_t> data);

// A key in a list, or nullptr.
const Value* find_key(const KvList& list, std::string_view key) noexcept;

// Processes in a canonical order, duplicates removed: two daemons that list
// the same participants in different orders must produce the same bytes.
std::vector<ProcName> canonical(std::vector<ProcName> procs);

}  // namespace plugin::pmix::core
