// Fuzz target: btl drtcp frame header decoder (decode_frame_header).
//
// Input: | max_frame (u32, big-endian) | wire bytes... |
//
// Properties: never crashes or reads out of bounds; errors are wire errors;
// anything shorter than a header is Truncated; an accepted length is at
// most max_frame, and a header refused only for its length is accepted
// under a larger max_frame; a decoded header re-encodes to exactly the bytes
// it came from and decodes back to the same fields (compared through the
// encoding, so fields added to FrameHeader later are covered too).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "fuzz_util.hpp"
#include "wire.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;

constexpr std::uint32_t kNoLimit = std::numeric_limits<std::uint32_t>::max();

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint32_t max_frame = in.u32();
    const auto bytes = in.rest();

    for (std::size_t n = 0; n < std::min(bytes.size(), kFrameHeaderSize); ++n) {
        const auto t = decode_frame_header(bytes.first(n), max_frame);
        fuzz::check(!t && t.error().code == ErrorCode::Truncated,
                    "a frame header shorter than kFrameHeaderSize is not Truncated");
    }

    const auto h = decode_frame_header(bytes, max_frame);
    if (!h) {
        fuzz::check(fuzz::is_wire_error(h.error().code),
                    "decode_frame_header: not a wire error code");
        const bool put_flag = bytes.size() >= 4 && bytes[2] == 0 && bytes[3] == kFrameFlagPut;
        if (h.error().code == ErrorCode::BadLength && !put_flag) {
            const auto unlimited = decode_frame_header(bytes, kNoLimit);
            fuzz::check(unlimited.has_value() || unlimited.error().code != ErrorCode::BadLength,
                        "a frame length is too long even for max_frame = 2^32 - 1");
        }
        return 0;
    }
    fuzz::check(bytes.size() >= kFrameHeaderSize, "decoded a header from too few bytes");
    // A PUT is bounded by kMaxPutBytes instead: the bytes go to registered
    // memory, not to a buffer of max_frame.
    const bool put = h->flags == kFrameFlagPut;
    fuzz::check(put ? h->len <= kMaxPutBytes : h->len <= max_frame,
                "accepted a frame longer than its limit");

    std::array<std::uint8_t, kFrameHeaderSize> again{};
    const auto n = encode(*h, again);
    fuzz::check(n.has_value() && *n == kFrameHeaderSize, "encode(decoded header) failed");
    fuzz::check(std::equal(again.begin(), again.end(), bytes.begin()),
                "decoded frame header does not re-encode to the same bytes");

    // The limit is inclusive: the same header is accepted at max_frame ==
    // len and refused one below.
    const auto h2 = decode_frame_header(again, h->len);
    fuzz::check(h2.has_value() && h2->tag == h->tag && h2->len == h->len,
                "decode(encode(header)) differs or refuses len == max_frame");
    std::array<std::uint8_t, kFrameHeaderSize> third{};
    fuzz::check(encode(*h2, third).has_value() && third == again,
                "decode(encode(header)) does not re-encode to the same bytes");
    if (h->len > 0 && !put) {
        const auto over = decode_frame_header(again, h->len - 1);
        fuzz::check(!over && over.error().code == ErrorCode::BadLength,
                    "a frame one byte over max_frame is not BadLength");
    }
    return 0;
}
