// CRC32C with the CPU's instruction: x86-64 SSE4.2 `crc32`, ARMv8 `crc32c*`.
//
// Only the functions below carry a target attribute; the rest of the library
// is built for the baseline ISA, so the plugins load on any CPU of the
// architecture and hw_detect() decides at run time.
//
// The instruction has a latency of about three cycles but a throughput of one
// per cycle, so a single dependency chain runs at a third of the possible
// speed. Long inputs are therefore split into three equal blocks checksummed
// in parallel; the three registers are then joined with the linear
// "advance over n zero bytes" operator (ShiftTable) - the same algebra as
// crc32c_combine(), precomputed for the two block sizes.
#include "crc32c_internal.hpp"

#if defined(__x86_64__)
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#endif

namespace plugin::common::crc32c_detail {

#if defined(__x86_64__) || defined(__aarch64__)
namespace {

// Small blocks keep the three streams useful for frag-sized buffers; large
// ones amortise the join for bulk data.
constexpr std::size_t kShortBlock = 256;
constexpr std::size_t kLongBlock = 4096;
constexpr ShiftTable kShiftShort = make_shift_table(kShortBlock);
constexpr ShiftTable kShiftLong = make_shift_table(kLongBlock);

// Source and (optional) destination advancing together.
template <bool kCopy>
struct Cursor {
    const std::uint8_t* src;
    std::uint8_t* dst;
    std::size_t len;

    void advance(std::size_t n) noexcept {
        src += n;
        if constexpr (kCopy)
            dst += n;
        len -= n;
    }
};

}  // namespace
#endif

#if defined(__x86_64__)

namespace {

#define PLUGIN_CRC_TARGET __attribute__((target("sse4.2")))

template <bool kCopy, std::size_t kBlock>
PLUGIN_CRC_TARGET inline std::uint64_t three_way(std::uint64_t c0, Cursor<kCopy>& cur,
                                                 const ShiftTable& shift) noexcept {
    const std::uint8_t* s = cur.src;
    std::uint64_t c1 = 0;
    std::uint64_t c2 = 0;
    for (std::size_t i = 0; i < kBlock; i += 8) {
        const std::uint64_t a = load64(s + i);
        const std::uint64_t b = load64(s + kBlock + i);
        const std::uint64_t c = load64(s + 2 * kBlock + i);
        if constexpr (kCopy) {
            store64(cur.dst + i, a);
            store64(cur.dst + kBlock + i, b);
            store64(cur.dst + 2 * kBlock + i, c);
        }
        c0 = _mm_crc32_u64(c0, a);
        c1 = _mm_crc32_u64(c1, b);
        c2 = _mm_crc32_u64(c2, c);
    }
    cur.advance(3 * kBlock);
    // Blocks 2 and 3 started from a zero register; shift the earlier result
    // past each of them and fold in their contribution.
    const std::uint32_t ab =
        shift.apply(static_cast<std::uint32_t>(c0)) ^ static_cast<std::uint32_t>(c1);
    return shift.apply(ab) ^ static_cast<std::uint32_t>(c2);
}

template <bool kCopy>
PLUGIN_CRC_TARGET std::uint32_t x86_update(std::uint32_t reg, Cursor<kCopy> cur) noexcept {
    // Align the source so every 8-byte load (in all three streams) is aligned.
    while (cur.len > 0 && (reinterpret_cast<std::uintptr_t>(cur.src) & 7u) != 0) {
        if constexpr (kCopy)
            *cur.dst = *cur.src;
        reg = _mm_crc32_u8(reg, *cur.src);
        cur.advance(1);
    }
    std::uint64_t c = reg;
    while (cur.len >= 3 * kLongBlock)
        c = three_way<kCopy, kLongBlock>(c, cur, kShiftLong);
    while (cur.len >= 3 * kShortBlock)
        c = three_way<kCopy, kShortBlock>(c, cur, kShiftShort);
    for (; cur.len >= 8; cur.advance(8)) {
        const std::uint64_t v = load64(cur.src);
        if constexpr (kCopy)
            store64(cur.dst, v);
        c = _mm_crc32_u64(c, v);
    }
    reg = static_cast<std::uint32_t>(c);
    // The tail in at most three steps (headers end in one).
    if (cur.len >= 4) {
        std::uint32_t v = 0;
        std::memcpy(&v, cur.src, 4);
        if constexpr (kCopy)
            std::memcpy(cur.dst, &v, 4);
        reg = _mm_crc32_u32(reg, v);
        cur.advance(4);
    }
    if (cur.len >= 2) {
        std::uint16_t v = 0;
        std::memcpy(&v, cur.src, 2);
        if constexpr (kCopy)
            std::memcpy(cur.dst, &v, 2);
        reg = _mm_crc32_u16(reg, v);
        cur.advance(2);
    }
    if (cur.len > 0) {
        if constexpr (kCopy)
            *cur.dst = *cur.src;
        reg = _mm_crc32_u8(reg, *cur.src);
    }
    return reg;
}

// Headers are short: one chain of 8-byte steps; the word holding the field
// is masked (little-endian: byte k is bits 8k..8k+7), the others are not
// looked at twice.
PLUGIN_CRC_TARGET std::uint32_t x86_header(std::uint32_t reg, const std::uint8_t* src,
                                           std::size_t len, std::size_t field) noexcept {
    std::uint64_t c = reg;
    const std::size_t word = field & ~std::size_t{7};
    std::size_t i = 0;
    for (; i < word; i += 8)
        c = _mm_crc32_u64(c, load64(src + i));
    if (word + 8 <= len) {
        const std::uint64_t keep = field == word ? 0xFFFFFFFF00000000ull : 0x00000000FFFFFFFFull;
        c = _mm_crc32_u64(c, load64(src + word) & keep);
        for (i = word + 8; i + 8 <= len; i += 8)
            c = _mm_crc32_u64(c, load64(src + i));
    }
    reg = static_cast<std::uint32_t>(c);
    if (i < len) {  // the last four bytes, which may be the field itself
        std::uint32_t v = 0;
        if (field != i)
            std::memcpy(&v, src + i, 4);
        reg = _mm_crc32_u32(reg, v);
    }
    return reg;
}

#undef PLUGIN_CRC_TARGET

}  // namespace

std::uint32_t hw_update_header(std::uint32_t reg, const std::uint8_t* src, std::size_t len,
                               std::size_t field) noexcept {
    return x86_header(reg, src, len, field);
}

bool hw_detect() noexcept {
    // Needed when called before the runtime's own constructors (e.g. from
    // another library's initialiser); cheap and idempotent.
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
}

std::uint32_t hw_update(std::uint32_t reg, const std::uint8_t* src, std::size_t len) noexcept {
    return x86_update<false>(reg, Cursor<false>{src, nullptr, len});
}

std::uint32_t hw_update_copy(std::uint32_t reg, const std::uint8_t* src, std::uint8_t* dst,
                             std::size_t len) noexcept {
    return x86_update<true>(reg, Cursor<true>{src, dst, len});
}

#elif defined(__aarch64__)

namespace {

#define PLUGIN_CRC_TARGET __attribute__((target("+crc")))

template <bool kCopy, std::size_t kBlock>
PLUGIN_CRC_TARGET inline std::uint32_t three_way(std::uint32_t c0, Cursor<kCopy>& cur,
                                                 const ShiftTable& shift) noexcept {
    const std::uint8_t* s = cur.src;
    std::uint32_t c1 = 0;
    std::uint32_t c2 = 0;
    for (std::size_t i = 0; i < kBlock; i += 8) {
        const std::uint64_t a = load64(s + i);
        const std::uint64_t b = load64(s + kBlock + i);
        const std::uint64_t c = load64(s + 2 * kBlock + i);
        if constexpr (kCopy) {
            store64(cur.dst + i, a);
            store64(cur.dst + kBlock + i, b);
            store64(cur.dst + 2 * kBlock + i, c);
        }
        c0 = __crc32cd(c0, a);
        c1 = __crc32cd(c1, b);
        c2 = __crc32cd(c2, c);
    }
    cur.advance(3 * kBlock);
    return shift.apply(shift.apply(c0) ^ c1) ^ c2;
}

template <bool kCopy>
PLUGIN_CRC_TARGET std::uint32_t arm_update(std::uint32_t reg, Cursor<kCopy> cur) noexcept {
    while (cur.len > 0 && (reinterpret_cast<std::uintptr_t>(cur.src) & 7u) != 0) {
        if constexpr (kCopy)
            *cur.dst = *cur.src;
        reg = __crc32cb(reg, *cur.src);
        cur.advance(1);
    }
    while (cur.len >= 3 * kLongBlock)
        reg = three_way<kCopy, kLongBlock>(reg, cur, kShiftLong);
    while (cur.len >= 3 * kShortBlock)
        reg = three_way<kCopy, kShortBlock>(reg, cur, kShiftShort);
    for (; cur.len >= 8; cur.advance(8)) {
        const std::uint64_t v = load64(cur.src);
        if constexpr (kCopy)
            store64(cur.dst, v);
        reg = __crc32cd(reg, v);
    }
    for (; cur.len > 0; cur.advance(1)) {
        if constexpr (kCopy)
            *cur.dst = *cur.src;
        reg = __crc32cb(reg, *cur.src);
    }
    return reg;
}

PLUGIN_CRC_TARGET std::uint32_t arm_header(std::uint32_t reg, const std::uint8_t* src,
                                           std::size_t len, std::size_t field) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        std::uint64_t v = load64(src + i);
        if (field == i)
            v &= 0xFFFFFFFF00000000ull;
        else if (field == i + 4)
            v &= 0x00000000FFFFFFFFull;
        reg = __crc32cd(reg, v);
    }
    if (i < len) {
        std::uint32_t v = 0;
        if (field != i)
            std::memcpy(&v, src + i, 4);
        reg = __crc32cw(reg, v);
    }
    return reg;
}

#undef PLUGIN_CRC_TARGET

}  // namespace

std::uint32_t hw_update_header(std::uint32_t reg, const std::uint8_t* src, std::size_t len,
                               std::size_t field) noexcept {
    return arm_header(reg, src, len, field);
}

bool hw_detect() noexcept {
#if defined(__ARM_FEATURE_CRC32)
    return true;  // the whole build already requires it
#else
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1UL << 7)  // Linux arm64 uapi value
#endif
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
}

std::uint32_t hw_update(std::uint32_t reg, const std::uint8_t* src, std::size_t len) noexcept {
    return arm_update<false>(reg, Cursor<false>{src, nullptr, len});
}

std::uint32_t hw_update_copy(std::uint32_t reg, const std::uint8_t* src, std::uint8_t* dst,
                             std::size_t len) noexcept {
    return arm_update<true>(reg, Cursor<true>{src, dst, len});
}

#else  // no CRC instruction we know of: software only

bool hw_detect() noexcept {
    return false;
}

// Unreachable: the dispatcher checks hw_detect() first. Defined so the
// library links everywhere; forward to nothing useful on purpose.
std::uint32_t hw_update(std::uint32_t reg, const std::uint8_t*, std::size_t) noexcept {
    return reg;
}
std::uint32_t hw_update_copy(std::uint32_t reg, const std::uint8_t*, std::uint8_t*,
                             std::size_t) noexcept {
    return reg;
}
std::uint32_t hw_update_header(std::uint32_t reg, const std::uint8_t*, std::size_t,
                               std::size_t) noexcept {
    return reg;
}

#endif

}  // namespace plugin::common::crc32c_detail
