// pml dr wire format, version 5.
//
// Every frame the PML hands to a BTL starts with the common header, then a
// type-specific header, then (MATCH, RNDV, FRAG) payload bytes. All integers
// are big-endian. Every header type has a fixed size: it is checked once,
// then each field is one load or store at its offset (memcpy and a byte
// swap); no struct is ever cast onto bytes.
//
// Common header (24 bytes):
//   0               1               2               3
//   +---------------+---------------+-------------------------------+
//   |    version    |     type      |             flags             |
//   +---------------+---------------+-------------------------------+
//   |                     hdr_crc (CRC32C, see below)               |
//   +---------------------------------------------------------------+
//   |                 src_jobid (sender's ORTE job id)              |
//   +---------------------------------------------------------------+
//   |                 src_vpid  (sender's rank in its job)          |
//   +---------------------------------------------------------------+
//   |          frame_seq (per sender->receiver channel; 0: none)    |
//   +---------------------------------------------------------------+
//   |   ack_seq (every frame_seq <= this from the receiver arrived)  |
//   +---------------------------------------------------------------+
//
// ack_seq is the sender's cumulative acknowledgement of the reverse
// channel, carried by every frame (a reply to a small message acknowledges
// it without an ACK frame); the ACK frame adds the selective part.
//
// hdr_crc is CRC32C over the whole header (common + type-specific) with the
// hdr_crc field taken as zero. It is checked before any other field is
// believed. Payload CRC32C is present when flags has kFlagPayloadCsum; when
// it is absent the payload_crc field must be zero.
//
// MATCH: a whole message in one frame (eager). +24 bytes:
//   | cid (u32) | src_rank (i32) | tag (i32) | msg_seq (u16) | reserved (u16) |
//   | payload_len (u32) | payload_crc (u32) |
// RNDV: first frame of a message the receiver must accept (long or synchronous). +48:
//   | cid | src_rank | tag | msg_seq (u16) | reserved (u16) | payload_len (u32) |
//   | payload_crc (u32) | msg_len (u64) | send_req (u64) | remote_addr (u64) |
//   Without kFlagRget the payload is the message's first bytes and remote_addr
//   is zero. With kFlagRget the payload is the sender's BTL registration
//   handle for the whole (contiguous) message at remote_addr, which the
//   receiver may fetch with a BTL get; it then sends a CTS with
//   offset == want_len ("nothing more to send"). kFlagRget requires the
//   payload CRC, since the handle steers a remote memory read. With
//   kFlagDataCsum too, the payload ends with the CRC32C (u32) of the msg_len
//   bytes at remote_addr: the receiver checks what its gets brought against
//   it and, if it differs, answers with a CTS at offset 0 (FRAGs instead).
// CTS: receiver matched a RNDV; send bytes [offset, want_len). +32:
//   | send_req (u64) | recv_req (u64) | offset (u64) | want_len (u64) |
// FRAG: bytes of a matched message at offset. +24:
//   | recv_req (u64) | offset (u64) | payload_len (u32) | payload_crc (u32) |
// CREDIT: eager flow control. +8:
//   | released_total (u64: eager payload bytes of the receiver's peer that left
//   |                  its unexpected store, ever; cumulative so loss and
//   |                  duplication are harmless) |
// ACK: channel acknowledgement: the common ack_seq, a selective part, the
//   receiver's ACK timing and its eager-credit report. +28:
//   | sack_base (u32) | sack_mask (u64) | ack_delay (u32) | max_ack_delay (u32) |
//   | released_total (u64, as CREDIT's) |
//   bit i of sack_mask set: seq sack_base + i arrived intact. ack_delay: how
//   long (us) the receiver held this ACK after the latest arrival it covers;
//   max_ack_delay: its bound on that (us), which the sender adds to its probe
//   timeout. Both saturate at 2^32 - 1. kFlagCreditAnswer: sent right after
//   the receiver took a frame flagged kFlagCreditStarved, so released_total
//   includes that frame's release (the sender waits for this answer before
//   choosing between eager and RNDV for what did not fit).
// NACK: frame `seq` arrived with an intact header but a damaged payload;
//   resend it now rather than at the ACK timeout. +8:
//   | seq (u32) | reserved (u32, zero) |
// PUT: receiver matched a RNDV and asks the sender to write bytes
//   [offset, want_len) of the message with BTL puts at remote_addr + offset
//   (its contiguous buffer; only BTLs that need no registration, so nothing
//   else is needed), then to send a FRAG with kFlagPutDone and no payload at
//   offset == want_len. With kFlagPayloadCsum that FRAG's payload_crc is the
//   CRC32C of the bytes put, [offset, want_len) of the message: the receiver
//   checks them in its buffer and answers with a CTS, offset == want_len when
//   they are right (the send completes on it), else offset where the bytes
//   must come again as FRAGs. A sender that cannot put treats it as a CTS. +40:
//   | send_req (u64) | recv_req (u64) | offset (u64) | want_len (u64) |
//   | remote_addr (u64, not zero) |
// PROBE / PROBE_ACK: is this path alive both ways? The receiver of a PROBE
//   answers with a PROBE_ACK carrying the same id on the path it came by.
//   Unsequenced, as ACK and NACK (frame_seq is not looked at). +8:
//   | probe_id (u32, not zero) | reserved (u32, zero) |
// BYE: finalize. The sender has nothing of its own unacknowledged, owes no
//   ACK and no PROBE answer, expects no answer to a PROBE of its own (a PTO
//   at most), and after this frame sends nothing on the channel but ACKs
//   for late frames of the receiver; once it has the receiver's BYE too, it
//   sends nothing at all and may close. Unsequenced.
//   +8: | reserved (u64, zero) |
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include "result.hpp"

namespace pml::dr::core {

inline constexpr std::uint8_t kWireVersion = 6;

enum class FrameType : std::uint8_t {
    Match = 1,
    Rndv = 2,
    Cts = 3,
    Frag = 4,
    Ack = 5,
    Credit = 6,
    Nack = 7,
    Put = 8,
    Probe = 9,
    ProbeAck = 10,
    Bye = 11,
    // 12 is LOCAL_MATCH (wire_local.hpp): not a common-header frame, it never
    // comes through this codec.
};
std::string_view to_string(FrameType t) noexcept;

enum FrameFlags : std::uint16_t {
    kFlagPayloadCsum = 0x0001,    // payload_crc is meaningful
    kFlagSync = 0x0002,           // RNDV of a synchronous send: CTS doubles as the match ack
    kFlagRetransmit = 0x0004,     // frame is a resend (statistics only)
    kFlagRget = 0x0008,           // RNDV: payload is a registration handle (see above)
    kFlagCreditStarved = 0x0010,  // MATCH, RNDV: the sender is short of eager credit; answer now
    kFlagAckNow = 0x0020,         // a request waits for this frame's ACK: do not delay it
    kFlagPutDone = 0x0040,        // FRAG without payload: the PUT's writes are complete
    kFlagDataCsum = 0x0080,       // RGET RNDV: the payload ends with the data's CRC32C
    kFlagCreditAnswer = 0x0100,   // ACK: answers a frame flagged kFlagCreditStarved
};
inline constexpr std::uint16_t kKnownFlags = kFlagPayloadCsum | kFlagSync | kFlagRetransmit |
                                             kFlagRget | kFlagCreditStarved | kFlagAckNow |
                                             kFlagPutDone | kFlagDataCsum | kFlagCreditAnswer;
inline constexpr std::uint16_t kRndvOnlyFlags = kFlagSync | kFlagRget | kFlagDataCsum;
// Bytes kFlagDataCsum adds at the end of an RGET RNDV's payload.
inline constexpr std::size_t kDataCsumSize = 4;

inline constexpr std::size_t kCommonHeaderSize = 24;
inline constexpr std::size_t kMatchHeaderSize = kCommonHeaderSize + 24;
inline constexpr std::size_t kRndvHeaderSize = kCommonHeaderSize + 48;
inline constexpr std::size_t kCtsHeaderSize = kCommonHeaderSize + 32;
inline constexpr std::size_t kFragHeaderSize = kCommonHeaderSize + 24;
inline constexpr std::size_t kAckHeaderSize = kCommonHeaderSize + 28;
inline constexpr std::size_t kCreditHeaderSize = kCommonHeaderSize + 8;
inline constexpr std::size_t kNackHeaderSize = kCommonHeaderSize + 8;
inline constexpr std::size_t kPutHeaderSize = kCommonHeaderSize + 40;
inline constexpr std::size_t kProbeHeaderSize = kCommonHeaderSize + 8;
inline constexpr std::size_t kByeHeaderSize = kCommonHeaderSize + 8;
inline constexpr std::size_t kMaxHeaderSize = kRndvHeaderSize;

// Header size of a type, 0 if unknown.
std::size_t header_size(FrameType t) noexcept;

struct Common {
    FrameType type = FrameType::Match;
    std::uint16_t flags = 0;
    std::uint32_t src_jobid = 0;
    std::uint32_t src_vpid = 0;
    std::uint32_t frame_seq = 0;
    std::uint32_t ack_seq = 0;
};

struct MatchFields {
    std::uint32_t cid = 0;
    std::int32_t src_rank = 0;
    std::int32_t tag = 0;
    std::uint16_t msg_seq = 0;
    std::uint32_t payload_len = 0;
    std::uint32_t payload_crc = 0;
};

struct MatchHdr {
    Common common;
    MatchFields match;
};

struct RndvHdr {
    Common common;
    MatchFields match;
    std::uint64_t msg_len = 0;
    std::uint64_t send_req = 0;
    std::uint64_t remote_addr = 0;
};

struct CtsHdr {
    Common common;
    std::uint64_t send_req = 0;
    std::uint64_t recv_req = 0;
    std::uint64_t offset = 0;
    std::uint64_t want_len = 0;
};

struct FragHdr {
    Common common;
    std::uint64_t recv_req = 0;
    std::uint64_t offset = 0;
    std::uint32_t payload_len = 0;
    std::uint32_t payload_crc = 0;
};

struct AckHdr {
    Common common;  // its ack_seq is the cumulative part
    std::uint32_t sack_base = 0;
    std::uint64_t sack_mask = 0;
    std::uint32_t ack_delay = 0;      // us
    std::uint32_t max_ack_delay = 0;  // us
    // The receiver's eager-credit report, as a CREDIT frame's (see CreditHdr).
    std::uint64_t released_total = 0;
};

struct CreditHdr {
    Common common;
    std::uint64_t released_total = 0;
};

struct NackHdr {
    Common common;
    std::uint32_t seq = 0;
};

// PROBE (reply false) and PROBE_ACK (reply true): one layout.
struct ProbeHdr {
    Common common;
    std::uint32_t probe_id = 0;
    bool reply = false;
};

// BYE: nothing but the common header (see above).
struct ByeHdr {
    Common common;
};

struct PutHdr {
    Common common;
    std::uint64_t send_req = 0;
    std::uint64_t recv_req = 0;
    std::uint64_t offset = 0;
    std::uint64_t want_len = 0;
    std::uint64_t remote_addr = 0;
};

// A PUT read as the CTS it stands for (a sender that cannot put sends FRAGs).
inline CtsHdr cts_of(const PutHdr& put) noexcept {
    return CtsHdr{put.common, put.send_req, put.recv_req, put.offset, put.want_len};
}

using Header = std::variant<MatchHdr, RndvHdr, CtsHdr, FragHdr, AckHdr, CreditHdr, NackHdr, PutHdr,
                            ProbeHdr, ByeHdr>;

// Encoders write exactly header_size(type) bytes (hdr_crc included) into out,
// which must be at least that long; they return the size written.
using plugin::common::Result;
Result<std::size_t> encode(const MatchHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const RndvHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const CtsHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const FragHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const AckHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const CreditHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const NackHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const PutHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const ProbeHdr& h, std::span<std::uint8_t> out) noexcept;
Result<std::size_t> encode(const ByeHdr& h, std::span<std::uint8_t> out) noexcept;

// Stamps an encoded header in place with its channel seq, the current
// ack_seq and extra flags (only kFlagRetransmit and kFlagAckNow; anything
// else is BadField and nothing is written) and reseals its CRC. The frame
// is built once and its seq is known only when the channel transmits it.
Result<void> stamp(std::span<std::uint8_t> header, std::uint32_t frame_seq, std::uint32_t ack_seq,
                   std::uint16_t add_flags) noexcept;

// The ack_seq an encoded header carries (0 if shorter than the common header).
std::uint32_t ack_seq_of(std::span<const std::uint8_t> header) noexcept;

struct Decoded {
    Header header;
    std::span<const std::uint8_t> payload;  // bytes after the header
};

// Decodes a whole frame: length, header CRC, version, type, flags, reserved
// fields, per-type lengths (payload_len must equal the bytes present), and
// the payload CRC when the frame says it carries one. Never reads out of
// bounds; never asserts.
// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
Result<Decoded> decode(std::span<const std::uint8_t> frame) noexcept;

// The same, filling a caller's Decoded (no copies on the receive hot path).
// After an error `out` is unspecified (its header may be half-written): use
// none of it.
// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
Result<void> decode_into(std::span<const std::uint8_t> frame, Decoded& out) noexcept;

// The receive fast path's decoder: true only for a whole MATCH frame that
// decode_into() would accept apart from its payload CRC (which, when the
// flags declare one, the caller checks), filling `out` exactly as it would.
// False says nothing about why: decode_into() tells.
bool decode_match(std::span<const std::uint8_t> frame, MatchHdr& out) noexcept;

// The payload CRC a decoded frame declares (false: none), for callers that
// verify the payload apart from the header (decode_into checks both). A
// PUT-done FRAG has no payload to check: its payload_crc is the put data's.
bool payload_crc_of(const Decoded& d, std::uint32_t& crc) noexcept;

// The common header of any decoded header.
// (std::get_if, not std::visit: nothing here may throw.)
inline const Common& common_of(const Header& h) noexcept {
    if (const auto* m = std::get_if<MatchHdr>(&h))
        return m->common;
    if (const auto* r = std::get_if<RndvHdr>(&h))
        return r->common;
    if (const auto* c = std::get_if<CtsHdr>(&h))
        return c->common;
    if (const auto* f = std::get_if<FragHdr>(&h))
        return f->common;
    if (const auto* a = std::get_if<AckHdr>(&h))
        return a->common;
    if (const auto* n = std::get_if<NackHdr>(&h))
        return n->common;
    if (const auto* p = std::get_if<PutHdr>(&h))
        return p->common;
    if (const auto* p = std::get_if<ProbeHdr>(&h))
        return p->common;
    if (const auto* b = std::get_if<ByeHdr>(&h))
        return b->common;
    return std::get_if<CreditHdr>(&h)->common;
}

// Checks only the header of a frame whose payload is not contiguous with it
// (scatter/gather segments): payload CRC is then the caller's business.
// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
Result<Decoded> decode_header(std::span<const std::uint8_t> header_bytes,
                              std::size_t payload_bytes) noexcept;
// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
Result<void> decode_header_into(std::span<const std::uint8_t> header_bytes,
                                std::size_t payload_bytes, Decoded& out) noexcept;

}  // namespace pml::dr::core
