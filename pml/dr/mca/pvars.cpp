// MPI_T performance variables of pml dr: the reliability channel's per-peer
// counters, bound to a communicator (one value per rank of its remote group,
// as ob1's queue-length variables), plus process-wide receive-side counters
// that cannot be attributed to a peer (a frame whose header fails its CRC has
// no trustworthy sender).
#include "pvars.hpp"

#include <cstddef>

#include "pml.hpp"
#include "reliability.hpp"

namespace pml::dr::mca {
namespace {

using Field = std::uint64_t core::PeerCounters::*;

struct PeerPvar {
    const char* name;
    const char* help;
    Field field;
};

constexpr PeerPvar kPeerPvars[] = {
    {"frames_sent", "Frames sent to each peer, resends included", &core::PeerCounters::frames_sent},
    {"bytes_sent", "Bytes sent to each peer, resends included", &core::PeerCounters::bytes_sent},
    {"retransmits", "Frames sent again to each peer (NACK, ACK timeout or failover)",
     &core::PeerCounters::retransmits},
    {"frames_received", "Frames from each peer delivered for the first time",
     &core::PeerCounters::frames_delivered},
    {"bytes_received", "Bytes from each peer delivered for the first time",
     &core::PeerCounters::bytes_delivered},
    {"duplicates_dropped", "Frames from each peer dropped as duplicates (and re-acknowledged)",
     &core::PeerCounters::duplicates_dropped},
    {"ack_timeouts", "Probe-timeout expiries towards each peer (each sends a PROBE)",
     &core::PeerCounters::ack_timeouts},
    {"probes_sent", "PROBE frames sent to each peer (timeouts, suspect and failed paths)",
     &core::PeerCounters::probes_sent},
    {"paths_readmitted", "Failed paths towards each peer taken back after an answered PROBE",
     &core::PeerCounters::paths_readmitted},
    {"failovers", "Path failures towards each peer whose frames moved to another path",
     &core::PeerCounters::failovers},
    {"paths_lost", "Paths (BTLs) towards each peer declared failed",
     &core::PeerCounters::paths_lost},
};

struct RxPvar {
    const char* name;
    const char* help;
    std::uint64_t core::RxCounters::*field;
};

constexpr RxPvar kRxPvars[] = {
    {"checksum_errors", "Arriving frames dropped for a header or payload checksum mismatch",
     &core::RxCounters::checksum_errors},
    {"decode_errors", "Arriving frames dropped as malformed (length, version, type, flags)",
     &core::RxCounters::decode_errors},
};

int comm_size_notify(mca_base_pvar_t*, mca_base_pvar_event_t event, void* obj, int* count) {
    if (event == MCA_BASE_PVAR_HANDLE_BIND) {
        auto* comm = static_cast<ompi_communicator_t*>(obj);
        *count = comm->c_remote_group->grp_proc_count;
    }
    return OMPI_SUCCESS;
}

int read_peer_counter(const mca_base_pvar_t* pvar, void* value, void* obj) {
    const auto& spec = *static_cast<const PeerPvar*>(pvar->ctx);
    auto* comm = static_cast<ompi_communicator_t*>(obj);
    auto* out = static_cast<unsigned long long*>(value);
    const int n = comm->c_remote_group->grp_proc_count;
    for (int i = 0; i < n; ++i)
        out[i] = 0;
    const core::ReliableChannel* ch = channel();
    if (ch == nullptr)
        return OMPI_SUCCESS;  // before MPI_Init or after MPI_Finalize
    Guard g;
    for (int i = 0; i < n; ++i) {
        core::PeerId peer = 0;
        if (!known_peer(ompi_comm_peer_lookup(comm, i), peer))
            continue;                                // no traffic ever
        out[i] = ch->counters_of(peer).*spec.field;  // resting or not
    }
    return OMPI_SUCCESS;
}

int read_rx_counter(const mca_base_pvar_t* pvar, void* value, void*) {
    const auto& spec = *static_cast<const RxPvar*>(pvar->ctx);
    auto* out = static_cast<unsigned long long*>(value);
    *out = 0;
    if (!state().reliable)
        return OMPI_SUCCESS;
    Guard g;
    *out = engine().rx().*spec.field;
    return OMPI_SUCCESS;
}

}  // namespace

int register_pvars(const mca_base_component_t* component) noexcept {
    int failed = 0;
    const auto flags = static_cast<mca_base_pvar_flag_t>(MCA_BASE_PVAR_FLAG_READONLY |
                                                         MCA_BASE_PVAR_FLAG_CONTINUOUS);
    for (const PeerPvar& p : kPeerPvars) {
        const int idx = mca_base_component_pvar_register(
            component, p.name, p.help, OPAL_INFO_LVL_4, MPI_T_PVAR_CLASS_COUNTER,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, nullptr, MPI_T_BIND_MPI_COMM, flags,
            read_peer_counter, nullptr, comm_size_notify, const_cast<PeerPvar*>(&p));
        failed += idx < 0 ? 1 : 0;
    }
    for (const RxPvar& p : kRxPvars) {
        const int idx = mca_base_component_pvar_register(
            component, p.name, p.help, OPAL_INFO_LVL_4, MPI_T_PVAR_CLASS_COUNTER,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, nullptr, MPI_T_BIND_NO_OBJECT, flags,
            read_rx_counter, nullptr, nullptr, const_cast<RxPvar*>(&p));
        failed += idx < 0 ? 1 : 0;
    }
    return failed;
}

}  // namespace pml::dr::mca
