// btl drtcp wire format, version 1 (sans I/O). Two messages travel on a
// connection: one HELLO from each side right after connect, then frames.
// Big-endian, encoded field by field through the bounds-checked
// ByteWriter/ByteReader; nothing is ever cast onto bytes.
//
// HELLO (32 bytes), the first thing each side sends:
//   0               1               2               3
//   +-------------------------------------------------------------+
//   |                  magic 0x44525443 ("DRTC")                  |
//   +---------------+---------------+-----------------------------+
//   |    version    |   reserved    |            link             |
//   +---------------+---------------+-----------------------------+
//   |                 jobid (sender's ORTE job id)                |
//   +-------------------------------------------------------------+
//   |                 vpid  (sender's rank in its job)            |
//   +-------------------------------------------------------------+
//   |                 nonce (u64: the sender's connect attempt)   |
//   |                                                             |
//   +-------------------------------------------------------------+
//   |                 reserved (u32, zero)                        |
//   +-------------------------------------------------------------+
//   |                 crc (CRC32C of the 28 bytes before it)      |
//   +-------------------------------------------------------------+
// `link` is the index of the socket among the `links` an interface pair
// opens. A HELLO with a wrong magic, version, CRC or reserved field, or from
// a process the receiver does not expect, closes the connection (counted).
//
// FRAME header (8 bytes) in front of every BTL segment:
//   | sync 0xD7 (u8) | tag (u8: the BTL tag) | flags (u16) | len (u32) |
// `len` bytes of payload follow. Flags: 0 for data; kFrameFlagBye (with tag
// 0 and len 0) says the sender closes the connection on purpose (it is
// finalizing), so the receiver does not report a lost link; kFrameFlagPut
// (tag 0, len up to kMaxPutBytes) is a BTL put: a PUT subheader follows,
//   | key (u64: the target's registration) | address (u64: where to write) |
// then `len` bytes the receiver reads straight into that address, which must
// lie inside the registered region named by `key` (else protocol error). A bad sync byte,
// an unknown flag, a BYE with a payload or a length above the receiver's
// max_frame is a protocol error: the stream cannot be resynchronised, the
// connection is closed. The payload is the PML's business (pml dr checksums
// it); drtcp guarantees only the framing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "proc_name.hpp"
#include "result.hpp"

namespace btl::drtcp::core {

using plugin::common::Result;

inline constexpr std::uint32_t kMagic = 0x44525443u;  // "DRTC"
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHelloSize = 32;
inline constexpr std::uint8_t kFrameSync = 0xD7;
inline constexpr std::size_t kFrameHeaderSize = 8;
inline constexpr std::uint16_t kFrameFlagBye = 0x0001;
inline constexpr std::uint16_t kFrameFlagPut = 0x0002;
inline constexpr std::size_t kPutHeaderSize = 16;
inline constexpr std::uint32_t kMaxPutBytes = 1u << 30;

using plugin::common::ProcName;

struct Hello {
    ProcName from;
    std::uint16_t link = 0;
    std::uint64_t nonce = 0;
};

struct FrameHeader {
    std::uint8_t tag = 0;
    std::uint16_t flags = 0;  // 0, kFrameFlagBye or kFrameFlagPut
    std::uint32_t len = 0;
};

// Writes exactly kHelloSize / kFrameHeaderSize bytes into out (which must be
// at least that long) and returns the size written.
Result<std::size_t> encode(const Hello& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const FrameHeader& h, std::span<std::uint8_t> out) noexcept;

struct PutHeader {
    std::uint64_t key = 0;
    std::uint64_t addr = 0;
};
Result<std::size_t> encode(const PutHeader& h, std::span<std::uint8_t> out) noexcept;
Result<PutHeader> decode_put_header(std::span<const std::uint8_t> bytes) noexcept;

// Decodes and validates (magic, version, CRC, reserved fields). Never reads
// out of bounds, never asserts.
Result<Hello> decode_hello(std::span<const std::uint8_t> bytes) noexcept;
// max_frame: the largest payload this receiver accepts (puts: kMaxPutBytes).
Result<FrameHeader> decode_frame_header(std::span<const std::uint8_t> bytes,
                                        std::uint32_t max_frame) noexcept;

// Simultaneous connects: both sides may open a socket for the same link at
// once. Both keep the connection initiated by the smaller process name
// (jobid, then vpid), so they agree without another round trip; a process
// never connects to itself through drtcp.
constexpr bool keep_outgoing(ProcName local, ProcName remote) noexcept {
    return local.jobid != remote.jobid ? local.jobid < remote.jobid : local.vpid < remote.vpid;
}

}  // namespace btl::drtcp::core
