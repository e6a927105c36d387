#include "config.hpp"

#include "fault.hpp"

namespace pml::dr::core {

using plugin::common::is_probability;

using plugin::common::kMillis;

RawParams default_params() noexcept {
    namespace d = defaults;
    const auto ms = [](plugin::common::Micros us) { return static_cast<unsigned>(us / kMillis); };
    RawParams p;
    p.priority = d::kPriority;
    p.csum = static_cast<int>(CsumMode::Auto);
    p.eager_limit = d::kEagerLimit;
    p.pipeline_depth = d::kPipelineDepth;
    p.vfrag_frags = d::kVfragFrags;
    p.watchdog_timeout_ms = ms(d::kWatchdogTimeout);
    p.watchdog_retries = d::kWatchdogRetries;
    p.ack_timeout_ms = ms(d::kAckTimeout);
    p.ack_retries = d::kAckRetries;
    p.ack_delay_us = static_cast<unsigned>(d::kAckDelay);
    p.probe_interval_ms = ms(d::kProbeInterval);
    p.probe_max_ms = ms(d::kProbeMax);
    p.peer_dead_timeout_ms = ms(d::kPeerDeadTimeout);
    p.unexpected_limit = d::kUnexpectedLimit;
    p.window = d::kWindow;
    p.trust_local = d::kTrustLocal;
    return p;
}

std::string validate(const RawParams& raw, Config& out) {
    Config c;
    if (raw.csum < 0 || raw.csum > 2)
        return "pml_dr_csum must be auto, always or never";
    c.csum = static_cast<CsumMode>(raw.csum);
    if (raw.eager_limit < 1024)
        return "pml_dr_eager_limit must be at least 1024 bytes";
    c.eager_limit = raw.eager_limit;
    if (raw.pipeline_depth < 1 || raw.pipeline_depth > 1024)
        return "pml_dr_pipeline_depth must be in 1..1024";
    c.pipeline_depth = raw.pipeline_depth;
    if (raw.vfrag_frags < 1 || raw.vfrag_frags > 64)
        return "pml_dr_vfrag_frags must be in 1..64";
    c.vfrag_frags = raw.vfrag_frags;
    if (raw.watchdog_timeout_ms == 0)
        return "pml_dr_watchdog_timeout must be positive";
    if (raw.ack_timeout_ms == 0)
        return "pml_dr_ack_timeout must be positive";
    if (raw.peer_dead_timeout_ms == 0)
        return "pml_dr_peer_dead_timeout must be positive";
    c.watchdog_timeout = raw.watchdog_timeout_ms * kMillis;
    c.watchdog_retries = raw.watchdog_retries;
    c.ack_timeout = raw.ack_timeout_ms * kMillis;
    c.ack_retries = raw.ack_retries;
    if (raw.ack_delay_us > 10u * 1000u * 1000u)
        return "pml_dr_ack_delay must be at most 10 s (10000000 us)";
    c.ack_delay = raw.ack_delay_us;
    if (raw.probe_interval_ms == 0 || raw.probe_max_ms < raw.probe_interval_ms)
        return "pml_dr_probe_interval must be positive and at most pml_dr_probe_max";
    c.probe_interval = raw.probe_interval_ms * kMillis;
    c.probe_max = raw.probe_max_ms * kMillis;
    c.peer_dead_timeout = raw.peer_dead_timeout_ms * kMillis;
    c.unexpected_limit = raw.unexpected_limit;
    if (raw.window < 64 || raw.window > 4096 || (raw.window & (raw.window - 1)) != 0)
        return "pml_dr_window must be a power of two in 64..4096";
    c.window = raw.window;
    c.trust_local = raw.trust_local;
    c.stats = raw.stats;
    if (!is_probability(raw.fault_drop) || !is_probability(raw.fault_corrupt) ||
        !is_probability(raw.fault_dup))
        return "pml_dr_fault_* probabilities must be in 0..1";
    c.fault_drop = raw.fault_drop;
    c.fault_corrupt = raw.fault_corrupt;
    c.fault_dup = raw.fault_dup;
    c.fault_seed = raw.fault_seed;
    c.fault_fail_btl = raw.fault_fail_btl != nullptr ? raw.fault_fail_btl : "";
    c.fault_fail_after = raw.fault_fail_after;
    if (c.fault_fail_after > 0 && c.fault_fail_btl.empty())
        return "pml_dr_fault_fail_after needs pml_dr_fault_fail_btl (a BTL name)";
    out = c;
    return {};
}

}  // namespace pml::dr::core
