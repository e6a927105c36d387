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
// bytes). Refuses a short buffer, another version or another type.
plugin::common::Result<LocalMatchHdr> decode_local_match(
    std::span<const std::uint8_t> header) noexcept;

// The MATCH fields a LOCAL_MATCH stands for (no checksum: nothing to check).
MatchFields match_fields_of(const LocalMatchHdr& h, std::size_t payload_len) noexcept;

}  // namespace pml::dr::core
