// Software CRC32C (slicing-by-8), run-time dispatch and combine.
#include "crc32c.hpp"

#include <bit>
#include <string_view>

#include "crc32c_fixed.hpp"
#include "crc32c_internal.hpp"

namespace plugin::common {
namespace {

using crc32c_detail::kPoly;

// kSlices[k][b]: register after byte b followed by k zero bytes, so eight
// input bytes are folded with eight independent lookups.
using SliceTables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr SliceTables make_slice_tables() noexcept {
    SliceTables t{};
    for (std::uint32_t b = 0; b < 256; ++b) {
        std::uint32_t reg = b;
        for (int bit = 0; bit < 8; ++bit)
            reg = (reg & 1u) != 0 ? (reg >> 1) ^ kPoly : reg >> 1;
        t[0][b] = reg;
    }
    for (std::size_t k = 1; k < t.size(); ++k) {
        for (std::size_t b = 0; b < 256; ++b)
            t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
    }
    return t;
}

constexpr SliceTables kSlices = make_slice_tables();

// Compile-time self check against the catalogue check value.
constexpr std::uint32_t bytewise_crc(std::string_view s) noexcept {
    std::uint32_t reg = ~0u;
    for (const char c : s)
        reg = (reg >> 8) ^ kSlices[0][(reg ^ static_cast<std::uint8_t>(c)) & 0xffu];
    return ~reg;
}
static_assert(bytewise_crc("123456789") == 0xE3069283u);

// Slicing-by-8 works on the value of eight bytes read least significant first.
inline std::uint64_t load_le64(const std::uint8_t* p) noexcept {
    const std::uint64_t v = crc32c_detail::load64(p);
    if constexpr (std::endian::native == std::endian::big)
        return __builtin_bswap64(v);
    return v;
}

template <bool kCopy>
std::uint32_t sw_update(std::uint32_t reg, const std::uint8_t* src, std::uint8_t* dst,
                        std::size_t len) noexcept {
    for (; len >= 8; len -= 8, src += 8) {
        if constexpr (kCopy) {
            std::memcpy(dst, src, 8);
            dst += 8;
        }
        const std::uint64_t v = load_le64(src) ^ reg;
        reg = kSlices[7][v & 0xffu] ^ kSlices[6][(v >> 8) & 0xffu] ^ kSlices[5][(v >> 16) & 0xffu] ^
              kSlices[4][(v >> 24) & 0xffu] ^ kSlices[3][(v >> 32) & 0xffu] ^
              kSlices[2][(v >> 40) & 0xffu] ^ kSlices[1][(v >> 48) & 0xffu] ^ kSlices[0][v >> 56];
    }
    for (; len > 0; --len, ++src) {
        if constexpr (kCopy)
            *dst++ = *src;
        reg = (reg >> 8) ^ kSlices[0][(reg ^ *src) & 0xffu];
    }
    return reg;
}

const std::uint8_t* bytes_of(const void* p) noexcept {
    return static_cast<const std::uint8_t*>(p);
}

}  // namespace

bool crc32c_hw_available() noexcept {
    // Probed once; a function-local static is safe even when a caller runs
    // during another translation unit's static initialisation.
    static const bool available = crc32c_detail::hw_detect();
    return available;
}

std::uint32_t crc32c_sw(const void* data, std::size_t len, std::uint32_t crc) noexcept {
    return ~sw_update<false>(~crc, bytes_of(data), nullptr, len);
}

std::uint32_t crc32c_copy_sw(void* dst, const void* src, std::size_t len,
                             std::uint32_t crc) noexcept {
    return ~sw_update<true>(~crc, bytes_of(src), static_cast<std::uint8_t*>(dst), len);
}

std::uint32_t crc32c_hw(const void* data, std::size_t len, std::uint32_t crc) noexcept {
    if (!crc32c_hw_available())
        return crc32c_sw(data, len, crc);
    return ~crc32c_detail::hw_update(~crc, bytes_of(data), len);
}

std::uint32_t crc32c_copy_hw(void* dst, const void* src, std::size_t len,
                             std::uint32_t crc) noexcept {
    if (!crc32c_hw_available())
        return crc32c_copy_sw(dst, src, len, crc);
    return ~crc32c_detail::hw_update_copy(~crc, bytes_of(src), static_cast<std::uint8_t*>(dst),
                                          len);
}

std::uint32_t crc32c(const void* data, std::size_t len, std::uint32_t crc) noexcept {
    return crc32c_lib(data, len, crc);
}

std::uint32_t crc32c_header_sw(const void* data, std::size_t len, std::size_t field) noexcept {
    if (field > len || len - field < 4)
        return crc32c_sw(data, len);  // no field inside: nothing to skip
    constexpr std::uint8_t kZeros[4] = {};
    std::uint32_t reg = sw_update<false>(~0u, bytes_of(data), nullptr, field);
    reg = sw_update<false>(reg, kZeros, nullptr, 4);
    reg = sw_update<false>(reg, bytes_of(data) + field + 4, nullptr, len - field - 4);
    return ~reg;
}

// Read once at load for the per-frame path (false until then: the software
// path, still right, for any caller during static initialisation).
extern const bool crc32c_detail::g_hw_at_load = crc32c_hw_available();

namespace {

// The hardware path works in 4-byte steps on a field inside the header;
// anything else is rare enough for the general one.
std::uint32_t header_crc(bool hw, const void* data, std::size_t len, std::size_t field) noexcept {
    if (hw && ((len | field) & 3u) == 0 && field <= len && len - field >= 4)
        return ~crc32c_detail::hw_update_header(~0u, bytes_of(data), len, field);
    return crc32c_header_sw(data, len, field);
}

}  // namespace

std::uint32_t crc32c_header_hw(const void* data, std::size_t len, std::size_t field) noexcept {
    return header_crc(crc32c_hw_available(), data, len, field);
}

std::uint32_t crc32c_header(const void* data, std::size_t len, std::size_t field) noexcept {
    return header_crc(crc32c_detail::g_hw_at_load, data, len, field);
}

std::uint32_t crc32c_copy(void* dst, const void* src, std::size_t len, std::uint32_t crc) noexcept {
    return crc32c_copy_lib(dst, src, len, crc);
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t len_b) noexcept {
    // With complemented results, crc(a||b) = shift(crc(a), len(b)) ^ crc(b):
    // the ~0 presets of the two computations cancel out.
    return crc32c_detail::gf2_mul(crc32c_detail::xpow8n(len_b), crc_a) ^ crc_b;
}

}  // namespace plugin::common
