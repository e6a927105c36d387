// The pml dr reliability channel, sender side (see channel.hpp): submit,
// transmission and re-drive, ACK processing with NACK, the ACK timer and the
// watchdog, path failover and peer death.
#include "channel.hpp"

#include <algorithm>
#include <bit>
#include <cinttypes>

#include "channel_internal.hpp"

namespace pml::dr::core {

using plugin::common::logf;
using plugin::common::LogLevel;
using plugin::common::seq_gt;
using plugin::common::seq_le;
using plugin::common::seq_lt;

// ---------------------------------------------------------------- helpers

// --- sender

// One frame fewer under `slot`'s PTO timer; true when the path went idle while Suspect.
bool ReliableChannel::Ops::leave_path(Peer& p, std::uint8_t slot, Micros now) noexcept {
    PathSlot& pa = p.paths[slot];
    if (pa.outstanding == 0 || --pa.outstanding != 0)
        return false;
    pa.ack_deadline = kNever;
    // Idle while suspect (its frames were acknowledged over another path):
    // only a PROBE can tell whether it works.
    if (pa.state != PathState::Suspect || pa.probe_deadline != kNever)
        return false;
    pa.probe_deadline = now;
    return true;
}

// Makes `slot` the path whose ACK timer covers the unacked frame.
[[gnu::always_inline]] inline void ReliableChannel::Ops::move_frame(Ch& ch, Peer& p, TxFrame& f,
                                                                    std::uint8_t slot, Micros now) {
    if (f.path == slot)
        return;
    if (f.path != kNoSlot)
        leave_path(p, f.path, now);
    f.path = slot;
    PathSlot& pa = p.paths[slot];
    if (pa.outstanding++ == 0)
        pa.ack_deadline = add_saturating(now, pto_of(ch, p, pa));
}

// Hands the frame to the path. False (nothing sent) when that path still
// owes a completion for this frame: the BTL never holds two descriptors of
// one frame, and the timers will come back to it.
bool ReliableChannel::Ops::transmit(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now,
                                    bool retransmit) {
    if ((f.pending & slot_bit(slot)) != 0)
        return false;
    record_transmit(ch, p, f, slot, now, retransmit);
    queue_transmit(ch, p, f, slot, now, retransmit);
    return true;
}

void ReliableChannel::Ops::queue_transmit(Ch& ch, const Peer& p, const TxFrame& f,
                                          std::uint8_t slot, Micros now, bool retransmit) {
    Output o;
    o.kind = Kind::Transmit;
    o.retransmit = retransmit;
    o.peer = p.id;
    o.path = p.paths[slot].id;
    o.ref = FrameRef{f.seq, f.token};
    o.now = now;
    ch.queue_.push_back(o);
}

void ReliableChannel::Ops::owe_completion(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot,
                                          Micros now) {
    PathSlot& pa = p.paths[slot];
    f.pending |= slot_bit(slot);
    if (pa.local_pending++ == 0)
        pa.wd_deadline = add_saturating(now, backoff(ch.params_.watchdog_timeout, pa.wd_retries));
}

[[gnu::always_inline]] inline void ReliableChannel::Ops::record_transmit(
    Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now, bool retransmit, bool owed,
    bool cover) {
    if (f.tx_count > 0 && f.path != slot)
        f.mixed = true;
    if (f.state == FrameState::InFlight && cover)
        move_frame(ch, p, f, slot, now);
    PathSlot& pa = p.paths[slot];
    if (f.tx_count < 255)
        ++f.tx_count;
    f.last_tx = now;
    f.tx_order = ++p.tx_counter;
    if (owed)
        owe_completion(ch, p, f, slot, now);
    ++pa.counters.frames_sent;
    pa.counters.bytes_sent += f.bytes;
    ++p.counters.frames_sent;
    p.counters.bytes_sent += f.bytes;
    if (retransmit) {
        ++pa.counters.retransmits;
        ++p.counters.retransmits;
    }
}

void ReliableChannel::Ops::release_if_done(Ch& ch, Peer& p, TxFrame& f) {
    if (f.state != FrameState::Acked || f.pending != 0)
        return;
    release(ch, p, f, "released");
}

void ReliableChannel::Ops::release(Ch& ch, Peer& p, TxFrame& f, const char* reason) {
    set_state(ch, p, f, FrameState::Free, reason);
    p.tx.released_one();
    ch.released_.emplace_back(p.id, f.token);
}

void ReliableChannel::Ops::ack_frame(Ch& ch, Peer& p, std::uint32_t seq, AckScan& scan) {
    TxFrame& f = p.tx.at(seq);
    if (f.seq != seq || f.state != FrameState::InFlight)
        return;
    p.tx.acked_one();
    ++p.counters.frames_acked;
    if (f.path != kNoSlot) {
        scan.probe_due |= leave_path(p, f.path, scan.now);
        // A frame sent on several paths says nothing about any one of them.
        // A resent frame acknowledged sooner than the path's minimum RTT
        // after its resend was answered for an earlier transmission
        // (RFC 8985 §6.1): its latest transmission order would declare
        // lost frames that are merely behind it.
        const bool ambiguous =
            f.tx_count > 1 && scan.now - f.last_tx < p.paths[f.path].rtt.min_rtt();
        if (!f.mixed && !ambiguous) {
            const std::uint32_t bit = slot_bit(f.path);
            if ((scan.progressed & bit) == 0) {
                scan.progressed |= bit;
                scan.max_tx[f.path] = f.tx_order;
            } else {
                scan.max_tx[f.path] = std::max(scan.max_tx[f.path], f.tx_order);
            }
            if (f.tx_count == 1 && f.tx_order > scan.sample_order) {
                scan.sample_order = f.tx_order;
                scan.sample_slot = f.path;
                scan.sample_sent = f.last_tx;
            }
        }
    }
    if (!scan.any || seq_gt(seq, scan.highest))
        scan.highest = seq;
    scan.any = true;
    if (f.pending != 0) {  // a BTL still holds it: released on its completion
        set_state(ch, p, f, FrameState::Acked, "acknowledged");
        return;
    }
    release(ch, p, f, "acknowledged and released");
}

ReliableChannel::Ops::AckCheck ReliableChannel::Ops::check_ack(const Peer& p,
                                                               const AckInfo& a) noexcept {
    if (seq_lt(a.cum_seq, p.tx.cum_acked()))
        return AckCheck::Stale;
    if (!seq_lt(a.cum_seq, p.tx.next_seq()))
        return AckCheck::Bad;  // beyond anything sent
    if (a.sack_mask == 0)
        return a.sack_base == 0 ? AckCheck::Ok : AckCheck::Bad;
    if (a.sack_base % kVfragFrames != 0)
        return AckCheck::Bad;
    for (std::uint64_t bits = a.sack_mask; bits != 0; bits &= bits - 1) {
        const auto s = static_cast<std::uint32_t>(a.sack_base + std::countr_zero(bits));
        if (seq_le(s, a.cum_seq))
            continue;  // covered by cum
        if (s == 0 || !seq_lt(s, p.tx.next_seq()))
            return AckCheck::Bad;
    }
    return AckCheck::Ok;
}

// Path failed: forget its owed completions, re-drive its unacked frames on
// the next live path; none left -> the peer is dead.
void ReliableChannel::Ops::fail_path(Ch& ch, Peer& p, std::uint8_t slot, Micros now,
                                     const char* reason) {
    PathSlot& pa = p.paths[slot];
    if (pa.state == PathState::Failed || p.state == PeerState::Dead)
        return;
    settle(ch, p);  // what the peer already has is not re-driven
    set_state(ch, p, pa, PathState::Failed, reason);
    ++pa.counters.failures;
    ++p.counters.paths_lost;
    pa.ack_deadline = kNever;
    pa.wd_deadline = kNever;
    pa.pto_count = 0;
    pa.wd_retries = 0;
    pa.local_pending = 0;
    // Probed from now on, to be taken back once it answers.
    pa.probe_id = 0;
    pa.probe_attempts = 0;
    pa.last_probe = now;  // traffic after this keeps the probes going
    pa.probe_deadline = add_saturating(now, recovery::probe_interval(ch.recovery_, 0));
    emit(ch, Kind::PathFailed, p.id, pa.id);

    const std::uint32_t bit = slot_bit(slot);
    std::uint8_t target = p.paths.choose(kAnyPath, std::size_t{slot} + 1);
    if (target == kNoSlot)
        target = promote_standby(ch, p);
    bool moved = false;
    for (std::uint32_t s = p.tx.una(); s != p.tx.next_seq(); s = seq_after(s)) {
        TxFrame& f = p.tx.at(s);
        if (f.state == FrameState::Free)
            continue;
        f.pending &= ~bit;
        if (f.state == FrameState::Acked) {
            release_if_done(ch, p, f);
            continue;
        }
        if (f.path != slot || target == kNoSlot)
            continue;
        ++pa.counters.redriven;
        moved = true;
        std::uint8_t to = target;
        if ((f.pending & slot_bit(to)) != 0) {
            const std::uint8_t other = p.paths.choose(kAnyPath, std::size_t{slot} + 1, f.pending);
            if (other != kNoSlot)
                to = other;
        }
        if (transmit(ch, p, f, to, now, true))
            ++p.counters.failover_retransmits;
        else
            move_frame(ch, p, f, to, now);
    }
    pa.outstanding = 0;
    if (moved)
        ++p.counters.failovers;
    if (target == kNoSlot) {
        kill(ch, p, "no path left");
        return;
    }
    p.tx.advance_una();
}

// The peer is dead: report every frame, stop every timer.
void ReliableChannel::Ops::kill(Ch& ch, Peer& p, const char* reason) {
    if (!set_state(ch, p, PeerState::Dead, reason))
        return;
    for (std::uint32_t s = p.tx.una(); s != p.tx.next_seq(); s = seq_after(s)) {
        TxFrame& f = p.tx.at(s);
        if (f.state == FrameState::InFlight) {
            ++p.counters.frames_abandoned;
            emit(ch, Kind::Abandoned, p.id, 0, f.token);
        } else if (f.state == FrameState::Acked) {
            emit(ch, Kind::Acked, p.id, 0, f.token);
        }
        if (f.state != FrameState::Free)
            set_state(ch, p, f, FrameState::Free, reason);
        f.pending = 0;
    }
    p.tx.forget_all();
    for (PathSlot& pa : p.paths) {
        pa.ack_deadline = kNever;
        pa.wd_deadline = kNever;
        pa.probe_deadline = kNever;
        pa.outstanding = 0;
        pa.local_pending = 0;
    }
    p.ack_due = kNever;
    p.dirty.clear();
    p.rx_unacked = 0;
    emit(ch, Kind::PeerDead, p.id);
}

bool ReliableChannel::Ops::count_expiry(Ch& ch, Peer& p, std::uint8_t slot, Micros now) {
    PathSlot& pa = p.paths[slot];
    if (pa.pto_count < 64)
        ++pa.pto_count;
    if (pa.pto_count <= ch.params_.ack_retries)
        return false;
    // The peer answered elsewhere since the previous probe, this path did
    // not: the peer is alive and this path does not reach it.
    if (p.paths.heard_since(slot, pa.last_probe)) {
        fail_path(ch, p, slot, now, "probes unanswered, the peer answers on another path");
        return true;
    }
    // Silent on every path: a peer computing outside MPI sounds the same as
    // a dead network. The path stays, probing at the longest back-off;
    // peer_dead_timeout decides about the peer.
    ++pa.counters.silent_expiries;
    ++p.counters.silent_expiries;
    return false;
}

// A sample of a frame sent before this process's latest absence, or one
// whose ACK the peer says it held more than a PTO past its bound (it was
// away), measures absences, not the network: not taken.
void ReliableChannel::Ops::rtt_sample(Ch& ch, const Peer& p, PathSlot& pa, Micros sent, Micros now,
                                      Micros ack_delay) {
    if (sent < p.back_at || ack_delay > add_saturating(p.peer_max_ack_delay, pto_of(ch, p, pa)))
        return;
    pa.rtt.sample(now - sent, ack_delay, p.peer_max_ack_delay);
    ++pa.counters.rtt_samples;
    pa.counters.srtt = pa.rtt.srtt(ch.recovery_);
    pa.counters.rttvar = pa.rtt.rttvar(ch.recovery_);
    pa.counters.min_rtt = pa.rtt.min_rtt();
}

// The PTO timer of `slot` expired: probe with its oldest unacked frame.
void ReliableChannel::Ops::ack_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now) {
    PathSlot& pa = p.paths[slot];
    if (pa.outstanding == 0) {
        pa.ack_deadline = kNever;
        return;
    }
    // The frame the timer covers that went out first. A BTL may still hold
    // it (a socket that stopped draining): it cannot go on this path again,
    // but it can go elsewhere.
    TxFrame* oldest = nullptr;
    for (std::uint32_t s = p.tx.una(); s != p.tx.next_seq(); s = seq_after(s)) {
        TxFrame& f = p.tx.at(s);
        if (f.state == FrameState::InFlight && f.path == slot &&
            (oldest == nullptr || f.last_tx < oldest->last_tx))
            oldest = &f;
    }
    if (oldest == nullptr) {  // the count is off: nothing to wait for
        pa.outstanding = 0;
        pa.ack_deadline = kNever;
        return;
    }
    const Micros due = add_saturating(oldest->last_tx, pto_of(ch, p, pa));
    if (due > now) {  // progress restarted it: not an expiry
        pa.ack_deadline = due;
        return;
    }
    ++pa.counters.ack_timeouts;
    ++p.counters.ack_timeouts;
    if (count_expiry(ch, p, slot, now))
        return;
    refresh(ch, p, pa, "probe timeout");
    // No path is alive any more: the failed ones are probed again from the
    // shortest interval, since one of them may be all that is left.
    if (!p.paths.any_alive())
        for (PathSlot& o : p.paths)
            if (o.state == PathState::Failed && o.probe_attempts > 0) {
                o.probe_attempts = 0;
                o.probe_deadline = std::min(o.probe_deadline, now);
                due_by(ch, p, now);
            }
    // A PROBE, not data: a peer that merely did not call MPI for a while
    // (computing, descheduled) costs a header, not a resend. Its answer
    // comes after the peer's ACK on the same path (FIFO), so the frames
    // sent before it that are still unacknowledged then were lost
    // (on_probe_ack resends them).
    send_probe(ch, p, pa, now);
    const std::uint32_t bit = slot_bit(slot);
    const bool held = (oldest->pending & bit) != 0;  // by this path's BTL
    // From the second expiry (or when this path's BTL still holds the
    // frame) a copy goes on another path too: an answer there tells a
    // dead path from a silent peer, and the data gets through meanwhile.
    if (pa.pto_count >= 2 || held) {
        const std::uint8_t alt =
            p.paths.choose(kAnyPath, std::size_t{slot} + 1, bit | oldest->pending);
        if (alt != kNoSlot) {
            record_transmit(ch, p, *oldest, alt, now, true, true, false);
            queue_transmit(ch, p, *oldest, alt, now, true);
            ++p.counters.probe_retransmits;
            ch.timers_changed_ = true;  // its watchdog
        }
    }
    pa.ack_deadline = add_saturating(now, pto_of(ch, p, pa));
}

// A PROBE went unanswered (Suspect: counts as a PTO expiry), or the next
// re-admission probe of a Failed path is due.
void ReliableChannel::Ops::probe_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now) {
    PathSlot& pa = p.paths[slot];
    if (pa.state != PathState::Alive && p.tx.unacked() == 0 && p.last_submit <= pa.last_probe) {
        // Nothing sent since the last probe and nothing to deliver: which
        // paths work can wait for the next frame (and an idle or silent
        // peer is not probed forever).
        pa.probe_deadline = kNever;
        pa.probe_id = 0;
        p.probes_paused = true;
        return;
    }
    switch (pa.state) {
        case PathState::Alive:
        case PathState::Standby:  // not in use: nothing to learn
            pa.probe_deadline = kNever;
            pa.probe_id = 0;
            return;
        case PathState::Suspect:
            if (pa.outstanding > 0) {  // frames again: their PTO timer does the probing
                pa.probe_deadline = kNever;
                pa.probe_id = 0;
                return;
            }
            if (pa.probe_id != 0 && count_expiry(ch, p, slot, now))  // unanswered
                return;
            send_probe(ch, p, pa, now);
            pa.probe_deadline = add_saturating(now, pto_of(ch, p, pa));
            return;
        case PathState::Failed:
            send_probe(ch, p, pa, now);
            if (pa.probe_attempts < 64)
                ++pa.probe_attempts;
            pa.probe_deadline =
                add_saturating(now, recovery::probe_interval(ch.recovery_, pa.probe_attempts));
            return;
    }
}

void ReliableChannel::Ops::resume_probes(Ch& ch, Peer& p, Micros now) {
    p.probes_paused = false;
    for (PathSlot& pa : p.paths) {
        if (pa.probe_deadline != kNever)
            continue;
        Micros d = kNever;
        if (pa.state == PathState::Failed)
            d = std::max(now, add_saturating(pa.last_probe, recovery::probe_interval(
                                                                ch.recovery_, pa.probe_attempts)));
        else if (pa.state == PathState::Suspect && pa.outstanding == 0)
            d = now;
        pa.probe_deadline = d;
        due_by(ch, p, d);
    }
}

void ReliableChannel::Ops::send_probe(Ch& ch, Peer& p, PathSlot& pa, Micros now) {
    if (++p.probe_ids == 0)
        p.probe_ids = 1;
    pa.probe_id = p.probe_ids;
    pa.probe_in_flight = pa.probe_id;
    pa.probe_order = p.tx_counter;
    pa.probe_sent = now;
    pa.last_probe = now;
    ++pa.counters.probes_sent;
    ++p.counters.probes_sent;
    Output o;
    o.kind = Kind::Probe;
    o.peer = p.id;
    o.path = pa.id;
    o.ref.seq = pa.probe_id;
    ch.queue_.push_back(o);
}

void ReliableChannel::Ops::watchdog_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now) {
    PathSlot& pa = p.paths[slot];
    if (pa.local_pending == 0) {
        pa.wd_deadline = kNever;
        return;
    }
    ++pa.wd_retries;
    ++pa.counters.watchdog_timeouts;
    ++p.counters.watchdog_timeouts;
    if (pa.wd_retries > ch.params_.watchdog_retries) {
        fail_path(ch, p, slot, now, "watchdog retries exhausted");
        return;
    }
    refresh(ch, p, pa, "watchdog expired");
    pa.wd_deadline = add_saturating(now, backoff(ch.params_.watchdog_timeout, pa.wd_retries));
}

// ---------------------------------------------------------------- public API

// A new frame in the window, transmitted on `slot` (submit, submit_on).
[[gnu::always_inline]] inline std::uint32_t ReliableChannel::Ops::add_frame(
    Ch& ch, Peer& p, std::uint8_t slot, FrameToken token, Micros now, std::size_t bytes,
    bool owed) {
    const bool first_unacked = p.tx.unacked() == 0;
    // The ring is allocated with the first frame (again after an idle period).
    const std::uint32_t seq = p.tx.add(
        ch.params_.window,
        TxFrame{.token = token,
                .bytes = static_cast<std::uint32_t>(std::min<std::size_t>(bytes, UINT32_MAX))});
    TxFrame& f = p.tx.at(seq);
    set_state(ch, p, f, FrameState::InFlight, "submitted");
    mark_active(ch, p);
    p.last_submit = now;
    if (first_unacked) {
        p.last_progress = now;
        if (p.probes_paused)
            resume_probes(ch, p, now);
    }
    ++p.counters.frames_submitted;
    record_transmit(ch, p, f, slot, now, false, owed);
    // What this may have armed: the path's ACK timer and watchdog, and the
    // peer-death clock, which starts with the first unacknowledged frame
    // (for later ones the peer is indexed no later than it already: its
    // inputs, last_progress and back_at, only move forward).
    const PathSlot& pa = p.paths[slot];
    due_by(ch, p,
           std::min({pa.ack_deadline, owed ? pa.wd_deadline : kNever,
                     first_unacked ? dead_at(ch, p) : kNever}));
    return seq;
}

// Whether a new frame fits the peer's window (add_frame allocates it on
// first use: an unallocated window holds nothing).
bool ReliableChannel::Ops::window_room(Ch& ch, Peer& p) {
    if (!p.tx.allocated() ||
        static_cast<std::uint32_t>(p.tx.next_seq() - p.tx.una()) < ch.params_.window)
        return true;
    settle(ch, p);
    if (static_cast<std::uint32_t>(p.tx.next_seq() - p.tx.una()) < ch.params_.window)
        return true;
    ++p.counters.window_full;
    return false;
}

SubmitResult ReliableChannel::submit(PeerId peer, FrameToken token, Micros now, std::size_t bytes,
                                     PathId hint) {
    Peer* p = touch(peer);
    if (p == nullptr)
        return {SubmitStatus::UnknownPeer, 0};
    if (p->state == PeerState::Dead)
        return {SubmitStatus::PeerDead, 0};
    const std::uint8_t slot = p->paths.choose(hint, p->rr);
    if (slot == kNoSlot)
        return {SubmitStatus::NoPath, 0};
    if (!Ops::window_room(*this, *p))
        return {SubmitStatus::WindowFull, 0};
    if (hint == kAnyPath || p->paths[slot].id != hint)
        p->rr = std::size_t{slot} + 1;
    const std::uint32_t seq = Ops::add_frame(*this, *p, slot, token, now, bytes, true);
    if (draining_) {  // a nested call: the outer drain hands it over
        Ops::queue_transmit(*this, *p, p->tx.at(seq), slot, now, false);
        return {SubmitStatus::Ok, seq};
    }
    const FrameRef ref{seq, token};
    // The state is consistent and nothing else is queued: hand the frame
    // over directly, then whatever the callback queued.
    draining_ = true;
    if (out_.transmit(peer, p->paths[slot].id, ref, false))
        Ops::sent_inline(*this, peer, slot, ref, now);
    draining_ = false;
    flush_outputs();
    return {SubmitStatus::Ok, seq};
}

SubmitCheck ReliableChannel::check_submit_on(PeerId peer, PathId path) {
    Peer* p = touch(peer);
    if (p == nullptr)
        return {SubmitStatus::UnknownPeer, 0};
    if (p->state == PeerState::Dead)
        return {SubmitStatus::PeerDead, 0};
    const std::uint8_t slot = p->paths.find(path);
    if (slot == kNoSlot || !p->paths.preferred(slot))
        return {SubmitStatus::NoPath, 0};
    if (!Ops::window_room(*this, *p))
        return {SubmitStatus::WindowFull, 0};
    return {SubmitStatus::Ok, p->tx.next_seq(), p->rx.cum(), slot};
}

SubmitResult ReliableChannel::submit_checked(PeerId peer, PathId path, const SubmitCheck& check,
                                             FrameToken token, Micros now, std::size_t bytes) {
    Peer* p = find(peer);
    if (!check.ok() || p == nullptr || p->tx.next_seq() != check.seq) {
        const SubmitResult r = submit_on(peer, path, token, now, bytes);
        if (check.ok())  // the frame went with check.ack
            ack_carried(peer, check.ack);
        return r;
    }
    const std::uint32_t seq = Ops::add_frame(*this, *p, check.slot, token, now, bytes, false);
    Ops::carried_by_frame(*p, check.ack);
    return {SubmitStatus::Ok, seq};
}

SubmitResult ReliableChannel::submit_on(PeerId peer, PathId path, FrameToken token, Micros now,
                                        std::size_t bytes) {
    const SubmitCheck check = check_submit_on(peer, path);
    if (!check.ok())
        return {check.status, 0};
    return {SubmitStatus::Ok,
            Ops::add_frame(*this, *find(peer), check.slot, token, now, bytes, false)};
}

void ReliableChannel::expect_completion(PeerId peer, PathId path, FrameRef ref, Micros now) {
    Peer* p = find(peer);
    if (p == nullptr || !p->tx.allocated())
        return;
    const std::uint8_t slot = p->paths.find(path);
    TxFrame& f = p->tx.at(ref.seq);
    if (slot == kNoSlot || f.state == FrameState::Free || f.seq != ref.seq ||
        f.token != ref.token || (f.pending & slot_bit(slot)) != 0)
        return;  // not the transmission submit_on() recorded
    Ops::owe_completion(*this, *p, f, slot, now);
    Ops::due_by(*this, *p, p->paths[slot].wd_deadline);
}

void ReliableChannel::on_nack(PeerId peer, PathId path, std::uint32_t seq, Micros now) {
    (void)path;
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return;
    ++p->counters.nacks_received;
    if (!p->tx.allocated() || seq == 0) {
        ++p->counters.stale_nacks;
        return;
    }
    TxFrame& f = p->tx.at(seq);
    if (f.seq != seq || f.state != FrameState::InFlight) {
        ++p->counters.stale_nacks;  // acknowledged meanwhile (the NACK raced a resend)
        return;
    }
    // Its own path, unless that one failed or still holds this frame.
    std::uint8_t slot = f.path;
    if (slot == kNoSlot || p->paths[slot].state == PathState::Failed ||
        (f.pending & slot_bit(slot)) != 0)
        slot = p->paths.choose(kAnyPath, p->rr, f.pending);
    if (slot != kNoSlot && Ops::transmit(*this, *p, f, slot, now, true))
        ++p->counters.nack_retransmits;
    reschedule(peer);
    flush_outputs();
}

void ReliableChannel::on_probe_ack(PeerId peer, PathId path, std::uint32_t id, Micros now) {
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return;
    const std::uint8_t slot = p->paths.find(path);
    if (slot != kNoSlot && id != 0 && p->paths[slot].probe_in_flight == id)
        p->paths[slot].probe_in_flight = 0;
    if (slot == kNoSlot || id == 0 || p->paths[slot].probe_id != id) {
        ++p->counters.stale_probes;  // answered late, or never ours
        return;
    }
    PathSlot& pa = p->paths[slot];
    pa.probe_id = 0;
    pa.probe_deadline = kNever;
    // The peer's ACK, sent on this path before the answer, was applied: a
    // frame transmitted here before the probe and still unacknowledged was
    // lost (RACK with the probe as the delivered packet).
    if (pa.state != PathState::Failed && p->tx.allocated()) {
        const std::uint32_t bit = slot_bit(slot);
        for (std::uint32_t s = p->tx.una(); s != p->tx.next_seq(); s = seq_after(s)) {
            TxFrame& f = p->tx.at(s);
            if (f.state == FrameState::InFlight && f.path == slot && f.tx_order <= pa.probe_order &&
                (f.pending & bit) == 0 && Ops::transmit(*this, *p, f, slot, now, true))
                ++p->counters.timeout_retransmits;
        }
    }
    Ops::rtt_sample(*this, *p, pa, pa.probe_sent, now, 0);
    pa.pto_count = 0;
    pa.absence_deferred = false;
    pa.wd_retries = 0;
    pa.last_heard = now;
    if (pa.state == PathState::Failed) {
        // A standby path comes back as one while a better path works.
        const bool better =
            pa.standby && std::any_of(p->paths.begin(), p->paths.end(), [](const PathSlot& o) {
                return !o.standby && carries_traffic(o.state);
            });
        Ops::set_state(*this, *p, pa, better ? PathState::Standby : PathState::Alive,
                       "probe answered: re-admitted");
        pa.probe_attempts = 0;
        ++pa.counters.paths_readmitted;
        ++p->counters.paths_readmitted;
        if (!pa.standby)
            Ops::demote_standby(*this, *p);
        // A path that went silent past its retries while nothing else could
        // carry its frames (so nothing was heard elsewhere) fails now that
        // this one answers: its frames move here at once.
        for (std::size_t i = 0; i < p->paths.size() && p->state == PeerState::Alive; ++i)
            if (i != slot && p->paths[i].state == PathState::Suspect &&
                p->paths[i].pto_count > params_.ack_retries)
                Ops::fail_path(*this, *p, static_cast<std::uint8_t>(i), now,
                               "silent past its retries, and another path is back");
    } else {
        Ops::refresh(*this, *p, pa, "probe answered");
    }
    reschedule(peer);
    flush_outputs();
}

std::uint32_t ReliableChannel::next_seq(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? p->tx.next_seq() : 0;
}

bool ReliableChannel::can_submit(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return false;
    if (p->paths.choose(kAnyPath, 0) == kNoSlot)
        return false;
    return static_cast<std::uint32_t>(p->tx.next_seq() - p->tx.una()) < params_.window;
}

void ReliableChannel::on_local_complete(PeerId peer, PathId path, FrameRef ref, bool ok,
                                        Micros now) {
    Peer* p = find(peer);
    if (p == nullptr)
        return;
    Ops::complete(*this, *p, p->paths.find(path), ref, ok, now);
    flush_outputs();
}

void ReliableChannel::Ops::sent_inline(Ch& ch, PeerId peer, std::uint8_t slot, FrameRef ref,
                                       Micros now) {
    Peer* p = ch.find(peer);
    if (p == nullptr)
        return;
    const bool slot_ok = slot < p->paths.size() && p->tx.allocated();
    // The usual case: nothing happened since record_transmit() (one
    // transmission owed on a healthy path, the frame still in flight).
    // Undo what it armed for the completion; complete() would do exactly
    // this, and handles everything else.
    if (slot_ok && p->state == PeerState::Alive) {
        TxFrame& f = p->tx.at(ref.seq);
        PathSlot& pa = p->paths[slot];
        const std::uint32_t bit = slot_bit(slot);
        if (f.seq == ref.seq && f.token == ref.token && f.state == FrameState::InFlight &&
            (f.pending & bit) != 0 && pa.state == PathState::Alive && pa.local_pending == 1 &&
            pa.pto_count == 0 && pa.wd_retries == 0) {
            f.pending &= ~bit;
            pa.local_pending = 0;
            pa.wd_deadline = kNever;
            return;
        }
    }
    complete(ch, *p, slot_ok ? slot : kNoSlot, ref, true, now);
}

void ReliableChannel::Ops::complete(Ch& ch, Peer& p, std::uint8_t slot, FrameRef ref, bool ok,
                                    Micros now) {
    if (slot == kNoSlot || !p.tx.allocated()) {
        ++p.counters.stale_completions;
        return;
    }
    TxFrame& f = p.tx.at(ref.seq);
    const std::uint32_t bit = slot_bit(slot);
    if (f.state == FrameState::Free || f.seq != ref.seq || f.token != ref.token ||
        (f.pending & bit) == 0) {
        ++p.counters.stale_completions;  // e.g. the path failed in between
        return;
    }
    PathSlot& pa = p.paths[slot];
    f.pending &= ~bit;
    if (pa.local_pending > 0)
        --pa.local_pending;
    pa.wd_retries = 0;
    pa.wd_deadline =
        pa.local_pending > 0 ? add_saturating(now, ch.params_.watchdog_timeout) : kNever;
    if (ok) {
        refresh(ch, p, pa, "local completion");
    } else {
        ++pa.counters.local_errors;
        ++p.counters.local_errors;
        fail_path(ch, p, slot, now, "local completion with error");
    }
    release_if_done(ch, p, f);
    if (p.state == PeerState::Alive)
        p.tx.advance_una();
    if (ok)
        due_by(ch, p, pa.wd_deadline);  // the only deadline a success sets
    else
        ch.reschedule(p.id);
}

void ReliableChannel::on_ack(PeerId peer, PathId path, const AckInfo& ack, Micros now) {
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return;
    ++p->counters.acks_received;
    const std::uint8_t via = p->paths.find(path);
    if (via != kNoSlot)
        ++p->paths[via].counters.acks_received;
    switch (Ops::check_ack(*p, ack)) {
        case Ops::AckCheck::Ok:
            break;
        case Ops::AckCheck::Stale:
            ++p->counters.stale_acks;
            return;
        case Ops::AckCheck::Bad:
            ++p->counters.bad_acks;
            logf(log_, LogLevel::Debug,
                 "pml dr channel: peer %u: bad ack cum %u base %u mask %#" PRIx64 " (next %u)",
                 peer, ack.cum_seq, ack.sack_base, ack.sack_mask, p->tx.next_seq());
            return;
    }
    // A valid ACK: the peer is alive and reaches us that way.
    if (via != kNoSlot && p->paths[via].state != PathState::Failed)
        p->paths[via].last_heard = now;
    // Its bound on holding ACKs, within reason (a hostile value must not
    // stretch every timer).
    if (ack.max_delay > 0)
        p->peer_max_ack_delay = std::min<Micros>(ack.max_delay, params_.ack_timeout);
    if (!p->tx.allocated()) {  // nothing ever sent: a valid ACK can only repeat cum
        ++p->counters.dup_acks;
        return;
    }
    AckInfo a = ack;
    if (seq_gt(p->tx.carried(), a.cum_seq))
        a.cum_seq = p->tx.carried();  // what carried ack_seqs said, applied with it
    Ops::apply_ack(*this, *p, a, now, true);
}

void ReliableChannel::on_carried_ack(PeerId peer, PathId path, std::uint32_t ack_seq, Micros now) {
    (void)path;
    if (Peer* p = find(peer))
        Ops::carried(*this, *p, ack_seq, now);
}

void ReliableChannel::Ops::carried(Ch& ch, Peer& p, std::uint32_t ack_seq, Micros now) {
    if (p.state == PeerState::Dead || !seq_gt(ack_seq, p.tx.carried()))
        return;
    if (!seq_lt(ack_seq, p.tx.next_seq()) || !p.tx.allocated()) {
        ++p.counters.bad_acks;  // acknowledges what was never sent
        logf(ch.log_, LogLevel::Debug, "pml dr channel: peer %u: bad ack_seq %u (next %u)", p.id,
             ack_seq, p.tx.next_seq());
        return;
    }
    p.tx.carry(ack_seq);
    p.carried_at = now;
    // Applied in batches, as ACK frames are: releasing costs about the same
    // for one frame as for many. Timers, a full window, path failure and
    // flush_acks() settle the rest first.
    if (!p.batch_due &&
        static_cast<std::uint32_t>(ack_seq - p.tx.cum_acked()) >= ch.params_.settle_every) {
        p.batch_due = true;
        ch.batch_due_.push_back(p.id);
    }
}

void ReliableChannel::settle_batches() {
    // Taken off the list first: a release runs the glue, which may submit
    // and so call this again.
    while (!batch_due_.empty()) {
        const PeerId id = batch_due_.back();
        batch_due_.pop_back();
        if (Peer* p = find(id)) {
            p->batch_due = false;
            Ops::settle(*this, *p);
        }
    }
}

void ReliableChannel::settle_carried(PeerId peer) {
    if (Peer* p = find(peer))
        Ops::settle(*this, *p);
}

void ReliableChannel::Ops::settle(Ch& ch, Peer& p) {
    if (p.state != PeerState::Alive || !seq_gt(p.tx.carried(), p.tx.cum_acked()))
        return;
    ++p.counters.carried_acks;
    apply_ack(ch, p, AckInfo{p.tx.carried(), 0, 0}, p.carried_at, false);
}

// RACK (RFC 8985) over FIFO paths: an unacked frame last sent on a path
// before a frame the same path delivered is lost (a tail probe's ACK
// reveals the frames lost before it), for seqs in [from, end): as far as the
// acknowledgement saw the receiver's state (see apply_ack). Frames above
// the highest acknowledged seq that went out after every delivered one end
// the walk.
bool ReliableChannel::Ops::resend_lost(Ch& ch, Peer& p, const AckScan& scan, std::uint32_t from,
                                       std::uint32_t end, Micros now) {
    if (scan.progressed == 0)
        return false;
    std::uint64_t newest = 0;
    for (std::uint32_t bits = scan.progressed; bits != 0; bits &= bits - 1)
        newest = std::max(newest, scan.max_tx[std::countr_zero(bits)]);
    bool resent = false;
    for (std::uint32_t s = from; s != end && s != p.tx.next_seq(); s = seq_after(s)) {
        TxFrame& f = p.tx.at(s);
        if (f.seq != s || f.state != FrameState::InFlight)
            continue;
        if (seq_gt(s, scan.highest) && f.tx_count <= 1 && f.tx_order > newest)
            break;  // first sent after every delivered frame, and so are all later ones
        if (f.path == kNoSlot || (scan.progressed & slot_bit(f.path)) == 0 ||
            f.tx_order >= scan.max_tx[f.path])
            continue;
        if (transmit(ch, p, f, f.path, now, true)) {
            ++p.counters.nack_retransmits;
            resent = true;
        }
    }
    return resent;
}

void ReliableChannel::Ops::apply_ack(Ch& ch, Peer& p, const AckInfo& ack, Micros now,
                                     bool full_view) {
    AckScan scan;
    scan.now = now;
    for (std::uint32_t s = seq_after(p.tx.cum_acked()); seq_le(s, ack.cum_seq); s = seq_after(s))
        ack_frame(ch, p, s, scan);
    p.tx.ack_to(ack.cum_seq);
    // Only the set bits (in-order traffic sends none).
    for (std::uint64_t bits = ack.sack_mask; bits != 0; bits &= bits - 1) {
        const auto s = static_cast<std::uint32_t>(ack.sack_base + std::countr_zero(bits));
        if (seq_gt(s, ack.cum_seq))
            ack_frame(ch, p, s, scan);
    }
    if (!scan.any) {
        ++p.counters.dup_acks;
        return;
    }
    p.last_progress = now;
    p.absence_noted = false;
    if (scan.sample_slot != kNoSlot)
        rtt_sample(ch, p, p.paths[scan.sample_slot], scan.sample_sent, now, ack.delay);
    for (std::size_t i = 0; i < p.paths.size(); ++i) {
        if ((scan.progressed & slot_bit(static_cast<std::uint8_t>(i))) == 0)
            continue;
        PathSlot& pa = p.paths[i];
        if (pa.state == PathState::Failed)
            continue;
        pa.pto_count = 0;
        pa.absence_deferred = false;
        pa.last_heard = now;
        pa.probe_deadline = kNever;
        pa.probe_id = 0;
        pa.ack_deadline = pa.outstanding > 0 ? add_saturating(now, pto_of(ch, p, pa)) : kNever;
        refresh(ch, p, pa, "ack progress");
    }
    // How far the acknowledgement describes the receiver: an ACK frame
    // without a selective part says nothing arrived past cum_seq; one with
    // a selective part describes its own vfrag (others come in their own
    // ACK frames); a carried ack_seq only what is below it.
    std::uint32_t end = seq_after(scan.highest);
    if (full_view)
        end = ack.sack_mask == 0 ? p.tx.next_seq()
                                 : static_cast<std::uint32_t>(ack.sack_base + kVfragFrames);
    if (seq_lt(end, seq_after(scan.highest)))
        end = seq_after(scan.highest);
    const bool resent = resend_lost(ch, p, scan, seq_after(ack.cum_seq), end, now);
    p.tx.advance_una();
    if (resent || scan.probe_due) {
        ch.reschedule(p.id);
    } else {
        // Progress only restarted ACK timers (and the peer-death clock, later).
        for (std::size_t i = 0; i < p.paths.size(); ++i)
            if ((scan.progressed & slot_bit(static_cast<std::uint8_t>(i))) != 0)
                due_by(ch, p, p.paths[i].ack_deadline);
    }
    ch.flush_outputs();
}

}  // namespace pml::dr::core
