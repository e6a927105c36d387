// pml dr configuration: what the MCA parameters become once validated.
// The glue fills RawParams from the parameter table; validate() turns them
// into a Config or explains what is wrong.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "defaults.hpp"
#include "time.hpp"

namespace pml::dr::core {

enum class CsumMode : int { Auto = 0, Always = 1, Never = 2 };

struct RawParams {
    int priority = 0;
    int verbose = 0;
    int csum = 0;                 // CsumMode
    std::size_t eager_limit = 0;  // bytes sent without waiting for the receiver
    unsigned pipeline_depth = 0;  // vfrags in flight per rendezvous per path
    unsigned vfrag_frags = 0;     // frags per vfrag (1..64: the ack bitmask width)
    unsigned watchdog_timeout_ms = 0;
    unsigned watchdog_retries = 0;
    unsigned ack_timeout_ms = 0;
    unsigned ack_retries = 0;
    unsigned ack_delay_us = 0;       // longest an arrival waits for its (coalesced) ACK
    unsigned probe_interval_ms = 0;  // first re-admission probe of a failed path
    unsigned probe_max_ms = 0;       // longest wait between them
    unsigned peer_dead_timeout_ms = 0;
    std::size_t unexpected_limit = 0;  // bytes of unexpected eager data held per process
    unsigned window = 0;               // frames per peer not yet acknowledged
    bool trust_local = false;          // compact protocol on memory paths (trust.hpp)
    bool stats = false;
    double fault_drop = 0.0;
    double fault_corrupt = 0.0;
    double fault_dup = 0.0;
    unsigned fault_seed = 0;
    const char* fault_fail_btl = nullptr;  // BTL component name (MCA string storage)
    unsigned fault_fail_after = 0;
};

struct Config {
    CsumMode csum = CsumMode::Auto;
    std::size_t eager_limit = defaults::kEagerLimit;
    unsigned pipeline_depth = defaults::kPipelineDepth;
    unsigned vfrag_frags = defaults::kVfragFrags;
    plugin::common::Micros watchdog_timeout = defaults::kWatchdogTimeout;
    unsigned watchdog_retries = defaults::kWatchdogRetries;
    plugin::common::Micros ack_timeout = defaults::kAckTimeout;
    unsigned ack_retries = defaults::kAckRetries;
    plugin::common::Micros ack_delay = defaults::kAckDelay;
    plugin::common::Micros probe_interval = defaults::kProbeInterval;
    plugin::common::Micros probe_max = defaults::kProbeMax;
    plugin::common::Micros peer_dead_timeout = defaults::kPeerDeadTimeout;
    std::size_t unexpected_limit = defaults::kUnexpectedLimit;
    unsigned window = defaults::kWindow;
    // Peers reached only through memory get the compact protocol (trust.hpp).
    bool trust_local = defaults::kTrustLocal;
    bool stats = false;
    double fault_drop = 0.0;
    double fault_corrupt = 0.0;
    double fault_dup = 0.0;
    std::uint64_t fault_seed = 0;
    // Testing: after this process sent fault_fail_after frames over the BTL
    // named fault_fail_btl, that BTL is treated as dead (0/empty: off).
    std::string fault_fail_btl;
    unsigned fault_fail_after = 0;

    [[nodiscard]] bool faults_enabled() const noexcept {
        return fault_drop > 0.0 || fault_corrupt > 0.0 || fault_dup > 0.0;
    }
};

// Defaults as RawParams, so the MCA table and the core agree on one source.
RawParams default_params() noexcept;

// Empty string on success; otherwise a message naming the bad parameter.
std::string validate(const RawParams& raw, Config& out);

}  // namespace pml::dr::core
