#include "result.hpp"

#include <cstdio>
#include <cstdlib>

namespace plugin::common {

std::string_view to_string(ErrorCode code) noexcept {
    // No default: -Wswitch flags a new enumerator that lacks a name.
    switch (code) {
        case ErrorCode::Truncated:
            return "truncated";
        case ErrorCode::BadVersion:
            return "bad_version";
        case ErrorCode::BadType:
            return "bad_type";
        case ErrorCode::BadLength:
            return "bad_length";
        case ErrorCode::BadChecksum:
            return "bad_checksum";
        case ErrorCode::BadField:
            return "bad_field";
        case ErrorCode::NoSpace:
            return "no_space";
        case ErrorCode::UnknownPeer:
            return "unknown_peer";
        case ErrorCode::OutOfRange:
            return "out_of_range";
        case ErrorCode::Duplicate:
            return "duplicate";
        case ErrorCode::InvalidArgument:
            return "invalid_argument";
        case ErrorCode::InvalidState:
            return "invalid_state";
        case ErrorCode::WouldBlock:
            return "would_block";
        case ErrorCode::Closed:
            return "closed";
        case ErrorCode::Timeout:
            return "timeout";
        case ErrorCode::Unreachable:
            return "unreachable";
        case ErrorCode::NoResources:
            return "no_resources";
        case ErrorCode::Unsupported:
            return "unsupported";
        case ErrorCode::Cancelled:
            return "cancelled";
        case ErrorCode::Internal:
            return "internal";
    }
    // A value cast in from outside the enum (e.g. decoded from a counter index).
    return "unknown";
}

namespace detail {

[[noreturn]] void result_bad_access(const Error* error) noexcept {
    // Plain stdio: this runs inside an MPI process whose logging may be the
    // thing that failed; abort() leaves a core for the bug hunt.
    if (error != nullptr) {
        const std::string_view name = to_string(error->code);
        const std::string_view msg =
            error->message.empty() ? std::string_view("-") : error->message;
        std::fprintf(stderr, "plugin::common::Result: value() on error %.*s: %.*s\n",
                     static_cast<int>(name.size()), name.data(), static_cast<int>(msg.size()),
                     msg.data());
    } else {
        std::fputs("plugin::common::Result: error() on a value\n", stderr);
    }
    std::abort();
}

}  // namespace detail
}  // namespace plugin::common
