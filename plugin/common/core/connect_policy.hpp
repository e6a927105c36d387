// How a stream component (btl drtcp, oob drtcp) retries a connection: a
// timeout per attempt, a linear back-off between attempts and a bound on
// attempts in a row. Pure data and a pure function; the state machines use it.
#pragma once
#include "time.hpp"

namespace plugin::common {

struct ConnectPolicy {
    Micros connect_timeout = 10 * kSeconds;  // per attempt, until the peer's greeting
    Micros retry_delay = 100 * kMillis;      // × attempt (linear)
    unsigned attempts = 10;                  // in a row, before giving up
};

// Wait before attempt `attempt` (1-based) is retried.
constexpr Micros retry_backoff(const ConnectPolicy& p, unsigned attempt) noexcept {
    return p.retry_delay * static_cast<Micros>(attempt == 0 ? 1 : attempt);
}

}  // namespace plugin::common
