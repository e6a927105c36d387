// Internals shared by crc32c.cpp (software path, dispatch) and crc32c_hw.cpp
// (CPU instructions). Not part of the public API.
//
// Polynomials here use the reflected bit order CRC32C is defined in: the
// coefficient of x^k lives in bit 31-k, so "1" is 0x80000000 and multiplying
// by x is a right shift.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace plugin::common::crc32c_detail {

inline constexpr std::uint32_t kPoly = 0x82F63B78u;   // Castagnoli, reflected
inline constexpr std::uint32_t kOne = 0x80000000u;    // the polynomial 1
inline constexpr std::uint32_t kXPow8 = 0x00800000u;  // x^8: one byte of shift

// a * b mod P over GF(2).
constexpr std::uint32_t gf2_mul(std::uint32_t a, std::uint32_t b) noexcept {
    std::uint32_t product = 0;
    for (std::uint32_t bit = kOne; bit != 0; bit >>= 1) {
        if ((a & bit) != 0)
            product ^= b;
        b = (b & 1u) != 0 ? (b >> 1) ^ kPoly : b >> 1;  // b *= x
    }
    return product;
}

// x^(8n) mod P: the operator that advances a CRC register over n zero bytes.
constexpr std::uint32_t xpow8n(std::size_t n) noexcept {
    std::uint32_t result = kOne;
    std::uint32_t square = kXPow8;
    for (; n != 0; n >>= 1) {
        if ((n & 1u) != 0)
            result = gf2_mul(result, square);
        square = gf2_mul(square, square);
    }
    return result;
}

// Advancing a register over a fixed number of zero bytes is linear in the
// register, so it splits into four byte-indexed tables. Used to join the
// three interleaved streams of the hardware path: 4 loads instead of a
// 32-step gf2_mul per join.
struct ShiftTable {
    std::array<std::array<std::uint32_t, 256>, 4> t{};

    constexpr std::uint32_t apply(std::uint32_t reg) const noexcept {
        return t[0][reg & 0xffu] ^ t[1][(reg >> 8) & 0xffu] ^ t[2][(reg >> 16) & 0xffu] ^
               t[3][reg >> 24];
    }
};

constexpr ShiftTable make_shift_table(std::size_t zero_bytes) noexcept {
    const std::uint32_t op = xpow8n(zero_bytes);
    ShiftTable table;
    for (std::uint32_t lane = 0; lane < 4; ++lane) {
        for (std::uint32_t b = 0; b < 256; ++b) {
            table.t[lane][b] = gf2_mul(op, b << (8 * lane));
        }
    }
    return table;
}

// Unaligned 8-byte load/store in native byte order (memcpy: no alignment or
// aliasing assumptions; compiles to one move).
inline std::uint64_t load64(const std::uint8_t* p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store64(std::uint8_t* p, std::uint64_t v) noexcept {
    std::memcpy(p, &v, sizeof v);
}

// Raw register updates (no pre/post complement). dst == nullptr: no copy.
// Implemented in crc32c_hw.cpp; hw_detect() false means the hw_* functions
// must not be called (they may not exist in the CPU).
bool hw_detect() noexcept;
std::uint32_t hw_update(std::uint32_t reg, const std::uint8_t* src, std::size_t len) noexcept;
// Header CRC register update over len bytes (a multiple of 4) with the four
// bytes at `field` (a multiple of 4, inside) read as zero.
std::uint32_t hw_update_header(std::uint32_t reg, const std::uint8_t* src, std::size_t len,
                               std::size_t field) noexcept;
std::uint32_t hw_update_copy(std::uint32_t reg, const std::uint8_t* src, std::uint8_t* dst,
                             std::size_t len) noexcept;

}  // namespace plugin::common::crc32c_detail
