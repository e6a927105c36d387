// btl drtcp wire format, version 2 (sans I/O). A connection starts with a
// three-message handshake (plugin/common/core/auth.hpp) that names both
// processes and proves that both hold the pair's key; frames follow.
// Big-endian, encoded field by field through the bounds-checked
// ByteWriter/ByteReader; nothing is ever cast onto bytes.
//
// Every handshake message starts with the same preamble (8 bytes):
//   0               1               2               3
//   +-------------------------------------------------------------+
//   |                  magic 0x44525443 ("DRTC")                  |
//   +---------------+---------------+-----------------------------+
//   |  version (2)  | type (1,2,3)  |  length (whole message)     |
//   +---------------+---------------+-----------------------------+
// and each type has one fixed length: a receiver checks magic, version,
// type (the one its phase expects) and length as soon as the 8 bytes are
// in, before it waits for more (a wrong or huge length is refused at once).
//
// HELLO (type 1, 76 bytes), initiator -> acceptor, right after connect:
//   | preamble (8) |
//   | link (u16) | flags (u8) | reserved (u8, zero) |
//   | from jobid (u32) | from vpid (u32) |  the initiator
//   | to jobid (u32)   | to vpid (u32)   |  the process it means to reach
//   | nonce_i (16 bytes: u64 sequence, increasing per sender process, then 8 random bytes) |
//   | mac (32 bytes: auth step HELLO) |
// REPLY (type 2, 64 bytes), acceptor -> initiator, only when the acceptor
// knows the initiator, the HELLO's MAC is right and its sequence is new:
//   | preamble (8) | from jobid (u32) | from vpid (u32) | nonce_a (16) | mac (32) |
// CONFIRM (type 3, 40 bytes), initiator -> acceptor:
//   | preamble (8) | mac (32) |
// `link` is the index of the socket among the `links` an interface pair
// opens; `flags` bit 0 (kHelloReconnect): the sender's previous connection
// to this peer and link closed before it carried a frame, so an established
// connection that carried nothing may be replaced. An acceptor that refuses
// a HELLO (malformed, unknown or wrong name, bad link, duplicate, replayed
// sequence, bad MAC) closes the connection without a byte of reply.
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

#include "auth.hpp"
#include "proc_name.hpp"
#include "result.hpp"

namespace btl::drtcp::core {

using plugin::common::Result;

inline constexpr std::uint32_t kMagic = 0x44525443u;  // "DRTC"
inline constexpr std::uint8_t kVersion = 2;
inline constexpr std::size_t kPreambleSize = 8;
inline constexpr std::size_t kHelloSize = 76;
inline constexpr std::size_t kReplySize = 64;
inline constexpr std::size_t kConfirmSize = 40;
inline constexpr std::size_t kMaxHandshakeSize = kHelloSize;
inline constexpr std::uint8_t kHelloReconnect = 0x01;
// The label every MAC of this protocol is bound to.
inline constexpr const char* kAuthLabel = "drtcp-btl-v2";
inline constexpr std::uint8_t kFrameSync = 0xD7;
inline constexpr std::size_t kFrameHeaderSize = 8;
inline constexpr std::uint16_t kFrameFlagBye = 0x0001;
inline constexpr std::uint16_t kFrameFlagPut = 0x0002;
inline constexpr std::size_t kPutHeaderSize = 16;
inline constexpr std::uint32_t kMaxPutBytes = 1u << 30;

using plugin::common::ProcName;

namespace auth = plugin::common::auth;

enum class HsType : std::uint8_t { Hello = 1, Reply = 2, Confirm = 3 };
// The fixed length of a handshake message of `type`.
std::size_t handshake_size(HsType type) noexcept;

struct Hello {
    ProcName from;
    ProcName to;
    std::uint16_t link = 0;
    std::uint8_t flags = 0;  // kHelloReconnect
    auth::Nonce nonce{};
    auth::Mac mac{};
    friend bool operator==(const Hello&, const Hello&) = default;
};

struct Reply {
    ProcName from;
    auth::Nonce nonce{};
    auth::Mac mac{};
    friend bool operator==(const Reply&, const Reply&) = default;
};

struct Confirm {
    auth::Mac mac{};
    friend bool operator==(const Confirm&, const Confirm&) = default;
};

// The sequence a HELLO's nonce starts with.
std::uint64_t hello_sequence(const auth::Nonce& nonce) noexcept;
// A HELLO nonce: `seq` (big-endian) then 8 random bytes.
auth::Nonce make_hello_nonce(std::uint64_t seq, std::span<const std::uint8_t, 8> random) noexcept;

struct FrameHeader {
    std::uint8_t tag = 0;
    std::uint16_t flags = 0;  // 0, kFrameFlagBye or kFrameFlagPut
    std::uint32_t len = 0;
};

// Writes exactly kHelloSize / kReplySize / kConfirmSize / kFrameHeaderSize
// bytes into out (which must be at least that long) and returns the size written.
Result<std::size_t> encode(const Hello& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const Reply& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const Confirm& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const FrameHeader& h, std::span<std::uint8_t> out) noexcept;

struct PutHeader {
    std::uint64_t key = 0;
    std::uint64_t addr = 0;
};
Result<std::size_t> encode(const PutHeader& h, std::span<std::uint8_t> out) noexcept;
Result<PutHeader> decode_put_header(std::span<const std::uint8_t> bytes) noexcept;

// Checks a preamble (the first kPreambleSize bytes of `bytes`) against the
// type a receiver expects: magic, version, type, length. Truncated when
// shorter than a preamble.
Result<void> check_preamble(std::span<const std::uint8_t> bytes, HsType expected) noexcept;
// Decode and validate (preamble, reserved fields). Never read out of bounds,
// never assert. Truncated when shorter than the message.
Result<Hello> decode_hello(std::span<const std::uint8_t> bytes) noexcept;
Result<Reply> decode_reply(std::span<const std::uint8_t> bytes) noexcept;
Result<Confirm> decode_confirm(std::span<const std::uint8_t> bytes) noexcept;
// max_frame: the largest payload this receiver accepts (puts: kMaxPutBytes).
Result<FrameHeader> decode_frame_header(std::span<const std::uint8_t> bytes,
                                        std::uint32_t max_frame) noexcept;

}  // namespace btl::drtcp::core
