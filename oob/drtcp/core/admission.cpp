#include "admission.hpp"

namespace oob::drtcp::core {

std::string_view to_string(Admission a) noexcept {
    switch (a) {
        case Admission::Admit:
            return "admitted";
        case Admission::ForeignJob:
            return "not a daemon of this job";
        case Admission::UnknownDaemon:
            return "no such daemon in this job";
        case Admission::Self:
            return "claims our own name";
        case Admission::NotForUs:
            return "wants another process";
        case Admission::AlreadyConnected:
            return "already connected, no reconnect claimed";
        case Admission::LostRace:
            return "simultaneous connect: ours wins";
    }
    return "?";
}

Admission admit(const AdmissionFacts& f, const ProcName& from, const ProcName& to,
                bool reconnect) noexcept {
    if (from.jobid != f.me.jobid || !is_real(from))
        return Admission::ForeignJob;
    if (from == f.me)
        return Admission::Self;
    if (from.vpid >= f.num_daemons || !f.known)
        return Admission::UnknownDaemon;
    if (to != f.me)
        return Admission::NotForUs;
    if (f.connected && !reconnect)
        return Admission::AlreadyConnected;
    // Two connections at once: the one the smaller name opened wins (the
    // peer's state machine decides alike on the other side).
    if (f.connecting && !(from < f.me))
        return Admission::LostRace;
    return Admission::Admit;
}

}  // namespace oob::drtcp::core
