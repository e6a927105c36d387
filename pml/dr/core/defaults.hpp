// pml dr's defaults, declared once. The MCA parameter table (through
// default_params()), Config and the channel's ChannelParams all take them
// from here, so they cannot disagree.
#pragma once
#include <cstddef>

#include "time.hpp"

namespace pml::dr::core::defaults {

using plugin::common::kMillis;
using plugin::common::kSeconds;
using plugin::common::Micros;

inline constexpr int kPriority = 10;
inline constexpr std::size_t kEagerLimit = 128 * 1024;
inline constexpr unsigned kPipelineDepth = 3;
inline constexpr unsigned kVfragFrags = 64;
inline constexpr Micros kWatchdogTimeout = 5 * kSeconds;
inline constexpr unsigned kWatchdogRetries = 1;
// The cap of a backed-off probe timeout, and the consecutive expiries a path
// survives while the peer answers on another (recovery.hpp).
inline constexpr Micros kAckTimeout = 1 * kSeconds;
inline constexpr unsigned kAckRetries = 3;
inline constexpr Micros kAckDelay = 200;
inline constexpr Micros kProbeInterval = 100 * kMillis;
inline constexpr Micros kProbeMax = 1 * kSeconds;
// A compute phase outside MPI may last that long.
inline constexpr Micros kPeerDeadTimeout = 300 * kSeconds;
inline constexpr std::size_t kUnexpectedLimit = 256 * 1024 * 1024;
inline constexpr unsigned kWindow = 256;
inline constexpr bool kTrustLocal = true;

}  // namespace pml::dr::core::defaults
