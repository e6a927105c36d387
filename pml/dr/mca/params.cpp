#include "params.hpp"

#include <array>

#include "mca_params.hpp"

namespace pml::dr::mca {

using plugin::common::ParamEnumValue;
using plugin::common::ParamSpec;
using plugin::common::ParamType;

core::RawParams& raw_params() noexcept {
    static core::RawParams raw;
    return raw;
}

namespace {
constexpr ParamEnumValue kCsumValues[] = {
    {static_cast<int>(core::CsumMode::Auto), "auto"},
    {static_cast<int>(core::CsumMode::Always), "always"},
    {static_cast<int>(core::CsumMode::Never), "never"},
    {0, nullptr},
};
}  // namespace

int register_params(const mca_base_component_2_1_0_t* component) noexcept {
    core::RawParams& r = raw_params();
    const core::RawParams d = core::default_params();
    const std::array specs{
        ParamSpec{
            "priority",
            "Selection priority of the dr PML (it is only considered when named: --mca pml dr)",
            ParamType::Int, &r.priority, d.priority},
        ParamSpec{"verbose",
                  "Verbosity of the dr PML's log stream (0 quiet, 20 info, 50 debug, 90 trace)",
                  ParamType::Int, &r.verbose, d.verbose},
        ParamSpec{
            "csum",
            "Checksum frames: auto (when a BTL asks with MCA_BTL_FLAGS_NEED_CSUM), always, never",
            ParamType::Enum, &r.csum, d.csum, 0.0, nullptr, kCsumValues},
        ParamSpec{"eager_limit", "Largest message (bytes) sent before the receiver has matched it",
                  ParamType::SizeT, &r.eager_limit, static_cast<long long>(d.eager_limit)},
        ParamSpec{"pipeline_depth", "Vfrags of a long message in flight at once per path",
                  ParamType::Unsigned, &r.pipeline_depth, d.pipeline_depth},
        ParamSpec{"vfrag_frags", "Frags per vfrag, the unit of acknowledgement (1..64)",
                  ParamType::Unsigned, &r.vfrag_frags, d.vfrag_frags},
        ParamSpec{"watchdog_timeout", "Milliseconds a vfrag may wait for local send completion",
                  ParamType::Unsigned, &r.watchdog_timeout_ms, d.watchdog_timeout_ms},
        ParamSpec{"watchdog_retries", "Watchdog expiries before the path is declared dead",
                  ParamType::Unsigned, &r.watchdog_retries, d.watchdog_retries},
        ParamSpec{"ack_timeout",
                  "Upper bound (ms) of the probe timeout, which is measured per path from the "
                  "round-trip time and doubled per unanswered expiry",
                  ParamType::Unsigned, &r.ack_timeout_ms, d.ack_timeout_ms},
        ParamSpec{"ack_retries",
                  "Consecutive probe-timeout expiries before a path is declared failed, if the "
                  "peer answers on another path (silent everywhere, it may be computing: see "
                  "peer_dead_timeout)",
                  ParamType::Unsigned, &r.ack_retries, d.ack_retries},
        ParamSpec{"probe_interval",
                  "Milliseconds before the first probe of a failed path (doubled per unanswered "
                  "probe up to probe_max); an answered probe takes the path back",
                  ParamType::Unsigned, &r.probe_interval_ms, d.probe_interval_ms},
        ParamSpec{"probe_max", "Longest wait (ms) between probes of a failed path",
                  ParamType::Unsigned, &r.probe_max_ms, d.probe_max_ms},
        ParamSpec{"ack_delay",
                  "Microseconds an arriving frame may wait for its ACK, which coalesces with "
                  "later ones or rides on a frame going back",
                  ParamType::Unsigned, &r.ack_delay_us, d.ack_delay_us},
        ParamSpec{
            "peer_dead_timeout",
            "Milliseconds of silence after which a peer with pending traffic is declared dead "
            "(a rank computing outside MPI is silent too: no job may compute longer while a "
            "peer waits for its ACKs)",
            ParamType::Unsigned, &r.peer_dead_timeout_ms, d.peer_dead_timeout_ms},
        ParamSpec{"unexpected_limit",
                  "Bytes of unexpected (not yet matched) message data this process buffers",
                  ParamType::SizeT, &r.unexpected_limit,
                  static_cast<long long>(d.unexpected_limit)},
        ParamSpec{"window",
                  "Frames per peer sent and not yet acknowledged (a power of two, 64..4096; equal "
                  "on every process): bounds the per-peer retransmit state and copies",
                  ParamType::Unsigned, &r.window, d.window},
        ParamSpec{"trust_local",
                  "Small messages to a peer reached only through memory (self, vader) go with a "
                  "16-byte header, no sequence, acknowledgement, checksum or kept copy, as memory "
                  "cannot lose or damage them (off: the full protocol everywhere; also off towards "
                  "a peer that has it off, and while faults are injected or pml_dr_csum=always)",
                  ParamType::Bool, &r.trust_local, d.trust_local},
        ParamSpec{"stats", "Print per-peer reliability counters at MPI_Finalize", ParamType::Bool,
                  &r.stats, d.stats},
        ParamSpec{
            "fault_drop",
            "Testing: probability (0 up to, not including, 1) that an arriving frame is dropped",
            ParamType::Double, &r.fault_drop, 0, d.fault_drop, nullptr, nullptr, 4,
            plugin::common::ParamRange::Probability},
        ParamSpec{"fault_corrupt",
                  "Testing: probability (0 up to, not including, 1) that an arriving frame gets a "
                  "bit flipped",
                  ParamType::Double, &r.fault_corrupt, 0, d.fault_corrupt, nullptr, nullptr, 4,
                  plugin::common::ParamRange::Probability},
        ParamSpec{"fault_dup",
                  "Testing: probability (0 up to, not including, 1) that an arriving frame is "
                  "delivered twice",
                  ParamType::Double, &r.fault_dup, 0, d.fault_dup, nullptr, nullptr, 4,
                  plugin::common::ParamRange::Probability},
        ParamSpec{"fault_seed",
                  "Testing: seed of the fault injection generator (same seed, same faults)",
                  ParamType::Unsigned, &r.fault_seed, d.fault_seed},
        ParamSpec{"fault_fail_btl",
                  "Testing: name of a BTL (e.g. tcp) that dies after fault_fail_after frames",
                  ParamType::String, &r.fault_fail_btl, 0, 0.0, nullptr},
        ParamSpec{"fault_fail_after",
                  "Testing: frames this process sends over fault_fail_btl before that BTL is "
                  "treated as dead: nothing more is sent or accepted on it (0: never)",
                  ParamType::Unsigned, &r.fault_fail_after, d.fault_fail_after},
    };
    return plugin::common::register_params(component, specs);
}

}  // namespace pml::dr::mca
