// Time in the cores: one integer unit, microseconds, supplied by the caller.
// Cores never read a clock; the glue passes opal_timer-based "now", the
// simulator passes virtual time.
#pragma once
#include <cstdint>
#include <limits>

namespace plugin::common {

using Micros = std::int64_t;

inline constexpr Micros kNever = std::numeric_limits<Micros>::max();
inline constexpr Micros kMillis = 1000;
inline constexpr Micros kSeconds = 1000 * kMillis;

}  // namespace plugin::common
