// Loss recovery of the pml dr reliability channel, as pure data and pure
// functions: per-path RTT estimation, the probe timeout (PTO), the
// re-admission probe schedule (loss itself is declared by the channel's
// RACK rule over FIFO paths). Modelled on
// QUIC's recovery (RFC 9002 §5-6) and TCP's RACK-TLP (RFC 8985); the channel
// (channel_send.cpp) feeds it samples and asks it for deadlines, and nothing
// here calls back into the channel.
//
// RTT (RFC 9002 §5): a sample is taken only from a frame transmitted once
// (Karn: a resent frame's ACK cannot tell which transmission it answers).
//   first sample:  srtt = s, rttvar = s / 2, min_rtt = s
//   later:         min_rtt = min(min_rtt, s); s' = s - ack_delay when that
//                  stays >= min_rtt (ack_delay capped at the peer's bound);
//                  rttvar = 3/4 rttvar + 1/4 |srtt - s'|; srtt = 7/8 srtt + 1/8 s'
// PTO (RFC 9002 §6.2): base = srtt + max(4 rttvar, granularity) + the peer's
// max ACK delay, doubled per consecutive expiry without progress, capped at
// max_pto. Before any sample srtt = initial_rtt, rttvar = initial_rtt / 2.
// Re-admission probes of a failed path: probe_initial, doubled per
// unanswered probe, capped at probe_max.
#pragma once
#include <algorithm>
#include <cstdint>

#include "backoff.hpp"
#include "time.hpp"

namespace pml::dr::core::recovery {

using plugin::common::kMillis;
using plugin::common::kNever;
using plugin::common::kSeconds;
using plugin::common::Micros;

struct Params {
    // RTT assumed before the first sample: long enough for a WAN's first
    // round trip not to look lost, short enough that a tail loss before any
    // sample costs tens of milliseconds, not seconds.
    Micros initial_rtt = 10 * kMillis;
    // Floor of the variance term (QUIC's kGranularity): a margin for what
    // the RTT samples do not show. Unlike a kernel's TCP, an MPI process
    // acknowledges only while it calls MPI (a receiver checksumming a
    // megabyte, or descheduled on a loaded node, holds its ACKs for
    // milliseconds), which is why an expiry sends a PROBE, not data: one
    // that finds the peer merely busy costs a header. 200 us: dr over tcp
    // under 1% loss read 1.2-1.5x the clean latency with it against 2.2-2.8x
    // with 1 ms, bandwidth and rate unchanged within noise.
    Micros granularity = 200;
    // Upper bound of a backed-off PTO (pml_dr_ack_timeout).
    Micros max_pto = 1 * kSeconds;
    // Consecutive PTO expiries on one path, while the peer answers on
    // another, before that path is failed (pml_dr_ack_retries).
    unsigned fail_after = 3;
    // Re-admission probes of a failed path (pml_dr_probe_interval, _max).
    Micros probe_initial = 100 * kMillis;
    Micros probe_max = 1 * kSeconds;
};

class RttEstimator {
  public:
    // latest: time from the (single) transmission to its acknowledgement;
    // ack_delay: how long the peer says it held the ACK (0: unknown);
    // max_ack_delay: the peer's bound on that delay.
    constexpr void sample(Micros latest, Micros ack_delay, Micros max_ack_delay) noexcept {
        if (latest < 0)
            return;
        latest_ = latest;
        if (!has_sample_) {
            has_sample_ = true;
            min_rtt_ = srtt_ = latest;
            rttvar_ = latest / 2;
            return;
        }
        min_rtt_ = std::min(min_rtt_, latest);
        Micros adjusted = latest;
        const Micros delay = std::clamp<Micros>(ack_delay, 0, std::max<Micros>(max_ack_delay, 0));
        if (latest - delay >= min_rtt_)
            adjusted = latest - delay;
        const Micros dev = srtt_ > adjusted ? srtt_ - adjusted : adjusted - srtt_;
        rttvar_ = (3 * rttvar_ + dev) / 4;
        srtt_ = (7 * srtt_ + adjusted) / 8;
    }
    [[nodiscard]] constexpr bool has_sample() const noexcept { return has_sample_; }
    [[nodiscard]] constexpr Micros srtt(const Params& p) const noexcept {
        return has_sample_ ? srtt_ : p.initial_rtt;
    }
    [[nodiscard]] constexpr Micros rttvar(const Params& p) const noexcept {
        return has_sample_ ? rttvar_ : p.initial_rtt / 2;
    }
    [[nodiscard]] constexpr Micros min_rtt() const noexcept { return has_sample_ ? min_rtt_ : 0; }
    [[nodiscard]] constexpr Micros latest() const noexcept { return latest_; }

  private:
    Micros srtt_ = 0;
    Micros rttvar_ = 0;
    Micros min_rtt_ = 0;
    Micros latest_ = 0;
    bool has_sample_ = false;
};

// The PTO before any back-off.
constexpr Micros pto_base(const RttEstimator& rtt, const Params& p,
                          Micros peer_max_ack_delay) noexcept {
    const Micros var = std::max(std::min(rtt.rttvar(p), kNever / 8) * 4, p.granularity);
    return add_saturating(add_saturating(rtt.srtt(p), var), peer_max_ack_delay);
}

// Doubling back-off of a base interval after `expiries` consecutive
// expiries, capped (the cap wins over a base above it).
constexpr Micros doubled(Micros base, unsigned expiries, Micros cap) noexcept {
    if (base <= 0)
        return 0;
    Micros v = base;
    for (unsigned k = 0; k < expiries && v < cap; ++k)
        v = add_saturating(v, v);
    return std::min(v, cap);
}

// The PTO after `pto_count` consecutive expiries.
constexpr Micros pto(const RttEstimator& rtt, const Params& p, Micros peer_max_ack_delay,
                     unsigned pto_count) noexcept {
    return doubled(pto_base(rtt, p, peer_max_ack_delay), pto_count, p.max_pto);
}

// Wait before re-admission probe number `attempts` (0-based) of a failed path.
constexpr Micros probe_interval(const Params& p, unsigned attempts) noexcept {
    return doubled(p.probe_initial, attempts, p.probe_max);
}

}  // namespace pml::dr::core::recovery
