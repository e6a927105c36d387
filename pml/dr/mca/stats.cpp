// pml_dr_stats: what each process prints at finalize — its receive
// counters, the faults it injected, and per peer and per path what the
// reliability channel did. One line each, name=value pairs, so scripts (the
// demo's summary, the MPI tests) can add them up.
#include <string>

#include "local_path.hpp"
#include "pml.hpp"
#include "reliability.hpp"

namespace pml::dr::mca {
namespace {

using core::PathId;
using core::PeerId;

// pml_dr_stats: one line per process at finalize with what the receive side
// saw (the reliability counters join it with the reliability layer).
void print_rx_stats() noexcept {
    const State& s = state();
    if (!s.config.stats || !s.reliable)
        return;
    const core::RxCounters& rx = engine().rx();
    opal_output(
        0,
        "[pml:dr] stats %s: frames_in=%llu bytes_in=%llu decode_errors=%llu checksum_errors=%llu "
        "unknown_peer=%llu bad_rank=%llu unknown_request=%llu duplicates=%llu parked=%llu "
        "parked_dropped=%llu bad_credit=%llu unexpected_peak_bytes=%zu eager_window=%llu",
        OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME), static_cast<unsigned long long>(rx.frames),
        static_cast<unsigned long long>(rx.bytes),
        static_cast<unsigned long long>(rx.decode_errors),
        static_cast<unsigned long long>(rx.checksum_errors),
        static_cast<unsigned long long>(rx.unknown_peer),
        static_cast<unsigned long long>(rx.bad_rank),
        static_cast<unsigned long long>(rx.unknown_request),
        static_cast<unsigned long long>(rx.duplicates),
        static_cast<unsigned long long>(rx.pending_unknown_comm),
        static_cast<unsigned long long>(rx.dropped_unknown_comm),
        static_cast<unsigned long long>(rx.bad_credit), engine().held_peak(),
        static_cast<unsigned long long>(engine().eager_window()));
    opal_output(0, "[pml:dr] local %s: local_sent=%llu local_received=%llu untrusted_local=%llu",
                OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME),
                static_cast<unsigned long long>(local_frames_sent()),
                static_cast<unsigned long long>(rx.local_frames),
                static_cast<unsigned long long>(rx.untrusted_local));
    const RputStats rp = rput_stats();
    opal_output(
        0,
        "[pml:dr] rput %s: rput_requests=%llu rput_sends=%llu rput_bytes=%llu rput_fallbacks=%llu "
        "rput_verified=%llu rput_csum_errors=%llu rput_resent=%llu rput_injected=%llu",
        OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME), static_cast<unsigned long long>(rp.requests),
        static_cast<unsigned long long>(rp.sends), static_cast<unsigned long long>(rp.bytes),
        static_cast<unsigned long long>(rp.fallbacks), static_cast<unsigned long long>(rp.verified),
        static_cast<unsigned long long>(rp.csum_errors), static_cast<unsigned long long>(rp.resent),
        static_cast<unsigned long long>(rp.injected));
    const RgetStats rg = rget_stats();
    opal_output(0,
                "[pml:dr] rget %s: rget_receives=%llu rget_fallbacks=%llu rget_verified=%llu "
                "rget_csum_errors=%llu rget_injected=%llu",
                OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME), static_cast<unsigned long long>(rg.receives),
                static_cast<unsigned long long>(rg.fallbacks),
                static_cast<unsigned long long>(rg.verified),
                static_cast<unsigned long long>(rg.csum_errors),
                static_cast<unsigned long long>(rg.injected));
}

void print_reliability_stats() noexcept {
    const State& s = state();
    const core::ReliableChannel* ch = channel();
    if (!s.config.stats || ch == nullptr)
        return;
    const ReliabilityStats rs = reliability_stats();
    const plugin::common::FaultCounters& f = rs.faults;
    opal_output(0,
                "[pml:dr] faults %s: injected_drops=%llu injected_corruptions=%llu "
                "injected_duplicates=%llu acks_dropped=%llu killed_btl_frames=%llu",
                OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME), static_cast<unsigned long long>(f.dropped),
                static_cast<unsigned long long>(f.corrupted),
                static_cast<unsigned long long>(f.duplicated),
                static_cast<unsigned long long>(rs.acks_dropped),
                static_cast<unsigned long long>(rs.frames_killed_rx));
    opal_output(0, "[pml:dr] waits %s: descriptor_waits=%llu", OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME),
                static_cast<unsigned long long>(rs.descriptor_waits));
    // Peers that went to rest left their routine counters here (the peer
    // lines carry the rest): the sums over all lines are the process's.
    const core::RestCounters& rest = ch->rest_counters();
    if (rest.rests > 0)
        opal_output(0,
                    "[pml:dr] rests %s: rests=%llu wakes=%llu acked=%llu acks_sent=%llu "
                    "acks_received=%llu absences=%llu",
                    OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME),
                    static_cast<unsigned long long>(rest.rests),
                    static_cast<unsigned long long>(rest.wakes),
                    static_cast<unsigned long long>(rest.folded.frames_acked),
                    static_cast<unsigned long long>(rest.folded.acks_sent),
                    static_cast<unsigned long long>(rest.folded.acks_received),
                    static_cast<unsigned long long>(rest.folded.absences));
    for (PeerId p = 0; p < engine().peer_count(); ++p) {
        const core::PeerCounters c = ch->counters_of(p);  // resting or not
        const core::PeerName* name = engine().peer_name(p);
        if (name == nullptr || (c.frames_sent == 0 && c.frames_delivered == 0))
            continue;
        auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
        opal_process_name_t to{};
        to.jobid = name->jobid;
        to.vpid = name->vpid;
        std::string to_name = OPAL_NAME_PRINT(to);  // the print buffer is reused
        opal_output(0,
                    "[pml:dr] peer %s -> %s: sent=%llu bytes=%llu retransmits=%llu (nack=%llu "
                    "timeout=%llu failover=%llu) acked=%llu abandoned=%llu delivered=%llu "
                    "duplicates_dropped=%llu acks_sent=%llu acks_received=%llu nacks_sent=%llu "
                    "nacks_received=%llu failovers=%llu "
                    "paths_lost=%llu promotions=%llu silent_expiries=%llu probes_sent=%llu "
                    "paths_readmitted=%llu absences=%llu state=%s",
                    OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME), to_name.c_str(), u(c.frames_sent),
                    u(c.bytes_sent), u(c.retransmits), u(c.nack_retransmits),
                    u(c.timeout_retransmits), u(c.failover_retransmits), u(c.frames_acked),
                    u(c.frames_abandoned), u(c.frames_delivered), u(c.duplicates_dropped),
                    u(c.acks_sent), u(c.acks_received), u(c.nacks_sent), u(c.nacks_received),
                    u(c.failovers), u(c.paths_lost), u(c.standby_promotions), u(c.silent_expiries),
                    u(c.probes_sent), u(c.paths_readmitted), u(c.absences),
                    std::string(core::to_string(ch->peer_state(p))).c_str());
        for (const PathId path : ch->paths(p)) {
            const core::PathCounters* pc = ch->path_counters(p, path);
            if (pc == nullptr ||
                (pc->frames_sent == 0 && pc->frames_received == 0 && pc->failures == 0))
                continue;
            opal_output(
                0,
                "[pml:dr] path %s -> %s over %s: sent=%llu bytes=%llu retransmits=%llu "
                "received=%llu bytes_received=%llu acks_sent=%llu acks_received=%llu "
                "ack_timeouts=%llu watchdog_timeouts=%llu local_errors=%llu redriven=%llu "
                "failures=%llu probes_sent=%llu paths_readmitted=%llu srtt_us=%lld "
                "rttvar_us=%lld min_rtt_us=%lld rtt_samples=%llu state=%s",
                OPAL_NAME_PRINT(*OMPI_PROC_MY_NAME), to_name.c_str(), btl_name(btl_of(path)),
                u(pc->frames_sent), u(pc->bytes_sent), u(pc->retransmits), u(pc->frames_received),
                u(pc->bytes_received), u(pc->acks_sent), u(pc->acks_received), u(pc->ack_timeouts),
                u(pc->watchdog_timeouts), u(pc->local_errors), u(pc->redriven), u(pc->failures),
                u(pc->probes_sent), u(pc->paths_readmitted), static_cast<long long>(pc->srtt),
                static_cast<long long>(pc->rttvar), static_cast<long long>(pc->min_rtt),
                u(pc->rtt_samples), std::string(core::to_string(ch->path_state(p, path))).c_str());
        }
    }
}

}  // namespace

void print_stats() noexcept {
    print_rx_stats();
    print_reliability_stats();
}

}  // namespace pml::dr::mca
