// Fuzz target: btl drtcp HELLO decoder (decode_hello).
//
// Input: | ctrl (u8) | wire bytes... |
//   ctrl bit 0 (kRawCrc): leave the CRC as it is. Otherwise the target
//   reseals it, so that mutated inputs get past the checksum to the fields.
//
// Properties: never crashes or reads out of bounds; errors are wire errors;
// anything shorter than a HELLO is Truncated; a decoded HELLO re-encodes to
// exactly the 32 bytes it came from (the format is canonical: fixed
// version, zero reserved fields, CRC over the rest), and decodes back to
// the same fields.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "crc32c.hpp"
#include "fuzz_util.hpp"
#include "wire.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;

constexpr std::uint8_t kRawCrc = 0x01;

bool same(const Hello& a, const Hello& b) {
    return a.from == b.from && a.link == b.link && a.nonce == b.nonce;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint8_t ctrl = in.u8();
    const auto rest = in.rest();
    std::vector<std::uint8_t> wire(rest.begin(), rest.end());
    if ((ctrl & kRawCrc) == 0 && wire.size() >= kHelloSize)
        fuzz::put_be32(std::span(wire).subspan(kHelloSize - 4),
                       plugin::common::crc32c(wire.data(), kHelloSize - 4));
    const std::span<const std::uint8_t> bytes(wire);

    for (std::size_t n = 0; n < std::min(bytes.size(), kHelloSize); ++n) {
        const auto t = decode_hello(bytes.first(n));
        fuzz::check(!t && t.error().code == ErrorCode::Truncated,
                    "a HELLO shorter than kHelloSize is not Truncated");
    }

    const auto h = decode_hello(bytes);
    if (!h) {
        fuzz::check(fuzz::is_wire_error(h.error().code), "decode_hello: not a wire error code");
        return 0;
    }
    fuzz::check(bytes.size() >= kHelloSize, "decoded a HELLO from fewer than kHelloSize bytes");

    std::array<std::uint8_t, kHelloSize> again{};
    const auto n = encode(*h, again);
    fuzz::check(n.has_value() && *n == kHelloSize, "encode(decoded HELLO) failed");
    fuzz::check(std::equal(again.begin(), again.end(), bytes.begin()),
                "decoded HELLO does not re-encode to the same bytes");
    const auto h2 = decode_hello(again);
    fuzz::check(h2.has_value() && same(*h, *h2), "decode(encode(HELLO)) differs");
    return 0;
}
