// Wrap-safe comparison of sequence numbers (serial number arithmetic in the
// manner of RFC 1982). Sequence numbers are unsigned and wrap; "a before b"
// means b is reachable from a by fewer than half the number space of steps.
//
// All seq comparisons in every component go through here: a plain `a < b`
// on a sequence number is a bug that shows only after 2^16 or 2^32 frames.
//
// Limit: when a and b are exactly half the space apart the order is
// undefined (RFC 1982 §3.2); here seq_diff() is then the most negative value
// both ways, so seq_lt(a, b) and seq_lt(b, a) are both true. Windows must stay
// well below half the space, which the protocols guarantee by construction.
#pragma once
#include <concepts>
#include <type_traits>

namespace plugin::common {

// Unsigned integers only: bool is not a sequence, and signed types overflow.
template <typename T>
concept SeqInt = std::unsigned_integral<T> && !std::same_as<T, bool>;

// Signed distance from b to a: positive when a is after b. Both arguments
// must have the same type; a mix would silently widen one and break wrap.
template <SeqInt T>
constexpr std::make_signed_t<T> seq_diff(T a, T b) noexcept {
    // The subtraction is done in T (narrow types promote to int, so cast back)
    // and the modular result is reinterpreted as two's complement, which C++20
    // defines for unsigned -> signed conversion.
    return static_cast<std::make_signed_t<T>>(static_cast<T>(a - b));
}

template <SeqInt T>
constexpr bool seq_lt(T a, T b) noexcept {
    return seq_diff(a, b) < 0;
}
template <SeqInt T>
constexpr bool seq_le(T a, T b) noexcept {
    return seq_diff(a, b) <= 0;
}
template <SeqInt T>
constexpr bool seq_gt(T a, T b) noexcept {
    return seq_diff(a, b) > 0;
}
template <SeqInt T>
constexpr bool seq_ge(T a, T b) noexcept {
    return seq_diff(a, b) >= 0;
}

// The later of two sequence numbers (a when equal).
template <SeqInt T>
constexpr T seq_max(T a, T b) noexcept {
    return seq_lt(a, b) ? b : a;
}

}  // namespace plugin::common
