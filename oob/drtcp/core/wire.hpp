// oob drtcp wire format, version 2 (sans I/O). The launcher's messages
// (mpirun <-> orted, orted <-> orted) travel on TCP connections: a three-way
// handshake first (HELLO from the side that connected, REPLY, CONFIRM; both
// ends prove they hold the job's key, see plugin/common/core/auth.hpp), then
// messages. Big-endian, encoded field by field through the bounds-checked
// ByteWriter/ByteReader.
//
// HANDSHAKE frame (76 bytes): HELLO, REPLY and CONFIRM share one layout.
//   0               1               2               3
//   +-------------------------------------------------------------+
//   |                  magic 0x44524F42 ("DROB")                  |
//   +---------------+---------------+---------------+-------------+
//   |  version (2)  | type 1/2/3    |     flags     |  reserved   |
//   +---------------+---------------+---------------+-------------+
//   |  sender jobid (u32)           |  sender vpid (u32)          |
//   |  receiver jobid (u32)         |  receiver vpid (u32)        |
//   |  nonce: 16 bytes (the sender's, fresh; zero in CONFIRM)     |
//   |  mac: 32 bytes (HMAC-SHA256 of the handshake step, or zero  |
//   |       when authentication is off)                           |
//   |  crc (CRC32C of the 72 bytes before it)                     |
//   +-------------------------------------------------------------+
// `receiver` is the process the sender wants (HELLO) or answers (REPLY,
// CONFIRM). Flags (HELLO only): bit 0, reconnect (the sender lost its
// previous connection to the receiver); the other bits are zero. The first 8
// bytes are checked as soon as they arrive (check_handshake_prefix), so a
// caller that speaks anything else is closed without waiting for 76 bytes.
//
// MESSAGE header (72 bytes), followed by `nbytes` of payload:
//   +---------------+---------------+---------------+-------------+
//   |  sync 0xD9    |    version    |     kind      | routed_len  |
//   +---------------+---------------+---------------+-------------+
//   |  origin jobid (u32)           |  origin vpid (u32)          |
//   |  dst jobid (u32)              |  dst vpid (u32)             |
//   |  tag (u32)                    |  seq_num (u32)              |
//   |  nbytes (u32)                                               |
//   |  routed: 32 bytes, routed_len name characters, zero padded  |
//   |  reserved (u32, zero)                                       |
//   |  crc (CRC32C of the 68 bytes before it)                     |
//   +-------------------------------------------------------------+
// kind 1 is a message for `dst` (relayed by whoever is not `dst`), routed by
// the routed module `routed` (e.g. "radix"); kind 2 (BYE: no names, tag,
// payload or routed) says the sender closes on purpose (it is finalizing).
// Anything else - wrong magic, version, sync, kind, CRC, a reserved field
// that is not zero, a routed name that is not [a-z0-9_], a length above the
// receiver's maximum - is a protocol error: the connection is closed (a byte
// stream cannot be resynchronised) and nothing of it is delivered.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "auth.hpp"
#include "proc_name.hpp"
#include "result.hpp"

namespace oob::drtcp::core {

using plugin::common::Result;

inline constexpr std::uint32_t kMagic = 0x44524F42u;  // "DROB"
inline constexpr std::uint8_t kVersion = 2;
inline constexpr std::size_t kHandshakeSize = 76;
inline constexpr std::size_t kHandshakePrefix = 8;  // magic, version, type, flags, reserved
inline constexpr std::uint8_t kFlagReconnect = 1;
inline constexpr std::uint8_t kSync = 0xD9;
inline constexpr std::size_t kHeaderSize = 72;
inline constexpr std::size_t kRoutedMax = 31;  // characters of a routed module name

using plugin::common::ProcName;

enum class Kind : std::uint8_t { Message = 1, Bye = 2 };

enum class HsType : std::uint8_t { Hello = 1, Reply = 2, Confirm = 3 };
std::string_view to_string(HsType t) noexcept;

struct HandshakeFrame {
    HsType type = HsType::Hello;
    std::uint8_t flags = 0;
    ProcName sender;
    ProcName receiver;
    plugin::common::auth::Nonce nonce{};
    plugin::common::auth::Mac mac{};
};

struct Header {
    Kind kind = Kind::Message;
    ProcName origin;
    ProcName dst;
    std::uint32_t tag = 0;
    std::uint32_t seq_num = 0;
    std::uint32_t nbytes = 0;
    char routed[kRoutedMax + 1] = {};  // NUL-terminated
    [[nodiscard]] std::string_view routed_name() const noexcept { return routed; }
};

// A message header; false when `routed` is longer than kRoutedMax or holds
// a character outside [a-z0-9_].
bool set_routed(Header& h, std::string_view routed) noexcept;

// Write exactly kHandshakeSize / kHeaderSize bytes into `out` (which must be
// at least that long).
Result<std::size_t> encode_handshake(const HandshakeFrame& f, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode_header(const Header& h, std::span<std::uint8_t> out) noexcept;

// The first kHandshakePrefix bytes of a handshake frame: magic, version,
// a known type, flags only on HELLO and only known ones, reserved zero.
Result<void> check_handshake_prefix(std::span<const std::uint8_t> in) noexcept;
// Decode exactly kHandshakeSize / kHeaderSize bytes. `max_nbytes`: the largest
// payload this receiver accepts (a bigger one is an error, not an allocation).
Result<HandshakeFrame> decode_handshake(std::span<const std::uint8_t> in) noexcept;
Result<Header> decode_header(std::span<const std::uint8_t> in, std::uint32_t max_nbytes) noexcept;

}  // namespace oob::drtcp::core
