// oob drtcp wire format, version 1 (sans I/O). The launcher's messages
// (mpirun <-> orted, orted <-> orted) travel on TCP connections: one CONNECT
// from each side right after connect, then messages. Big-endian, encoded
// field by field through the bounds-checked ByteWriter/ByteReader.
//
// CONNECT (24 bytes), the first thing each side sends:
//   0               1               2               3
//   +-------------------------------------------------------------+
//   |                  magic 0x44524F42 ("DROB")                  |
//   +---------------+---------------+-----------------------------+
//   |    version    |   reserved    |       reserved (u16)        |
//   +---------------+---------------+-----------------------------+
//   |                 jobid (sender's ORTE job id)                |
//   +-------------------------------------------------------------+
//   |                 vpid  (sender's rank in its job)            |
//   +-------------------------------------------------------------+
//   |                 reserved (u32, zero)                        |
//   +-------------------------------------------------------------+
//   |                 crc (CRC32C of the 20 bytes before it)      |
//   +-------------------------------------------------------------+
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
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "proc_name.hpp"
#include "result.hpp"

namespace oob::drtcp::core {

using plugin::common::Result;

inline constexpr std::uint32_t kMagic = 0x44524F42u;  // "DROB"
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kConnectSize = 24;
inline constexpr std::uint8_t kSync = 0xD9;
inline constexpr std::size_t kHeaderSize = 72;
inline constexpr std::size_t kRoutedMax = 31;  // characters of a routed module name

using plugin::common::ProcName;

enum class Kind : std::uint8_t { Message = 1, Bye = 2 };

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

// Write exactly kConnectSize / kHeaderSize bytes into `out` (which must be
// at least that long).
Result<std::size_t> encode_connect(const ProcName& me, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode_header(const Header& h, std::span<std::uint8_t> out) noexcept;

// Decode exactly kConnectSize / kHeaderSize bytes. `max_nbytes`: the largest
// payload this receiver accepts (a bigger one is an error, not an allocation).
Result<ProcName> decode_connect(std::span<const std::uint8_t> in) noexcept;
Result<Header> decode_header(std::span<const std::uint8_t> in, std::uint32_t max_nbytes) noexcept;

}  // namespace oob::drtcp::core
