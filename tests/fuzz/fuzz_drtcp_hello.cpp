// Fuzz target: btl drtcp handshake decoders (decode_hello, decode_reply,
// decode_confirm, check_preamble) of wire version 2.
//
// Input: | ctrl (u8) | wire bytes... |
//   ctrl bits 0-1: the message type expected (0 or 3: HELLO, 1: REPLY,
//                  2: CONFIRM)
//   ctrl bit 2 (kRawPreamble): leave the 8-byte preamble as it is.
//                  Otherwise the target rewrites it as valid for the type,
//                  so that mutated inputs get past it to the fields.
//
// Properties: never crashes or reads out of bounds; errors are wire errors;
// anything shorter than the preamble is Truncated, anything shorter than the
// message fails; the preamble check alone agrees with the full decoder on
// preamble errors; a decoded message re-encodes to exactly the bytes it came
// from (the format is canonical: fixed version and length, zero reserved
// fields, known flags only) and decodes back to the same fields.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "wire.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;

constexpr std::uint8_t kRawPreamble = 0x04;

template <typename T, typename Decode>
void check_message(std::span<const std::uint8_t> bytes, std::size_t size, Decode decode) {
    for (std::size_t n = 0; n < std::min(bytes.size(), size); ++n) {
        const auto t = decode(bytes.first(n));
        fuzz::check(!t.has_value(), "decoded a handshake message from too few bytes");
        if (n < kPreambleSize)
            fuzz::check(t.error().code == ErrorCode::Truncated,
                        "shorter than a preamble is not Truncated");
    }
    const auto m = decode(bytes);
    if (!m) {
        fuzz::check(fuzz::is_wire_error(m.error().code), "not a wire error code");
        return;
    }
    fuzz::check(bytes.size() >= size, "decoded a message from fewer bytes than its size");
    std::array<std::uint8_t, kMaxHandshakeSize> again{};
    const auto n = encode(*m, again);
    fuzz::check(n.has_value() && *n == size, "encode(decoded message) failed");
    fuzz::check(std::equal(again.begin(), again.begin() + static_cast<long>(size), bytes.begin()),
                "decoded message does not re-encode to the same bytes");
    const auto m2 = decode(std::span<const std::uint8_t>(again).first(size));
    fuzz::check(m2.has_value() && *m2 == *m, "decode(encode(message)) differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint8_t ctrl = in.u8();
    const auto rest = in.rest();
    std::vector<std::uint8_t> wire(rest.begin(), rest.end());
    const HsType type = (ctrl & 3) == 1   ? HsType::Reply
                        : (ctrl & 3) == 2 ? HsType::Confirm
                                          : HsType::Hello;
    const std::size_t msg_size = handshake_size(type);
    if ((ctrl & kRawPreamble) == 0 && wire.size() >= kPreambleSize) {
        fuzz::put_be32(wire, kMagic);
        wire[4] = kVersion;
        wire[5] = static_cast<std::uint8_t>(type);
        wire[6] = static_cast<std::uint8_t>(msg_size >> 8);
        wire[7] = static_cast<std::uint8_t>(msg_size);
    }
    const std::span<const std::uint8_t> bytes(wire);

    // The preamble check agrees with the decoders about the preamble.
    const auto pre = check_preamble(bytes, type);
    if (!pre)
        fuzz::check(fuzz::is_wire_error(pre.error().code), "check_preamble: not a wire error");

    switch (type) {
        case HsType::Hello:
            check_message<Hello>(bytes, kHelloSize, [](auto b) { return decode_hello(b); });
            if (!pre && bytes.size() >= kHelloSize)
                fuzz::check(decode_hello(bytes).error().code == pre.error().code,
                            "decode_hello disagrees with check_preamble");
            break;
        case HsType::Reply:
            check_message<Reply>(bytes, kReplySize, [](auto b) { return decode_reply(b); });
            if (!pre && bytes.size() >= kReplySize)
                fuzz::check(decode_reply(bytes).error().code == pre.error().code,
                            "decode_reply disagrees with check_preamble");
            break;
        case HsType::Confirm:
            check_message<Confirm>(bytes, kConfirmSize, [](auto b) { return decode_confirm(b); });
            if (!pre && bytes.size() >= kConfirmSize)
                fuzz::check(decode_confirm(bytes).error().code == pre.error().code,
                            "decode_confirm disagrees with check_preamble");
            break;
    }
    return 0;
}
