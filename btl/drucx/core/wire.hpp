// btl drucx wire format, version 1 (sans I/O). UCX carries the bytes; these
// are the two things drucx itself puts on the wire.
//
// MODEX blob (published per process; the peer's is hostile input):
//   0               1               2               3
//   +---------------+---------------+-------------------------------+
//   |    version    |   reserved    |          reserved (0)         |
//   +---------------+---------------+-------------------------------+
//   |                   addr_len (u32, <= kMaxAddress)              |
//   +---------------------------------------------------------------+
//   |          addr: addr_len bytes (the UCX worker address)        |
//   +---------------------------------------------------------------+
//   |          crc (CRC32C of everything before it)                 |
//   +---------------------------------------------------------------+
//
// AM header (4 bytes) in front of every active message drucx sends:
//   | tag (u8: the BTL tag) | kind (u8: 1 data, 2 bye) | reserved (u16, 0) |
// A data message carries the BTL segment after it. BYE (tag 0) carries the
// sender's process name and nothing else:
//   | AM header (tag 0, kind 2) | jobid (u32) | vpid (u32) |
// it says the sender is leaving (MPI_Finalize): its endpoint closing from
// then on is not a failure. An unknown kind, nonzero reserved bits or a BYE
// with a tag or of another length are counted and dropped.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proc_name.hpp"
#include "result.hpp"
#include "wire_io.hpp"

namespace btl::drucx::core {

using plugin::common::Result;

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kMaxAddress = 64 * 1024;
inline constexpr std::size_t kAmHeaderSize = 4;
inline constexpr std::size_t kByeSize = kAmHeaderSize + 8;

enum class AmKind : std::uint8_t { Data = 1, Bye = 2 };

struct AmHeader {
    std::uint8_t tag = 0;
    AmKind kind = AmKind::Data;
};

std::vector<std::uint8_t> encode_modex(std::span<const std::uint8_t> address);
// The worker address inside a peer's blob (a view into `blob`).
Result<std::span<const std::uint8_t>> decode_modex(std::span<const std::uint8_t> blob) noexcept;

// Inside the modex address: one entry per UCT interface a process opened
// (the AM transport first, then the RMA one if any):
//   | transport name, NUL-terminated (<= 31 chars) | len (u16) | len bytes |
struct TlAddress {
    std::string tl;
    std::span<const std::uint8_t> address;  // a view into the decoded bytes
};
inline constexpr std::size_t kMaxTlAddresses = 4;
std::vector<std::uint8_t> encode_addresses(std::span<const TlAddress> entries);
Result<std::vector<TlAddress>> decode_addresses(std::span<const std::uint8_t> bytes);

// The AM header codec is inline: it runs on every message.
inline Result<std::size_t> encode(const AmHeader& h, std::span<std::uint8_t> out) noexcept {
    using plugin::common::ByteWriter;
    using plugin::common::ErrorCode;
    using plugin::common::fail;
    if (out.size() < kAmHeaderSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than an AM header");
    ByteWriter w(out.first(kAmHeaderSize));
    w.u8(h.tag);
    w.u8(static_cast<std::uint8_t>(h.kind));
    w.u16(0);
    return w.finish();
}

// `message`: the whole active message (header + payload).
inline Result<AmHeader> decode_am_header(std::span<const std::uint8_t> message) noexcept {
    using plugin::common::ByteReader;
    using plugin::common::ErrorCode;
    using plugin::common::fail;
    if (message.size() < kAmHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than an AM header");
    ByteReader r(message.first(kAmHeaderSize));
    AmHeader h;
    h.tag = r.u8();
    const std::uint8_t kind = r.u8();
    r.expect_zero(2);
    if (!r.ok())
        return fail(r.error());
    switch (kind) {
        case static_cast<std::uint8_t>(AmKind::Data):
            h.kind = AmKind::Data;
            return h;
        case static_cast<std::uint8_t>(AmKind::Bye):
            if (h.tag != 0 || message.size() != kByeSize)
                return fail(ErrorCode::BadField, "BYE with a tag or of a wrong length");
            h.kind = AmKind::Bye;
            return h;
        default:
            return fail(ErrorCode::BadType, "unknown drucx AM kind");
    }
}

using plugin::common::ProcName;
std::array<std::uint8_t, kByeSize> encode_bye(ProcName sender) noexcept;
// The sender named by a message decode_am_header() accepted as a BYE.
Result<ProcName> decode_bye(std::span<const std::uint8_t> message) noexcept;

}  // namespace btl::drucx::core
