// Result<T>: the std::expected<T, Error> subset the cores use.
//
// libstdc++ 12 has no std::expected in C++20, and the cores must not throw
// (wire input never asserts, exceptions never cross into C), so fallible
// operations return Result<T>. The API mirrors std::expected so that a later
// switch to it is a rename: has_value(), explicit operator bool, value(),
// error(), operator*, operator->, value_or(). Build errors with fail().
//
// Error messages are static text only (checked at compile time, see Message):
// an Error is two words, copies never allocate, and a message can never dangle.
#pragma once
#include <cassert>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace plugin::common {

// Numbered explicitly: the values show up in logs and counters, so keep them
// stable and append new codes at the end. Zero is deliberately not a code, so
// a zero-initialised field never reads as a real error.
enum class ErrorCode : std::uint8_t {
    // Wire decoding.
    Truncated = 1,    // input ended before the field / header did
    BadVersion = 2,   // version byte not one we speak
    BadType = 3,      // frame / header type unknown
    BadLength = 4,    // a length field disagrees with the bytes present
    BadChecksum = 5,  // CRC mismatch
    BadField = 6,     // a field holds an illegal value (e.g. reserved nonzero)
    NoSpace = 7,      // output buffer too small while encoding
    // Protocol and bookkeeping.
    UnknownPeer = 8,  // rank / peer id we do not know
    OutOfRange = 9,   // index, sequence or window outside the allowed range
    Duplicate = 10,   // already seen (seq, vfrag, ack)
    InvalidArgument = 11,
    InvalidState = 12,  // call not allowed in the current state
    // I/O.
    WouldBlock = 13,
    Closed = 14,
    Timeout = 15,
    Unreachable = 16,  // no path / peer dead
    NoResources = 17,  // allocation or descriptor pool exhausted
    Unsupported = 18,
    Cancelled = 19,
    Internal = 20,  // a bug: an invariant did not hold
};

// First and last code, for iteration in tests and bounds checks when a code
// comes from outside (e.g. a counter index).
inline constexpr ErrorCode kFirstErrorCode = ErrorCode::Truncated;
inline constexpr ErrorCode kLastErrorCode = ErrorCode::Internal;

// Stable, lower_snake names for logs. Values outside the enum give "unknown".
std::string_view to_string(ErrorCode code) noexcept;

// Static error text. The consteval constructors reject anything that is not a
// constant expression, so a Message can only point at a literal (or another
// object with static storage) and Errors can be copied around freely.
class Message {
  public:
    consteval Message() noexcept = default;
    // Implicit on purpose: fail(code, "text") is the whole point.
    consteval Message(const char* text) noexcept : text_(text) {}
    consteval Message(std::string_view text) noexcept : text_(text) {}

    constexpr std::string_view view() const noexcept { return text_; }

  private:
    std::string_view text_{};
};

struct Error {
    ErrorCode code{ErrorCode::Internal};
    std::string_view message{};  // static text (see Message); may be empty

    constexpr Error() noexcept = default;
    constexpr Error(ErrorCode c, Message m = {}) noexcept : code(c), message(m.view()) {}

    // Two errors are "the same" when their codes match; the message is
    // commentary for humans and must not change program behaviour.
    friend constexpr bool operator==(const Error& a, const Error& b) noexcept {
        return a.code == b.code;
    }
    friend constexpr bool operator==(const Error& a, ErrorCode b) noexcept { return a.code == b; }
};

// The std::unexpected counterpart: converts to any Result<T>.
class Failure {
  public:
    constexpr explicit Failure(Error e) noexcept : error_(e) {}
    constexpr const Error& error() const noexcept { return error_; }

  private:
    Error error_;
};

constexpr Failure fail(ErrorCode code, Message msg = {}) noexcept {
    return Failure(Error(code, msg));
}
// Propagates an error unchanged: `if (!r) return fail(r.error());`
constexpr Failure fail(const Error& e) noexcept {
    return Failure(e);
}

template <typename T>
class Result;

namespace detail {
// Anything else T can be built from (a vector for a span, a literal for a
// string). Arithmetic sources take Result(const T&) instead, so that a
// narrowing `return x;` is converted - and warned about - at the call site.
template <typename U, typename T>
concept ValueSource =
    !std::is_arithmetic_v<std::remove_cvref_t<U>> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
    !std::is_same_v<std::remove_cvref_t<U>, Result<T>> &&
    !std::is_same_v<std::remove_cvref_t<U>, Failure> && std::is_constructible_v<T, U&&>;

// Out of line and cold: prints the error and aborts. Reached only through a
// programming bug (value() on an error, error() on a value).
[[noreturn]] void result_bad_access(const Error* error) noexcept;
}  // namespace detail

template <typename T>
class [[nodiscard]] Result {
    static_assert(!std::is_reference_v<T>, "Result<T&> is not supported");
    static_assert(!std::is_same_v<std::remove_cv_t<T>, Error>, "Result<Error> is ambiguous");
    static_assert(!std::is_same_v<std::remove_cv_t<T>, Failure>, "Result<Failure> is ambiguous");

  public:
    using value_type = T;
    using error_type = Error;

    // Like std::expected: default construction yields a value-initialised T.
    // The value and Failure constructors are implicit, as in std::expected,
    // so that `return value;` and `return fail(...);` both work.
    constexpr Result() requires std::is_default_constructible_v<T> : v_(std::in_place_index<0>) {}
    constexpr Result(const T& value) : v_(std::in_place_index<0>, value) {}
    constexpr Result(T&& value) : v_(std::in_place_index<0>, std::move(value)) {}
    template <detail::ValueSource<T> U>
    constexpr explicit(!std::is_convertible_v<U&&, T>) Result(U&& value)
        : v_(std::in_place_index<0>, std::forward<U>(value)) {}
    constexpr Result(const Failure& f) noexcept : v_(std::in_place_index<1>, f.error()) {}
    template <typename... Args>
    constexpr explicit Result(std::in_place_t, Args&&... args)
        : v_(std::in_place_index<0>, std::forward<Args>(args)...) {}

    constexpr bool has_value() const noexcept { return v_.index() == 0; }
    constexpr explicit operator bool() const noexcept { return has_value(); }

    // Checked in every build: an unchecked value() is a bug worth a loud stop.
    constexpr T& value() & {
        if (!has_value())
            detail::result_bad_access(std::get_if<1>(&v_));
        return *std::get_if<0>(&v_);
    }
    constexpr const T& value() const& {
        if (!has_value())
            detail::result_bad_access(std::get_if<1>(&v_));
        return *std::get_if<0>(&v_);
    }
    constexpr T&& value() && { return std::move(value()); }

    constexpr const Error& error() const& noexcept {
        if (has_value())
            detail::result_bad_access(nullptr);
        return *std::get_if<1>(&v_);
    }

    // Unchecked like std::expected, but asserted in debug builds.
    constexpr T& operator*() & noexcept {
        assert(has_value());
        return *std::get_if<0>(&v_);
    }
    constexpr const T& operator*() const& noexcept {
        assert(has_value());
        return *std::get_if<0>(&v_);
    }
    constexpr T&& operator*() && noexcept {
        assert(has_value());
        return std::move(*std::get_if<0>(&v_));
    }
    constexpr T* operator->() noexcept {
        assert(has_value());
        return std::get_if<0>(&v_);
    }
    constexpr const T* operator->() const noexcept {
        assert(has_value());
        return std::get_if<0>(&v_);
    }

    template <typename U>
    constexpr T value_or(U&& fallback) const& {
        return has_value() ? *std::get_if<0>(&v_) : static_cast<T>(std::forward<U>(fallback));
    }
    template <typename U>
    constexpr T value_or(U&& fallback) && {
        return has_value() ? std::move(*std::get_if<0>(&v_))
                           : static_cast<T>(std::forward<U>(fallback));
    }

  private:
    std::variant<T, Error> v_;
};

// Result<void>: success or an Error. `return {};` means success.
template <>
class [[nodiscard]] Result<void> {
  public:
    using value_type = void;
    using error_type = Error;

    constexpr Result() noexcept = default;
    constexpr Result(const Failure& f) noexcept : error_(f.error()), ok_(false) {}

    constexpr bool has_value() const noexcept { return ok_; }
    constexpr explicit operator bool() const noexcept { return ok_; }

    constexpr void value() const {
        if (!ok_)
            detail::result_bad_access(&error_);
    }
    constexpr void operator*() const noexcept { assert(ok_); }

    constexpr const Error& error() const& noexcept {
        if (ok_)
            detail::result_bad_access(nullptr);
        return error_;
    }

  private:
    Error error_{};
    bool ok_{true};
};

}  // namespace plugin::common
