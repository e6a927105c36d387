// The reliability channel at finalize: the BYE exchange (channel.hpp,
// leave()). Ranks leave MPI_Finalize at different times; what is here makes
// sure neither side of a channel writes to the other once it may be gone.
#include <array>

#include "channel_internal.hpp"
#include "log.hpp"

namespace pml::dr::core {
namespace {

constexpr std::array<const char*, 4> kLeaveStateNames = {"staying", "bye_sent", "bye_received",
                                                         "left"};

const char* name(LeaveState s) noexcept {
    const auto i = static_cast<std::size_t>(s);
    return i < kLeaveStateNames.size() ? kLeaveStateNames[i] : "unknown";
}

bool bye_sent(LeaveState s) noexcept {
    return s == LeaveState::ByeSent || s == LeaveState::Left;
}

}  // namespace

std::string_view to_string(LeaveState s) noexcept {
    return name(s);
}

bool transition_allowed(LeaveState from, LeaveState to) noexcept {
    switch (from) {
        case LeaveState::Staying:
            return to == LeaveState::ByeSent || to == LeaveState::ByeReceived;
        case LeaveState::ByeSent:
        case LeaveState::ByeReceived:
            return to == LeaveState::Left;
        case LeaveState::Left:
            return false;  // terminal
    }
    return false;
}

void ReliableChannel::Ops::set_state(Ch& ch, Peer& p, LeaveState to, const char* reason) {
    if (!transition_allowed(p.leave, to)) {
        plugin::common::logf(ch.log_, plugin::common::LogLevel::Error,
                             "pml dr channel: peer %u: illegal %s -> %s (%s)", p.id, name(p.leave),
                             name(to), reason);
        return;
    }
    plugin::common::logf(ch.log_, plugin::common::LogLevel::Debug,
                         "pml dr channel: peer %u: %s -> %s (%s)", p.id, name(p.leave), name(to),
                         reason);
    p.leave = to;
}

void ReliableChannel::Ops::try_bye(Ch& ch, Peer& p, Micros now) {
    if (bye_sent(p.leave) || p.state == PeerState::Dead)
        return;
    settle(ch, p);
    if (p.ack_due != kNever)
        flush_acks(ch, p, now);
    if (p.tx.unacked() != 0)
        return;
    // An answer to our PROBE could come after we left: wait for it, also
    // when progress made the probe moot (the peer answers what it receives,
    // and would write to a process that is gone: over stock tcp that loses
    // our BYE, unread, with the connection). A probe of a failed path may
    // never be answered, and a moot one unanswered for a PTO is taken as lost.
    for (const PathSlot& pa : p.paths)
        if (pa.state != PathState::Failed &&
            (pa.probe_id != 0 ||
             (pa.probe_in_flight != 0 && now - pa.probe_sent < pto_of(ch, p, pa))))
            return;
    // After our ACKs, on the path they took, as flush_acks() chooses it.
    std::uint8_t slot = p.paths.find(p.ack_path);
    if (slot == kNoSlot || p.paths[slot].state == PathState::Failed)
        slot = p.paths.choose(kAnyPath, 0);
    // With no path left nothing could go anyway: as if it went.
    set_state(ch, p, p.leave == LeaveState::Staying ? LeaveState::ByeSent : LeaveState::Left,
              "our BYE");
    if (slot == kNoSlot)
        return;
    Output o;
    o.kind = Kind::Bye;
    o.peer = p.id;
    o.path = p.paths[slot].id;
    ch.queue_.push_back(o);
    ++p.counters.byes_sent;
}

void ReliableChannel::leave(Micros now) {
    if (leave_started_)
        return;
    leave_started_ = true;
    for (const PeerId id : talked_) {
        Peer* p = find_or_wake(id);  // a resting peer is owed our BYE too
        if (p == nullptr || !p->talked || p->in_leaving)
            continue;  // removed (a peer added again under its id is listed anew)
        p->in_leaving = true;
        leaving_.push_back(id);
    }
    (void)leaving(now);
}

std::size_t ReliableChannel::leaving(Micros now) {
    flush_acks(now);
    std::size_t keep = 0;
    // By index, as flush_acks() walks active_: the list is compacted in place.
    for (std::size_t i = 0; i < leaving_.size(); ++i) {  // NOLINT(modernize-loop-convert)
        const PeerId id = leaving_[i];
        Peer* p = find(id);
        if (p == nullptr || !p->in_leaving)
            continue;  // removed (and maybe re-added: then not leaving)
        if (p->state != PeerState::Dead) {
            Ops::try_bye(*this, *p, now);
            reschedule(id);
            if (!Ops::gone(*p)) {
                leaving_[keep++] = id;
                continue;
            }
        }
        p->in_leaving = false;
    }
    leaving_.resize(keep);
    flush_outputs();
    return keep;
}

void ReliableChannel::on_bye(PeerId peer, PathId path, Micros now) {
    (void)path;
    Peer* p = find_or_wake(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return;
    ++p->counters.byes_received;
    if (p->leave == LeaveState::Staying || p->leave == LeaveState::ByeSent)
        Ops::set_state(*this, *p,
                       p->leave == LeaveState::Staying ? LeaveState::ByeReceived : LeaveState::Left,
                       "the peer's BYE");
    Ops::mark_talked(*this, *p);
    if (!leave_started_)
        return;  // ours goes when we leave
    if (!p->in_leaving) {
        p->in_leaving = true;
        leaving_.push_back(peer);
    }
    Ops::try_bye(*this, *p, now);
    flush_outputs();
}

bool ReliableChannel::left(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr)
        return !resting(peer);  // a resting peer has not left: it owes a BYE
    return p->state == PeerState::Dead || Ops::gone(*p);
}

bool ReliableChannel::may_send(PeerId peer) noexcept {
    Peer* p = find(peer);
    if (p == nullptr)
        return false;
    if (Ops::gone(*p)) {
        ++p->counters.unsent_after_leave;
        return false;
    }
    return true;
}

}  // namespace pml::dr::core
