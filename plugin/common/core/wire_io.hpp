// Bounds-checked encoding and decoding of wire formats in network byte order.
//
// Every header is built and parsed field by field through these two classes;
// no struct is ever cast onto bytes, so there is no padding, alignment or
// host-byte-order question to get wrong.
//
// Both use a sticky-failure style: the first failure is recorded, every later
// call is a no-op (reads return 0 / an empty span), and the caller checks
// ok() once after a run of fields. That keeps codecs linear:
//
//   ByteReader r(frame);
//   if (!r.need(kAckLen)) return fail(r.error());   // per-type length check
//   const auto version = r.u8();
//   r.expect_zero(3);                                // reserved
//   const auto vfrag = r.u64();
//   if (!r.ok()) return fail(r.error());
//
// Values read after a failure are meaningless zeros: use none of them before
// ok() has been checked.
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "proc_name.hpp"
#include "result.hpp"

namespace plugin::common {

// Network (big-endian) byte order: one load or store and at most one byte
// swap per field.
template <std::unsigned_integral T>
constexpr T to_big_endian(T v) noexcept {
    if constexpr (std::endian::native == std::endian::big || sizeof(T) == 1) {
        return v;
    } else if constexpr (sizeof(T) == 2) {
        return __builtin_bswap16(v);
    } else if constexpr (sizeof(T) == 4) {
        return __builtin_bswap32(v);
    } else {
        return __builtin_bswap64(v);
    }
}

// One big-endian field at p, which must have sizeof(T) bytes (fixed-size
// headers checked once; the classes below check every field).
template <std::unsigned_integral T>
inline void store_be(std::uint8_t* p, T v) noexcept {
    v = to_big_endian(v);
    std::memcpy(p, &v, sizeof(T));
}
template <std::unsigned_integral T>
inline T load_be(const std::uint8_t* p) noexcept {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return to_big_endian(v);  // its own inverse
}

class ByteWriter {
  public:
    explicit ByteWriter(std::span<std::uint8_t> out) noexcept : out_(out) {}

    void u8(std::uint8_t v) noexcept { put(v); }
    void u16(std::uint16_t v) noexcept { put(v); }
    void u32(std::uint32_t v) noexcept { put(v); }
    void u64(std::uint64_t v) noexcept { put(v); }
    // A process name: job id, then rank (8 bytes).
    void name(const ProcName& n) noexcept {
        put(n.jobid);
        put(n.vpid);
    }

    void bytes(std::span<const std::uint8_t> b) noexcept {
        std::uint8_t* p = claim(b.size());
        if (p != nullptr && !b.empty())
            std::copy(b.begin(), b.end(), p);
    }
    void zeros(std::size_t n) noexcept {
        std::uint8_t* p = claim(n);
        if (p != nullptr)
            std::fill_n(p, n, std::uint8_t{0});
    }
    // Hands out the next n bytes for the caller to fill in place (e.g. with
    // crc32c_copy of a payload). Empty span on overflow.
    [[nodiscard]] std::span<std::uint8_t> take(std::size_t n) noexcept {
        std::uint8_t* p = claim(n);
        return p != nullptr ? std::span<std::uint8_t>(p, n) : std::span<std::uint8_t>();
    }

    // Rewrites a field inside the bytes already written: lengths and checksums
    // that are known only once the rest is encoded. Outside them is a bug in
    // the encoder and fails the writer with InvalidArgument.
    void patch_u16(std::size_t offset, std::uint16_t v) noexcept { patch(offset, v); }
    void patch_u32(std::size_t offset, std::uint32_t v) noexcept { patch(offset, v); }

    bool ok() const noexcept { return ok_; }
    const Error& error() const noexcept { return error_; }  // meaningful when !ok()
    std::size_t position() const noexcept { return pos_; }
    std::size_t remaining() const noexcept { return out_.size() - pos_; }
    // The encoded bytes so far (all of them, if ok()).
    std::span<std::uint8_t> written() const noexcept { return out_.first(pos_); }
    // Encoded length, or the first error.
    Result<std::size_t> finish() const noexcept {
        if (!ok_)
            return fail(error_);
        return pos_;
    }

  private:
    // All or nothing: a field that does not fit leaves no partial bytes.
    std::uint8_t* claim(std::size_t n) noexcept {
        if (!ok_)
            return nullptr;
        if (n > out_.size() - pos_) {
            set_error(Error(ErrorCode::NoSpace, "encode buffer too small"));
            return nullptr;
        }
        std::uint8_t* p = out_.data() + pos_;
        pos_ += n;
        return p;
    }

    template <std::unsigned_integral T>
    void put(T v) noexcept {
        if (std::uint8_t* p = claim(sizeof(T)); p != nullptr)
            store_be(p, v);
    }
    template <std::unsigned_integral T>
    void patch(std::size_t offset, T v) noexcept {
        if (!ok_)
            return;
        if (offset > pos_ || sizeof(T) > pos_ - offset) {
            set_error(Error(ErrorCode::InvalidArgument, "patch outside written bytes"));
            return;
        }
        store_be(out_.data() + offset, v);
    }
    void set_error(Error e) noexcept {
        ok_ = false;
        error_ = e;
    }

    std::span<std::uint8_t> out_;
    std::size_t pos_ = 0;
    bool ok_ = true;
    Error error_{};
};

class ByteReader {
  public:
    explicit ByteReader(std::span<const std::uint8_t> in) noexcept : in_(in) {}

    [[nodiscard]] std::uint8_t u8() noexcept { return get<std::uint8_t>(); }
    [[nodiscard]] std::uint16_t u16() noexcept { return get<std::uint16_t>(); }
    [[nodiscard]] std::uint32_t u32() noexcept { return get<std::uint32_t>(); }
    [[nodiscard]] std::uint64_t u64() noexcept { return get<std::uint64_t>(); }
    [[nodiscard]] ProcName name() noexcept {
        ProcName n;
        n.jobid = u32();
        n.vpid = u32();
        return n;
    }
    // A fixed-size field (a nonce, a MAC) copied out; `out` is left as it
    // was on failure.
    template <std::size_t N>
    void array(std::array<std::uint8_t, N>& out) noexcept {
        const std::uint8_t* p = consume(N);
        if (p != nullptr)
            std::copy_n(p, N, out.begin());
    }

    // The next n bytes, in place (no copy). Empty on failure.
    [[nodiscard]] std::span<const std::uint8_t> bytes(std::size_t n) noexcept {
        const std::uint8_t* p = consume(n);
        return p != nullptr ? std::span<const std::uint8_t>(p, n) : std::span<const std::uint8_t>();
    }
    // Everything left (a trailing payload). Empty after a failure.
    [[nodiscard]] std::span<const std::uint8_t> rest() noexcept { return bytes(remaining()); }
    // A reader over the next n bytes, for a length-delimited section; this
    // reader moves past them. On failure the sub-reader is failed too.
    [[nodiscard]] ByteReader sub(std::size_t n) noexcept {
        ByteReader r(bytes(n));
        if (!ok_)
            r.set_error(error_);
        return r;
    }
    void skip(std::size_t n) noexcept { (void)consume(n); }

    // Reserved bytes must be zero so they can be given a meaning later: a peer
    // that sets them speaks a version we do not, and its frame is rejected.
    void expect_zero(std::size_t n) noexcept {
        const std::uint8_t* p = consume(n);
        if (p == nullptr)
            return;
        for (std::size_t i = 0; i < n; ++i) {
            if (p[i] != 0) {
                set_error(Error(ErrorCode::BadField, "reserved field not zero"));
                return;
            }
        }
    }
    // A fixed-size frame with bytes left over is malformed.
    void expect_end() noexcept {
        if (ok_ && remaining() != 0)
            set_error(Error(ErrorCode::BadLength, "trailing bytes"));
    }
    // Per-type length check before reading the type's fields. Returns ok().
    bool need(std::size_t n) noexcept {
        if (ok_ && n > remaining())
            set_error(Error(ErrorCode::Truncated, "input shorter than header"));
        return ok_;
    }
    // Lets a decoder reject a value it read (bad version, unknown type) through
    // the same sticky error. The first failure wins.
    void fail(Error e) noexcept {
        if (ok_)
            set_error(e);
    }

    bool ok() const noexcept { return ok_; }
    const Error& error() const noexcept { return error_; }  // meaningful when !ok()
    Result<void> status() const noexcept {
        if (!ok_)
            return plugin::common::fail(error_);
        return {};
    }
    std::size_t position() const noexcept { return pos_; }
    std::size_t remaining() const noexcept { return in_.size() - pos_; }

  private:
    const std::uint8_t* consume(std::size_t n) noexcept {
        if (!ok_)
            return nullptr;
        if (n > remaining()) {
            set_error(Error(ErrorCode::Truncated, "input shorter than field"));
            return nullptr;
        }
        const std::uint8_t* p = in_.data() + pos_;
        pos_ += n;
        return p;
    }
    template <std::unsigned_integral T>
    T get() noexcept {
        const std::uint8_t* p = consume(sizeof(T));
        return p == nullptr ? 0 : load_be<T>(p);
    }
    void set_error(Error e) noexcept {
        ok_ = false;
        error_ = e;
    }

    std::span<const std::uint8_t> in_;
    std::size_t pos_ = 0;
    bool ok_ = true;
    Error error_{};
};

}  // namespace plugin::common
