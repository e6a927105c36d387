// Helpers shared by the fuzz targets (not part of any core).
//
// A target never trusts its input, but it does trust its own properties: a
// property that does not hold is a bug in the code under test, reported by
// abort() so libFuzzer (or replay_main) stops and prints the input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "result.hpp"

namespace fuzz {

[[noreturn]] inline void property_failed(const char* what, const char* file, int line) {
    std::fprintf(stderr, "\nFUZZ PROPERTY VIOLATED at %s:%d: %s\n", file, line, what);
    std::fflush(stderr);
    std::abort();
}

// Aborts when a property of the code under test does not hold. (The
// builtins, not std::source_location: clang 14 with libstdc++ 12 lacks it.)
inline void check(bool ok, const char* what, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) {
    if (!ok)
        property_failed(what, file, line);
}

// The error codes a wire decoder may return: anything else (Internal,
// InvalidState, ...) from a decoder fed bad bytes is a bug.
inline bool is_wire_error(plugin::common::ErrorCode c) {
    using plugin::common::ErrorCode;
    switch (c) {
        case ErrorCode::Truncated:
        case ErrorCode::BadVersion:
        case ErrorCode::BadType:
        case ErrorCode::BadLength:
        case ErrorCode::BadChecksum:
        case ErrorCode::BadField:
            return true;
        default:
            return false;
    }
}

inline std::uint32_t get_be32(std::span<const std::uint8_t> at) {
    return (std::uint32_t{at[0]} << 24) | (std::uint32_t{at[1]} << 16) |
           (std::uint32_t{at[2]} << 8) | std::uint32_t{at[3]};
}

inline void put_be32(std::span<std::uint8_t> at, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i)
        at[i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}

// Reads the input front to back: control bytes first, the rest is the
// "wire". Past the end it yields zeros, so every input is usable.
class Input {
  public:
    explicit Input(std::span<const std::uint8_t> data) : data_(data) {}

    std::uint8_t u8() {
        if (pos_ >= data_.size())
            return 0;
        return data_[pos_++];
    }
    std::uint32_t u32() {
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v = (v << 8) | u8();
        return v;
    }
    std::span<const std::uint8_t> rest() {
        const auto r = data_.subspan(pos_);
        pos_ = data_.size();
        return r;
    }

  private:
    std::span<const std::uint8_t> data_;
    std::size_t pos_ = 0;
};

}  // namespace fuzz
