// Timer back-off of the pml dr reliability channel, as pure functions so the
// table is testable on its own and the sim tests can state their bounds.
//
// Linear back-off (as the historical DR): the wait before expiry k of a timer
// (k = 0 for the first arming, k = number of expiries so far) is
//     timeout * (1 + k).
// A timer that may expire `retries` times before its path is declared failed
// therefore fails the path at most
//     sum_{k=0}^{retries} timeout * (1 + k) = timeout * (retries + 1) * (retries + 2) / 2
// after it was (last) armed. All values saturate instead of overflowing, so a
// huge configured timeout means "never" rather than a negative deadline.
#pragma once
#include <cstdint>

#include "time.hpp"

namespace pml::dr::core {

using plugin::common::kNever;
using plugin::common::Micros;

// a + b, clamped to kNever; negative inputs count as 0.
constexpr Micros add_saturating(Micros a, Micros b) noexcept {
    if (a < 0)
        a = 0;
    if (b < 0)
        b = 0;
    return a > kNever - b ? kNever : a + b;
}

// Wait before expiry number `retries` (0-based) of a timer.
constexpr Micros backoff(Micros timeout, unsigned retries) noexcept {
    if (timeout <= 0)
        return 0;
    // Armed on every transmission: an overflow check, not a division.
    Micros product = 0;
    if (__builtin_mul_overflow(timeout, static_cast<Micros>(retries) + 1, &product))
        return kNever;  // kNever is Micros' largest value
    return product;
}

// Longest time from arming a timer to the expiry that gives up, when it may
// expire `retries` times without giving up (expiry retries + 1 gives up).
constexpr Micros time_to_fail(Micros timeout, unsigned retries) noexcept {
    Micros total = 0;
    for (unsigned k = 0; k <= retries; ++k) {
        total = add_saturating(total, backoff(timeout, k));
        if (total == kNever)
            break;
    }
    return total;
}

}  // namespace pml::dr::core
