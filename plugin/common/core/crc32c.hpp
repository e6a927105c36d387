// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as in iSCSI, SCTP
// and ext4. Chosen over a 16/32-bit sum because it catches all burst errors
// up to 32 bits and most CPUs compute it in hardware.
//
// Conventions (the usual ones): the register starts at ~0 and the result is
// complemented, so crc32c("123456789") == 0xE3069283. The `crc` argument is
// a previous *result*: crc32c(b, n, crc32c(a, m)) == crc32c(a||b, m + n), which
// lets a caller checksum a message piece by piece. Start with crc = 0.
//
// Dispatch: crc32c() and crc32c_copy() use Intel's ISA-L (libisal) when the
// build found it (its carry-less-multiply folding is about twice as fast as
// the CRC32C instruction on bulk data); otherwise the CPU's CRC32C
// instruction when the running CPU has one (x86-64 SSE4.2, ARMv8 CRC), and
// slicing-by-8 tables without it. The choice of instructions is made at run
// time, never by compiler flags, so the plugins load on any CPU of the
// architecture.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace plugin::common {

std::uint32_t crc32c(const void* data, std::size_t len, std::uint32_t crc = 0) noexcept;

// Copies len bytes from src to dst (which must not overlap) and returns the
// CRC of those bytes in the same pass, so a payload is read from memory once
// when it is both copied into a frame and checksummed.
std::uint32_t crc32c_copy(void* dst, const void* src, std::size_t len,
                          std::uint32_t crc = 0) noexcept;

inline std::uint32_t crc32c(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0) noexcept {
    return crc32c(bytes.data(), bytes.size(), crc);
}

// CRC32C of a header of `len` bytes that carries its own checksum in the four
// bytes at offset `field`: computed as if those bytes were zero, straight
// from the header (no copy). Equal to zeroing the field in a copy and calling
// crc32c(); the field must lie inside the header.
std::uint32_t crc32c_header(const void* data, std::size_t len, std::size_t field) noexcept;

// The two implementations, for tests and benchmarks. crc32c_hw() and
// crc32c_copy_hw() fall back to the software path when crc32c_hw_available()
// is false, so they are always safe to call.
bool crc32c_hw_available() noexcept;
// Whether the build uses ISA-L; without it the *_lib functions are the *_hw ones.
bool crc32c_lib_available() noexcept;
std::uint32_t crc32c_lib(const void* data, std::size_t len, std::uint32_t crc = 0) noexcept;
std::uint32_t crc32c_copy_lib(void* dst, const void* src, std::size_t len,
                              std::uint32_t crc = 0) noexcept;
std::uint32_t crc32c_sw(const void* data, std::size_t len, std::uint32_t crc = 0) noexcept;
std::uint32_t crc32c_hw(const void* data, std::size_t len, std::uint32_t crc = 0) noexcept;
std::uint32_t crc32c_copy_sw(void* dst, const void* src, std::size_t len,
                             std::uint32_t crc = 0) noexcept;
std::uint32_t crc32c_copy_hw(void* dst, const void* src, std::size_t len,
                             std::uint32_t crc = 0) noexcept;

std::uint32_t crc32c_header_sw(const void* data, std::size_t len, std::size_t field) noexcept;
std::uint32_t crc32c_header_hw(const void* data, std::size_t len, std::size_t field) noexcept;

// CRC of a||b from crc(a), crc(b) and len(b), without the bytes. Lets
// independently checksummed pieces (e.g. frags) be joined into a message CRC.
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t len_b) noexcept;

}  // namespace plugin::common
