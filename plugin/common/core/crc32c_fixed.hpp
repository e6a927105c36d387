// crc32c_header() for a header whose size and checksum field are known at
// compile time: the same value, the loop unrolled for that size. Per-frame
// codecs checksum every header they write and read; this keeps that to a
// handful of instructions. The hardware path is chosen at run time
// (crc32c_hw_available(), read once at load), never by compiler flags.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "crc32c.hpp"

#if defined(__x86_64__)
#include <nmmintrin.h>
#define PLUGIN_CRC_FIXED_TARGET __attribute__((target("sse4.2")))
#elif defined(__aarch64__)
#include <arm_acle.h>
#define PLUGIN_CRC_FIXED_TARGET __attribute__((target("+crc")))
#endif

namespace plugin::common {

namespace crc32c_detail {

// crc32c_hw_available(), read once when the library loaded (false until
// then: the software path, still right).
extern const bool g_hw_at_load;

#if defined(PLUGIN_CRC_FIXED_TARGET)
template <std::size_t Len, std::size_t Field>
PLUGIN_CRC_FIXED_TARGET std::uint32_t hw_header_fixed(const std::uint8_t* p) noexcept {
    std::uint64_t reg = 0xFFFFFFFFu;
    std::size_t i = 0;
#pragma GCC unroll 16
    for (; i + 8 <= Len; i += 8) {  // unrolled: Len and Field are constants
        std::uint64_t v = 0;
        std::memcpy(&v, p + i, 8);
        if constexpr (Field % 8 == 0) {
            if (i == Field)
                v &= 0xFFFFFFFF00000000ull;  // little-endian: the field is the low half
        } else {
            if (i + 4 == Field)
                v &= 0x00000000FFFFFFFFull;
        }
#if defined(__x86_64__)
        reg = _mm_crc32_u64(reg, v);
#else
        reg = __crc32cd(static_cast<std::uint32_t>(reg), v);
#endif
    }
    if constexpr (Len % 8 != 0) {  // the last four bytes
        std::uint32_t v = 0;
        if constexpr (Field != Len - 4)
            std::memcpy(&v, p + i, 4);
#if defined(__x86_64__)
        reg = _mm_crc32_u32(static_cast<std::uint32_t>(reg), v);
#else
        reg = __crc32cw(static_cast<std::uint32_t>(reg), v);
#endif
    }
    return ~static_cast<std::uint32_t>(reg);
}
#endif

}  // namespace crc32c_detail

// == crc32c_header(data, Len, Field); little-endian hosts only take the
// unrolled path (the masks above assume it).
template <std::size_t Len, std::size_t Field>
inline std::uint32_t crc32c_header_fixed(const void* data) noexcept {
    static_assert(Len % 4 == 0 && Field % 4 == 0 && Field + 4 <= Len,
                  "a 4-byte field on a 4-byte boundary inside the header");
#if defined(PLUGIN_CRC_FIXED_TARGET) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (crc32c_detail::g_hw_at_load)
        return crc32c_detail::hw_header_fixed<Len, Field>(static_cast<const std::uint8_t*>(data));
#endif
    return crc32c_header(data, Len, Field);
}

}  // namespace plugin::common
