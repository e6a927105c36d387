// pmix dr wire protocol between our server (in mpirun and the orteds) and our
// client (in the MPI processes), over a Unix-domain stream socket.
//
// Every message is a 16-byte header followed by `length` payload bytes:
//
//   0  magic   "DRPX"
//   4  version u8 (kVersion)
//   5  type    u8 (MsgType)
//   6  flags   u16, zero
//   8  length  u32, payload bytes, at most the receiver's max_msg_size
//  12  req     u32, request id chosen by the client, echoed in the reply
//
// All integers big-endian. A request gets exactly one Reply (same req); the
// server may also send Event messages (req 0) at any time after Welcome.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "value.hpp"

namespace plugin::pmix::core {

inline constexpr std::uint32_t kMagic = 0x44525058;  // "DRPX"
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 16;

enum class MsgType : std::uint8_t {
    Hello = 1,       // client -> server: HelloBody; reply carries the job's records
    Commit = 2,      // client's put data (KvList with scopes); no reply
    Fence = 3,       // FenceBody; reply: records
    Get = 4,         // GetBody; reply: records of that process
    JobData = 5,     // u32 jobid; reply: that job's records
    Abort = 6,       // AbortBody; reply: status
    Finalize = 7,    // empty; reply: status once the launcher knows
    Publish = 8,     // KvList (data and directives); reply: status
    Lookup = 9,      // LookupBody; reply: records (proc = publisher)
    Unpublish = 10,  // LookupBody; reply: status
    Spawn = 11,      // SpawnBody; reply: status + u32 jobid
    Connect = 12,    // FenceBody (collect ignored) + KvList info; reply: status
    Reply = 13,      // server -> client: i32 status + body
    Event = 14,      // server -> client: EventBody
};
inline constexpr std::uint8_t kFirstMsgType = 1;
inline constexpr std::uint8_t kLastMsgType = 14;

struct Header {
    MsgType type = MsgType::Reply;
    std::uint32_t length = 0;
    std::uint32_t req = 0;
};

// Decodes a header; `max_length` bounds the payload it announces.
Result<Header> decode_header(std::span<const std::uint8_t> in, std::size_t max_length);
// A whole message: header + payload.
std::vector<std::uint8_t> encode_message(MsgType type, std::uint32_t req,
                                         std::span<const std::uint8_t> payload);

// Splits a byte stream into messages. Memory is bounded by one message: a
// header announcing more than max_length is an error (the caller closes).
class FrameReader {
  public:
    explicit FrameReader(std::size_t max_length) : max_length_(max_length) {}
    // Appends received bytes.
    void feed(std::span<const std::uint8_t> bytes);
    // The next complete message, nothing if more bytes are needed, or an
    // error (after which the stream is unusable).
    struct Message {
        Header header;
        std::vector<std::uint8_t> payload;
    };
    Result<std::optional<Message>> next();
    std::size_t buffered() const noexcept { return buf_.size() - start_; }
    // Changes the bound for the messages not yet decoded (the server raises
    // it once a connection has identified itself).
    void set_max_length(std::size_t max_length) noexcept { max_length_ = max_length; }

  private:
    std::size_t max_length_;
    std::vector<std::uint8_t> buf_;
    std::size_t start_ = 0;
};

// ---- bodies

struct HelloBody {
    ProcName proc{};
    std::uint64_t secret = 0;  // from the environment the server gave the child
    friend bool operator==(const HelloBody&, const HelloBody&) = default;
};
std::vector<std::uint8_t> encode(const HelloBody& b);
Result<HelloBody> decode_hello(std::span<const std::uint8_t> in);

struct FenceBody {
    bool collect = false;
    std::vector<ProcName> procs;  // canonical; {job, wildcard} = the whole job
    KvList info;                  // Connect only
    friend bool operator==(const FenceBody&, const FenceBody&) = default;
};
std::vector<std::uint8_t> encode(const FenceBody& b);
Result<FenceBody> decode_fence(std::span<const std::uint8_t> in);

struct GetBody {
    ProcName proc{};
    std::string key;
    bool immediate = false;  // answer from the server's store only
    friend bool operator==(const GetBody&, const GetBody&) = default;
};
std::vector<std::uint8_t> encode(const GetBody& b);
Result<GetBody> decode_get(std::span<const std::uint8_t> in);

struct AbortBody {
    std::int32_t status = 0;
    std::string message;
    std::vector<ProcName> procs;  // empty: the whole job
    friend bool operator==(const AbortBody&, const AbortBody&) = default;
};
std::vector<std::uint8_t> encode(const AbortBody& b);
Result<AbortBody> decode_abort(std::span<const std::uint8_t> in);

struct LookupBody {
    std::vector<std::string> keys;  // Unpublish: empty = all of mine
    KvList info;
    friend bool operator==(const LookupBody&, const LookupBody&) = default;
};
std::vector<std::uint8_t> encode(const LookupBody& b);
Result<LookupBody> decode_lookup(std::span<const std::uint8_t> in);

struct App {
    std::string cmd;
    std::vector<std::string> argv;
    std::vector<std::string> env;
    std::string cwd;
    std::int32_t maxprocs = 0;
    KvList info;
    friend bool operator==(const App&, const App&) = default;
};
struct SpawnBody {
    KvList job_info;
    std::vector<App> apps;
    friend bool operator==(const SpawnBody&, const SpawnBody&) = default;
};
std::vector<std::uint8_t> encode(const SpawnBody& b);
Result<SpawnBody> decode_spawn(std::span<const std::uint8_t> in);

struct EventBody {
    std::int32_t status = 0;
    ProcName source{};
    KvList info;
    friend bool operator==(const EventBody&, const EventBody&) = default;
};
std::vector<std::uint8_t> encode(const EventBody& b);
Result<EventBody> decode_event(std::span<const std::uint8_t> in);

// Commit and Publish payloads are a bare KvList.
std::vector<std::uint8_t> encode(const KvList& list);
Result<KvList> decode_kvlist_body(std::span<const std::uint8_t> in);

std::vector<std::uint8_t> encode_u32(std::uint32_t v);
Result<std::uint32_t> decode_u32(std::span<const std::uint8_t> in);

// Reply: i32 status, then a body that depends on the request.
std::vector<std::uint8_t> encode_reply(std::int32_t status, std::span<const std::uint8_t> body);
std::vector<std::uint8_t> encode_records(std::span<const Record> records);
struct ReplyBody {
    std::int32_t status = 0;
    std::span<const std::uint8_t> body;  // points into the decoded payload
};
Result<ReplyBody> decode_reply(std::span<const std::uint8_t> in);

}  // namespace plugin::pmix::core
