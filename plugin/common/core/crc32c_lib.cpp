// CRC32C through Intel's ISA-L (libisal), when the build found it: its
// crc32_iscsi() picks, at run time, the fastest code the CPU allows (folding
// with carry-less multiplies: PCLMULQDQ, AVX-512 VPCLMULQDQ), about twice
// the speed of our three-stream CRC32C instruction loop on bulk data here.
// Without ISA-L these fall back to crc32c_hw()/crc32c_copy_hw().
//
// ISA-L's register convention is the raw one (no pre/post complement), so
// crc32c(b, crc) == ~crc32_iscsi(b, ~crc). A copy is made in blocks small
// enough to stay in the L1 cache, each checksummed right after it landed:
// one pass over the source in memory, as the fused loop of crc32c_hw.cpp.
#include <algorithm>
#include <cstring>

#include "crc32c.hpp"

#if PLUGIN_HAVE_ISAL
#include <isa-l/crc.h>
#endif

namespace plugin::common {

bool crc32c_lib_available() noexcept {
    return PLUGIN_HAVE_ISAL != 0;
}

#if PLUGIN_HAVE_ISAL

namespace {

// crc32_iscsi() takes an int length.
constexpr std::size_t kMaxCall = std::size_t{1} << 30;
// Copy block: well inside a 32-48 KiB L1 data cache.
constexpr std::size_t kCopyBlock = 8192;

std::uint32_t isal_update(std::uint32_t reg, const std::uint8_t* p, std::size_t len) noexcept {
    while (len > 0) {
        const std::size_t n = std::min(len, kMaxCall);
        // crc32_iscsi only reads the buffer; its prototype lacks the const.
        reg = crc32_iscsi(const_cast<std::uint8_t*>(p), static_cast<int>(n), reg);
        p += n;
        len -= n;
    }
    return reg;
}

}  // namespace

std::uint32_t crc32c_lib(const void* data, std::size_t len, std::uint32_t crc) noexcept {
    return ~isal_update(~crc, static_cast<const std::uint8_t*>(data), len);
}

std::uint32_t crc32c_copy_lib(void* dst, const void* src, std::size_t len,
                              std::uint32_t crc) noexcept {
    auto* d = static_cast<std::uint8_t*>(dst);
    const auto* s = static_cast<const std::uint8_t*>(src);
    std::uint32_t reg = ~crc;
    while (len > 0) {
        const std::size_t n = std::min(len, kCopyBlock);
        std::memcpy(d, s, n);
        reg = isal_update(reg, d, n);
        d += n;
        s += n;
        len -= n;
    }
    return ~reg;
}

#else

std::uint32_t crc32c_lib(const void* data, std::size_t len, std::uint32_t crc) noexcept {
    return crc32c_hw(data, len, crc);
}

std::uint32_t crc32c_copy_lib(void* dst, const void* src, std::size_t len,
                              std::uint32_t crc) noexcept {
    return crc32c_copy_hw(dst, src, len, crc);
}

#endif

}  // namespace plugin::common
