// The reliability channel's resting peers (channel.hpp, add_peer): a peer
// quiet both ways for window_idle_release gives up its state for a rest
// record that keeps its sequence numbers and counters, and gets its state
// back on its next use. A process that talked to every rank once (an
// all-to-all) and then waits in MPI holds about 100 B per peer instead of
// 1 KB (11 KB while the windows were still there).
#include <algorithm>
#include <array>

#include "channel_internal.hpp"
#include "log.hpp"

namespace pml::dr::core {
namespace {

using Field = std::uint64_t PeerCounters::*;

// What every healthy peer accrues: folded into rest_counters() when it rests.
constexpr std::array<Field, 14> kRoutine = {
    &PeerCounters::frames_submitted,   &PeerCounters::frames_acked,
    &PeerCounters::window_full,        &PeerCounters::acks_received,
    &PeerCounters::carried_acks,       &PeerCounters::dup_acks,
    &PeerCounters::stale_acks,         &PeerCounters::absences,
    &PeerCounters::stale_completions,  &PeerCounters::windows_released,
    &PeerCounters::unsent_after_leave, &PeerCounters::acks_sent,
    &PeerCounters::acks_carried,       &PeerCounters::acks_unsent,
};

// Whether anything but the routine and the traffic counters (which the
// rest record keeps) moved: resends, lost paths, probes, NACKs, ...
bool troubled(const PeerCounters& c) noexcept {
    PeerCounters t = c;
    for (const Field f : kRoutine)
        t.*f = 0;
    t.frames_sent = t.bytes_sent = t.frames_delivered = t.bytes_delivered = 0;
    return t != PeerCounters{};
}

}  // namespace

Micros ReliableChannel::Ops::rest_at(const Ch& ch, const Peer& p) noexcept {
    // Busy peers leave at the first test.
    if (p.tx.unreleased() != 0 || p.ack_due != kNever || p.rx_unacked != 0 || p.rx.ahead() != 0 ||
        !p.dirty.empty() || p.batch_due || !p.talked || !p.offered || p.state != PeerState::Alive ||
        p.leave != LeaveState::Staying || p.in_leaving || ch.leave_started_)
        return kNever;
    // What was learnt about a path that failed or went quiet is kept.
    for (const PathSlot& pa : p.paths)
        if (!(pa.state == PathState::Alive || pa.state == PathState::Standby) || pa.probe_id != 0)
            return kNever;
    return add_saturating(std::max({p.last_submit, p.last_progress, p.rx_latest}),
                          ch.params_.window_idle_release);
}

void ReliableChannel::rest_due(Micros now) {
    for (const PeerId id : rest_due_)
        if (Peer* p = find(id); p != nullptr && Ops::rest_at(*this, *p) <= now)
            rest(*p);
    rest_due_.clear();
}

void ReliableChannel::rest(Peer& p) {
    static_assert(sizeof(Resting) <= 56, "a rest record fits malloc's 64-byte chunk");
    auto r = std::make_unique<Resting>();
    r->next_seq = p.tx.next_seq();
    r->rx_cum = p.rx.cum();
    r->probe_ids = p.probe_ids;
    r->listed_active = p.active;
    Micros rtt = 0;
    for (const PathSlot& pa : p.paths)
        if (pa.rtt.has_sample())
            rtt = std::max(rtt, pa.rtt.srtt(recovery_));
    r->rtt_units = static_cast<std::uint16_t>(
        std::min<Micros>((rtt + kRestRttUnit - 1) / kRestRttUnit, UINT16_MAX));
    const PeerCounters& c = p.counters;
    r->frames_sent = c.frames_sent;
    r->bytes_sent = c.bytes_sent;
    r->frames_delivered = c.frames_delivered;
    r->bytes_delivered = c.bytes_delivered;
    if (troubled(c)) {
        r->all = std::make_unique<PeerCounters>(c);
    } else {
        for (const Field f : kRoutine)
            rest_counters_.folded.*f += c.*f;
    }
    ++rest_counters_.rests;
    if (p.indexed != kNever) {
        timers_.erase({p.indexed, p.id});
        timers_changed_ = true;
    }
    const PeerId id = p.id;
    logf(log_, plugin::common::LogLevel::Debug,
         "pml dr channel: peer %u rests (next seq %u, received up to %u)", id, r->next_seq,
         r->rx_cum);
    if (id >= resting_.size())
        resting_.resize(std::size_t{id} + 1);
    resting_[id] = std::move(r);
    peers_[id].reset();  // p is gone
}

void ReliableChannel::Ops::wake(Ch& ch, Peer& p) {
    if (!ch.resting(p.id))
        return;
    std::unique_ptr<Resting> r = std::move(ch.resting_[p.id]);
    // As add_peer() starts at first_seq: everything before is acknowledged.
    p.tx.restart(r->next_seq);
    p.rx = RxTracker(r->rx_cum);
    p.probe_ids = r->probe_ids;
    p.talked = true;  // still listed in talked_
    p.active = r->listed_active;
    p.counters = ch.rested_view(*r);
    ++ch.rest_counters_.wakes;
}

PeerCounters ReliableChannel::rested_view(const Resting& r) noexcept {
    if (r.all)
        return *r.all;
    PeerCounters c;
    c.frames_sent = r.frames_sent;
    c.bytes_sent = r.bytes_sent;
    c.frames_delivered = r.frames_delivered;
    c.bytes_delivered = r.bytes_delivered;
    return c;
}

PeerCounters ReliableChannel::counters_of(PeerId peer) const noexcept {
    if (const Peer* p = find(peer); p != nullptr)
        return p->counters;
    return resting(peer) ? rested_view(*resting_[peer]) : PeerCounters{};
}

}  // namespace pml::dr::core
