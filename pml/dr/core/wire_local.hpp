// pml dr wire format of trusted local paths (README "Trusted local paths").
//
// A path that moves frames through memory between processes of one node
// (the self BTL, vader) cannot lose, damage, duplicate or reorder one, so a
// small message to a peer reached only over such paths goes as a LOCAL_MATCH:
// no frame sequence, no cumulative ack, no checksum, no copy kept for
// resending. It travels on its own BTL tag (kLocalTag in the glue) and is
// taken only from a BTL the receiver itself trusts, for a peer it trusts.
// The sender is named by (cid, src_rank), as in ob1's match header.
//
// LOCAL_MATCH header (16 bytes, big-endian), then the payload (the rest of
// the frame; its length is the frame's):
//   0               1               2               3
//   +---------------+---------------+-------------------------------+
//   |    version    | type (12)     |            msg_seq            |
//   +---------------+---------------+-------------------------------+
//   |                              cid                              |
//   +---------------------------------------------------------------+
//   |                           src_rank                            |
//   +---------------------------------------------------------------+
//   |                              tag                              |
//   +---------------------------------------------------------------+
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "result.hpp"
#include "wire.hpp"
#include "wire_io.hpp"

namespace pml::dr::core {

inline constexpr std::size_t kLocalMatchHeaderSize = 16;
// The type byte: next to wire.hpp's FrameType values, none of which it is.
inline constexpr std::uint8_t kLocalMatchType = 12;

struct LocalMatchHdr {
    std::uint32_t cid = 0;
    std::int32_t src_rank = 0;
    std::int32_t tag = 0;
    std::uint16_t msg_seq = 0;
};

// Writes the 16-byte header at `out` (exactly kLocalMatchHeaderSize bytes).
void encode_local_match(const LocalMatchHdr& h,
                        std::span<std::uint8_t, kLocalMatchHeaderSize> out) noexcept;

// Reads the header at the start of `header` (at least kLocalMatchHeaderSize
// bytes). Refuses a short buffer, another version or another type. Inline:
// the direct receive path starts here.
inline plugin::common::Result<LocalMatchHdr> decode_local_match(
    std::span<const std::uint8_t> header) noexcept {
    using plugin::common::ErrorCode;
    using plugin::common::fail;
    using plugin::common::load_be;
    if (header.size() < kLocalMatchHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than a LOCAL_MATCH header");
    const std::uint8_t* p = header.data();
    const auto w0 = load_be<std::uint32_t>(p);
    if ((w0 >> 24) != kWireVersion)
        return fail(ErrorCode::BadVersion, "LOCAL_MATCH of another wire version");
    if (((w0 >> 16) & 0xFF) != kLocalMatchType)
        return fail(ErrorCode::BadType, "not a LOCAL_MATCH");
    LocalMatchHdr h;
    h.msg_seq = static_cast<std::uint16_t>(w0 & 0xFFFF);
    h.cid = load_be<std::uint32_t>(p + 4);
    h.src_rank = static_cast<std::int32_t>(load_be<std::uint32_t>(p + 8));
    h.tag = static_cast<std::int32_t>(load_be<std::uint32_t>(p + 12));
    return h;
}

// The MATCH fields a LOCAL_MATCH stands for (no checksum: nothing to check).
MatchFields match_fields_of(const LocalMatchHdr& h, std::size_t payload_len) noexcept;

}  // namespace pml::dr::core
