// The pml dr reliability channel, receiver side (see channel.hpp): duplicate
// suppression over a bounded window, and coalesced ACKs.
#include "channel.hpp"

#include <algorithm>

#include "channel_internal.hpp"

namespace pml::dr::core {

using plugin::common::seq_diff;
using plugin::common::seq_le;

// ---------------------------------------------------------------- helpers

// --- receiver

void ReliableChannel::Ops::mark_dirty(Ch& ch, Peer& p, std::uint32_t vfrag, Micros now) {
    if (std::find(p.dirty.begin(), p.dirty.end(), vfrag) != p.dirty.end())
        return;
    const std::size_t cap = ch.params_.window / kVfragFrames + 1;
    if (p.dirty.size() >= cap) {
        std::erase_if(p.dirty, [&p](std::uint32_t v) {
            return seq_le(static_cast<std::uint32_t>(v * kVfragFrames + kVfragFrames - 1),
                          p.rx.cum());
        });
        if (p.dirty.size() >= cap)
            flush_acks(ch, p, now);
    }
    p.dirty.push_back(vfrag);
}

void ReliableChannel::Ops::flush_acks(Ch& ch, Peer& p, Micros now, bool credit_answer) {
    p.ack_due = kNever;
    p.rx_unacked = 0;
    // Back on the path the data came on, unless we declared it failed.
    PathId via = p.ack_path;
    std::uint8_t slot = p.paths.find(via);
    if ((slot != kNoSlot && p.paths[slot].state == PathState::Failed) || via == kAnyPath) {
        slot = p.paths.choose(kAnyPath, 0);
        if (slot == kNoSlot) {
            ++p.counters.acks_unsent;
            p.dirty.clear();
            return;
        }
        via = p.paths[slot].id;
    }
    // How long the newest arrival waited for this ACK (the sender keeps it
    // out of its RTT sample), and our bound on that.
    const Micros delay = std::max<Micros>(now - p.rx_latest, 0);
    const auto send = [&](const AckInfo& a) {
        Output o;
        o.kind = Kind::Ack;
        o.peer = p.id;
        o.path = via;
        o.ack = a;
        o.ack.delay = delay;
        o.ack.max_delay = ch.params_.ack_delay;
        o.ack.credit_answer = credit_answer;
        ch.queue_.push_back(o);
        ++p.counters.acks_sent;
        if (slot != kNoSlot)
            ++p.paths[slot].counters.acks_sent;
    };
    bool any = false;
    for (const std::uint32_t v : p.dirty) {
        const auto base = static_cast<std::uint32_t>(v * kVfragFrames);
        if (seq_le(static_cast<std::uint32_t>(base + kVfragFrames - 1), p.rx.cum()))
            continue;
        std::uint64_t mask = 0;
        for (unsigned i = 0; i < kVfragFrames; ++i)
            if (p.rx.arrived(static_cast<std::uint32_t>(base + i), ch.params_.window))
                mask |= std::uint64_t{1} << i;
        send(AckInfo{p.rx.cum(), base, mask});
        any = true;
    }
    if (!any)
        send(AckInfo{p.rx.cum(), 0, 0});
    p.dirty.clear();
}

// ---------------------------------------------------------------- public API

void ReliableChannel::flush_acks(Micros now) {
    // Only peers with sequenced traffic since they were last found quiet can
    // owe or be owed anything; the others are not visited (finalize calls
    // this in a loop, and most peers of a large job never talked to us).
    std::size_t keep = 0;
    // By index: a flush may list a peer (active_ grows, and may move).
    for (std::size_t i = 0; i < active_.size(); ++i) {  // NOLINT(modernize-loop-convert)
        const PeerId id = active_[i];
        ++flush_visits_;
        Peer* p = find(id);
        if (p == nullptr && resting(id))
            resting_[id]->listed_active = false;
        if (p == nullptr || !p->active)
            continue;  // removed or resting (and maybe re-added: then listed again)
        if (p->state != PeerState::Dead) {
            Ops::settle(*this, *p);
            if (p->ack_due != kNever)
                Ops::flush_acks(*this, *p, now);
            reschedule(p->id);
            if (p->tx.unacked() != 0 || p->ack_due != kNever) {
                active_[keep++] = id;
                continue;
            }
        }
        p->active = false;
    }
    active_.resize(keep);
    flush_outputs();
}

void ReliableChannel::on_probe(PeerId peer, PathId path, std::uint32_t id, Micros now) {
    Peer* p = touch(peer);
    if (p == nullptr || p->state == PeerState::Dead || id == 0)
        return;
    // Our ACK first, on the probe's path (unless we failed it), then the
    // answer on the path it came by, whatever we think of that path: the
    // prober learns whether it works both ways and, FIFO, what arrived
    // before its probe.
    const PathId back = p->ack_path;
    const std::uint8_t back_slot = p->ack_slot;
    p->ack_path = path;
    p->ack_slot = p->paths.find(path);
    Ops::flush_acks(*this, *p, now);
    p->ack_path = back;
    p->ack_slot = back_slot;
    reschedule(peer);
    Output o;
    o.kind = Output::Kind::Probe;
    o.retransmit = true;  // the answer
    o.peer = peer;
    o.path = path;
    o.ref.seq = id;
    queue_.push_back(o);
    flush_outputs();
}

std::uint32_t ReliableChannel::ack_seq(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? p->rx.cum() : 0;
}

void ReliableChannel::ack_carried(PeerId peer, std::uint32_t ack_seq) noexcept {
    if (Peer* p = find(peer); p != nullptr)
        Ops::carried_by_frame(*p, ack_seq);
}

void ReliableChannel::Ops::carried_by_frame(Peer& p, std::uint32_t ack_seq) noexcept {
    // Arrivals out of order owe a selective ACK, which a data frame cannot carry.
    if (p.rx_unacked == 0 || ack_seq != p.rx.cum() || !p.dirty.empty())
        return;
    p.rx_unacked = 0;
    p.ack_due = kNever;  // its timer entry fires, finds nothing due and re-indexes
    ++p.counters.acks_carried;
}

bool ReliableChannel::is_fresh(PeerId peer, std::uint32_t seq) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead || seq == 0)
        return false;
    return p->rx.check(seq, params_.window) == RxTracker::Seen::New;
}

void ReliableChannel::on_damaged(PeerId peer, PathId path, std::uint32_t seq, Micros now) {
    (void)now;
    // A damaged copy of a frame we have, or one outside the window (the
    // sender cannot have sent it yet): nothing to ask for.
    if (touch(peer) == nullptr || !is_fresh(peer, seq))
        return;
    Peer* p = find(peer);
    // Back on the path it came on, unless we declared that one failed.
    std::uint8_t slot = p->paths.find(path);
    if (slot == kNoSlot || p->paths[slot].state == PathState::Failed)
        slot = p->paths.choose(kAnyPath, 0);
    if (slot == kNoSlot)
        return;
    Output o;
    o.kind = Output::Kind::Nack;
    o.peer = peer;
    o.path = p->paths[slot].id;
    o.ref.seq = seq;
    queue_.push_back(o);
    ++p->counters.nacks_sent;
    flush_outputs();
}

Verdict ReliableChannel::on_data(PeerId peer, PathId path, std::uint32_t seq, Micros now,
                                 std::size_t bytes, AckTiming timing) {
    Peer* p = touch(peer);
    if (p == nullptr)
        return Verdict::Drop;
    return Ops::data(*this, *p, path, seq, now, bytes, timing);
}

Verdict ReliableChannel::on_sequenced(PeerId peer, PathId path, std::uint32_t seq,
                                      std::uint32_t ack_seq, Micros now, std::size_t bytes,
                                      AckTiming timing) {
    Peer* p = touch(peer);
    if (p == nullptr)
        return Verdict::Drop;
    Ops::carried(*this, *p, ack_seq, now);
    return Ops::data(*this, *p, path, seq, now, bytes, timing);
}

void ReliableChannel::answer_credit(PeerId peer, Micros now) {
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return;
    Ops::flush_acks(*this, *p, now, true);
    reschedule(peer);
    flush_outputs();
}

[[gnu::always_inline]] inline Verdict ReliableChannel::Ops::data(Ch& ch, Peer& p, PathId path,
                                                                 std::uint32_t seq, Micros now,
                                                                 std::size_t bytes,
                                                                 AckTiming timing) {
    if (p.state == PeerState::Dead)
        return Verdict::Drop;
    // The usual arrival: the next seq, on the path the peer used last, with
    // nothing past a gap. No check below can refuse it.
    if (p.rx.is_next(seq) && path == p.ack_path) {
        p.rx.take_next();
        return delivered(ch, p, now, bytes, timing);
    }
    if (seq == 0) {
        ++p.counters.bad_seq;
        return Verdict::Drop;
    }
    const std::uint32_t window = ch.params_.window;
    const RxTracker::Seen seen = p.rx.check(seq, window);
    if (seen == RxTracker::Seen::TooFar) {
        ++p.counters.too_far_dropped;  // not acked: the sender resends later
        return Verdict::Drop;
    }
    if (path != p.ack_path) {
        p.ack_path = path;
        p.ack_slot = p.paths.find(path);
    }
    if (seen == RxTracker::Seen::Duplicate) {
        if (p.ack_slot != kNoSlot)
            p.paths[p.ack_slot].last_heard = now;  // the peer resends that way
        // Re-ack at once: the ACK that covered it may have been lost.
        ++p.counters.duplicates_dropped;
        if (seq_diff(seq, p.rx.cum()) > 0)
            mark_dirty(ch, p, seq / kVfragFrames, now);
        flush_acks(ch, p, now);
        ch.reschedule(p.id);
        ch.flush_outputs();
        return Verdict::Duplicate;
    }
    // The first arrival past a gap is acknowledged at once, as TCP answers
    // out-of-order data: its selective ACK lets the sender resend the hole
    // now instead of after ack_every frames or ack_delay. An arrival in
    // order needs no selective ACK (later arrivals already marked their
    // vfrags).
    const bool first_past_gap = p.rx.ahead() == 0;
    if (p.rx.record(seq, window)) {
        if (p.dirty.capacity() == 0)
            p.dirty.reserve(window / kVfragFrames + 1);
        mark_dirty(ch, p, seq / kVfragFrames, now);
        if (timing == AckTiming::Delayed && first_past_gap)
            timing = AckTiming::Now;
    }
    return delivered(ch, p, now, bytes, timing);
}

[[gnu::always_inline]] inline Verdict ReliableChannel::Ops::delivered(Ch& ch, Peer& p, Micros now,
                                                                      std::size_t bytes,
                                                                      AckTiming timing) {
    ++p.counters.frames_delivered;
    p.counters.bytes_delivered += bytes;
    mark_active(ch, p);
    p.rx_latest = now;
    if (p.ack_slot != kNoSlot) {
        PathSlot& pa = p.paths[p.ack_slot];
        pa.last_heard = now;  // the peer is alive that way
        ++pa.counters.frames_received;
        pa.counters.bytes_received += bytes;
    }
    ++p.rx_unacked;
    if (timing == AckTiming::Now ||
        (timing == AckTiming::Delayed && p.rx_unacked >= ch.params_.ack_every)) {
        flush_acks(ch, p, now);  // only clears deadlines
    } else if (p.ack_due == kNever) {
        p.ack_due = add_saturating(now, ch.params_.ack_delay);
        due_by(ch, p, p.ack_due);
    }
    ch.flush_outputs();
    return Verdict::Deliver;
}

}  // namespace pml::dr::core
