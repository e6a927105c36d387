// oob drtcp: who may connect to us (sans I/O). Decided on the peer's first
// frame, before anything is answered and before ORTE hears of the peer:
// only a daemon of our own job (mpirun is daemon 0) that ORTE knows, that
// is not us, that names us as the process it wants, and that is not already
// connected to us (unless it says it lost that connection: a reconnect).
// Anything else is refused: no reply, the connection closed, counted.
#pragma once
#include <cstdint>
#include <string_view>

#include "route.hpp"

namespace oob::drtcp::core {

enum class Admission : std::uint8_t {
    Admit,
    ForeignJob,        // not our job family's daemon job
    UnknownDaemon,     // a vpid beyond the job's daemons, or one ORTE has no record of
    Self,              // our own name
    NotForUs,          // the frame names another process as its receiver
    AlreadyConnected,  // a live connection to that peer exists and no reconnect is claimed
    LostRace,          // both sides connect at once and ours wins (not hostile)
};
std::string_view to_string(Admission a) noexcept;

// What the glue knows about the job and the claimed peer at that moment.
struct AdmissionFacts {
    ProcName me;                    // this daemon (or mpirun)
    std::uint32_t num_daemons = 0;  // daemons of the job, mpirun included
    bool known = true;              // ORTE has a record of the claimed daemon
    bool connected = false;         // we hold a live connection to it
    bool connecting = false;        // our own connection attempt to it is under way
};

// `from`: the name the peer claims; `to`: the process it wants to reach;
// `reconnect`: it says it lost its previous connection to us.
Admission admit(const AdmissionFacts& f, const ProcName& from, const ProcName& to,
                bool reconnect) noexcept;

// A refusal that says nothing about the peer's honesty (a race both sides
// resolve alike) is not counted as a refused stranger.
constexpr bool hostile(Admission a) noexcept {
    return a != Admission::Admit && a != Admission::LostRace;
}

}  // namespace oob::drtcp::core
