// The pml dr reliability channel (see channel.hpp for the protocol): names and
// transitions of the state machines, parameters, peers and paths, the output
// queue, timer dispatch and observation. The sender is in channel_send.cpp,
// the receiver in channel_recv.cpp.
#include "channel.hpp"

#include <algorithm>
#include <array>
#include <cinttypes>

#include "channel_internal.hpp"

namespace pml::dr::core {

using plugin::common::logf;
using plugin::common::LogLevel;

namespace {

// Name tables, indexed by the enumerators' values.
constexpr std::array<const char*, 4> kPathStateNames = {"alive", "suspect", "failed", "standby"};
constexpr std::array<const char*, 2> kPeerStateNames = {"alive", "dead"};
constexpr std::array<const char*, 3> kFrameStateNames = {"free", "in_flight", "acked"};
constexpr std::array<const char*, 3> kVerdictNames = {"deliver", "duplicate", "drop"};
constexpr std::array<const char*, 5> kSubmitStatusNames = {"ok", "window_full", "no_path",
                                                           "peer_dead", "unknown_peer"};

template <class Enum, std::size_t N>
const char* lookup(const std::array<const char*, N>& table, Enum e) noexcept {
    const auto i = static_cast<std::size_t>(e);
    return i < N ? table[i] : "unknown";
}
const char* name(PathState s) noexcept {
    return lookup(kPathStateNames, s);
}
const char* name(PeerState s) noexcept {
    return lookup(kPeerStateNames, s);
}
const char* name(FrameState s) noexcept {
    return lookup(kFrameStateNames, s);
}

}  // namespace

std::string_view to_string(PathState s) noexcept {
    return name(s);
}
std::string_view to_string(PeerState s) noexcept {
    return name(s);
}
std::string_view to_string(FrameState s) noexcept {
    return name(s);
}
std::string_view to_string(Verdict v) noexcept {
    return lookup(kVerdictNames, v);
}
std::string_view to_string(SubmitStatus s) noexcept {
    return lookup(kSubmitStatusNames, s);
}

bool transition_allowed(PathState from, PathState to) noexcept {
    switch (from) {
        case PathState::Alive:
            // Standby (also from Suspect): a promoted standby path once a
            // better one is back.
            return to == PathState::Suspect || to == PathState::Failed || to == PathState::Standby;
        case PathState::Suspect:
            return to == PathState::Alive || to == PathState::Failed || to == PathState::Standby;
        case PathState::Failed:
            return to == PathState::Alive || to == PathState::Standby;  // re-added by the glue
        case PathState::Standby:
            return to == PathState::Alive || to == PathState::Failed;  // promoted, or BTL error
    }
    return false;
}

bool transition_allowed(PeerState from, PeerState to) noexcept {
    switch (from) {
        case PeerState::Alive:
            return to == PeerState::Dead;
        case PeerState::Dead:
            return false;  // terminal
    }
    return false;
}

ChannelParams channel_params(const Config& config) noexcept {
    ChannelParams p;
    p.ack_timeout = config.ack_timeout;
    p.ack_delay = config.ack_delay;
    p.ack_retries = config.ack_retries;
    p.watchdog_timeout = config.watchdog_timeout;
    p.watchdog_retries = config.watchdog_retries;
    p.peer_dead_timeout = config.peer_dead_timeout;
    p.window = config.window;
    p.ack_every = std::max(p.settle_every, config.window / 4);
    p.probe_interval = config.probe_interval;
    p.probe_max = config.probe_max;
    return p;
}

recovery::Params recovery_params(const ChannelParams& params) noexcept {
    return recovery::Params{.initial_rtt = params.initial_rtt,
                            .granularity = params.granularity,
                            .max_pto = params.ack_timeout,
                            .fail_after = params.ack_retries,
                            .probe_initial = params.probe_interval,
                            .probe_max = params.probe_max};
}

std::string validate(const ChannelParams& p) {
    if (p.window < 64 || p.window > 4096 || (p.window & (p.window - 1)) != 0)
        return "channel window must be a power of two in 64..4096";
    if (p.ack_every < 1 || p.settle_every < 1)
        return "channel ack_every and settle_every must be at least 1";
    if (p.ack_delay < 0)
        return "channel ack_delay must not be negative";
    if (p.ack_timeout <= 0 || p.watchdog_timeout <= 0 || p.peer_dead_timeout <= 0 ||
        p.initial_rtt <= 0 || p.granularity <= 0 || p.probe_interval <= 0 || p.probe_max <= 0 ||
        p.window_idle_release <= 0)
        return "channel timeouts must be positive";
    if (p.max_paths < 1 || p.max_paths > kMaxPathsPerPeer)
        return "channel max_paths must be in 1..32";
    if (p.first_seq == 0)
        return "channel first_seq must not be 0";
    return {};
}

// ---------------------------------------------------------------- helpers

Micros ReliableChannel::Ops::pto_of(const Ch& ch, const Peer& p, const PathSlot& pa) noexcept {
    return recovery::pto(pa.rtt, ch.recovery_, p.peer_max_ack_delay, pa.pto_count);
}

void ReliableChannel::Ops::demote_standby(Ch& ch, Peer& p) {
    for (PathSlot& pa : p.paths)
        if (pa.standby && carries_traffic(pa.state))
            set_state(ch, p, pa, PathState::Standby, "a better path is back");
}

std::uint8_t ReliableChannel::Ops::promote_standby(Ch& ch, Peer& p) {
    for (std::size_t i = 0; i < p.paths.size(); ++i) {
        if (p.paths[i].state != PathState::Standby)
            continue;
        set_state(ch, p, p.paths[i], PathState::Alive, "standby promoted: no other path left");
        ++p.counters.standby_promotions;
        return static_cast<std::uint8_t>(i);
    }
    return kNoSlot;
}

// --- state machines

void ReliableChannel::Ops::set_state(Ch& ch, Peer& p, PathSlot& pa, PathState to,
                                     const char* reason) {
    if (pa.state == to)
        return;
    if (!transition_allowed(pa.state, to)) {
        logf(ch.log_, LogLevel::Error,
             "pml dr channel: peer %u path %" PRIu64 ": illegal %s -> %s (%s)", p.id, pa.id,
             name(pa.state), name(to), reason);
        return;
    }
    logf(ch.log_, LogLevel::Debug, "pml dr channel: peer %u path %" PRIu64 ": %s -> %s (%s)", p.id,
         pa.id, name(pa.state), name(to), reason);
    pa.state = to;
}

void ReliableChannel::Ops::illegal(Ch& ch, const Peer& p, const TxFrame& f, FrameState to,
                                   const char* reason) {
    logf(ch.log_, LogLevel::Error, "pml dr channel: peer %u seq %u: illegal %s -> %s (%s)", p.id,
         f.seq, name(f.state), name(to), reason);
}

void ReliableChannel::Ops::traced(Ch& ch, const Peer& p, const TxFrame& f, FrameState to,
                                  const char* reason) {
    logf(ch.log_, LogLevel::Trace, "pml dr channel: peer %u seq %u: %s -> %s (%s)", p.id, f.seq,
         name(f.state), name(to), reason);
}

bool ReliableChannel::Ops::set_state(Ch& ch, Peer& p, PeerState to, const char* reason) {
    if (!transition_allowed(p.state, to)) {
        logf(ch.log_, LogLevel::Error, "pml dr channel: peer %u: illegal %s -> %s (%s)", p.id,
             name(p.state), name(to), reason);
        return false;
    }
    logf(ch.log_, LogLevel::Info, "pml dr channel: peer %u: %s -> %s (%s)", p.id, name(p.state),
         name(to), reason);
    p.state = to;
    return true;
}

void ReliableChannel::Ops::refresh(Ch& ch, Peer& p, PathSlot& pa, const char* reason) {
    if (!carries_traffic(pa.state))
        return;
    const bool suspect = pa.pto_count > 0 || pa.wd_retries > 0;
    set_state(ch, p, pa, suspect ? PathState::Suspect : PathState::Alive, reason);
}

// --- timers

Micros ReliableChannel::Ops::deadline(const Ch& ch, const Peer& p) noexcept {
    if (p.state == PeerState::Dead)
        return kNever;
    Micros d = p.ack_due;
    for (const PathSlot& pa : p.paths) {
        d = std::min(d, pa.probe_deadline);  // Failed paths are probed too
        if (pa.state == PathState::Failed)
            continue;
        d = std::min({d, pa.ack_deadline, pa.wd_deadline});
    }
    if (p.tx.unacked() > 0)
        d = std::min(d, dead_at(ch, p));
    return std::min({d, window_release_at(ch, p), rest_at(ch, p)});
}

// Nothing acknowledged for peer_dead_timeout while this process listened:
// after an absence the peer gets one longest PTO to be heard again.
Micros ReliableChannel::Ops::dead_at(const Ch& ch, const Peer& p) noexcept {
    return std::max(add_saturating(p.last_progress, ch.params_.peer_dead_timeout),
                    add_saturating(p.back_at, ch.recovery_.max_pto));
}

Micros ReliableChannel::Ops::window_release_at(const Ch& ch, const Peer& p) noexcept {
    if (!p.tx.allocated() || p.tx.unreleased() != 0)
        return kNever;
    return add_saturating(std::max(p.last_submit, p.last_progress), ch.params_.window_idle_release);
}

void ReliableChannel::Ops::due_by(Ch& ch, Peer& p, Micros d) {
    if (d >= p.indexed)
        return;
    if (p.indexed != kNever)
        ch.timers_.erase({p.indexed, p.id});
    ch.timers_.insert({d, p.id});
    ch.timers_changed_ = true;
    p.indexed = d;
}

// Timers found more than a PTO after they fell due: this process was away
// from MPI (computing, descheduled), and what the peer sent meanwhile (its
// ACKs, answers to probes) may be waiting unread in the BTLs. A kernel's TCP
// runs its timers and reads its sockets while the application computes; an
// MPI process does neither. So a path's timers that fell due get one PTO from
// now instead of expiring, once until that path makes progress (a process
// polling slower than the PTO, or a path that went silent while the peer
// answers on another, still expires one PTO later); RTT samples spanning the
// absence are not taken, and peer death is judged one longest PTO after the
// return (back_at, set once until the peer's next ack progress).
void ReliableChannel::Ops::defer_after_absence(Ch& ch, Peer& p, Micros due, Micros now) {
    if (p.state != PeerState::Alive || due == kNever)
        return;
    Micros pto = kNever;
    for (const PathSlot& pa : p.paths)
        if (pa.state != PathState::Failed)
            pto = std::min(pto, pto_of(ch, p, pa));
    if (pto == kNever || now - due <= pto)
        return;
    if (!p.absence_noted) {
        p.absence_noted = true;
        p.back_at = now;
        ++p.counters.absences;
    }
    for (PathSlot& pa : p.paths) {
        if (pa.absence_deferred)
            continue;
        const Micros later = add_saturating(now, pto_of(ch, p, pa));
        for (Micros* d : {&pa.ack_deadline, &pa.wd_deadline, &pa.probe_deadline})
            if (*d <= now) {
                *d = later;
                pa.absence_deferred = true;
            }
    }
}

void ReliableChannel::Ops::fire(Ch& ch, Peer& p, Micros now) {
    settle(ch, p);  // frames the peer's traffic acknowledged are not late
    // The earliest of the peer's deadlines (its timer entry may be earlier:
    // reschedule() leaves entries that moved later).
    const Micros due = deadline(ch, p);
    if (p.ack_due <= now)
        flush_acks(ch, p, now);  // owed ACKs go, absent or not
    defer_after_absence(ch, p, due, now);
    for (std::size_t i = 0; i < p.paths.size() && p.state == PeerState::Alive; ++i) {
        const auto slot = static_cast<std::uint8_t>(i);
        if (p.paths[i].state != PathState::Failed && p.paths[i].wd_deadline <= now)
            watchdog_expired(ch, p, slot, now);
        if (p.state == PeerState::Alive && p.paths[i].state != PathState::Failed &&
            p.paths[i].ack_deadline <= now)
            ack_expired(ch, p, slot, now);
        if (p.state == PeerState::Alive && p.paths[i].probe_deadline <= now)
            probe_expired(ch, p, slot, now);
    }
    if (p.state == PeerState::Alive && p.tx.unacked() > 0 && dead_at(ch, p) <= now)
        kill(ch, p, "nothing acknowledged for peer_dead_timeout");
    // Every slot is free (una == next_seq): nothing in the window is state.
    if (window_release_at(ch, p) <= now) {
        p.tx.free_slots();
        ++p.counters.windows_released;
    }
    // After this visit's outputs (an ACK it flushed needs the peer).
    if (rest_at(ch, p) <= now)
        ch.rest_due_.push_back(p.id);
}

// ---------------------------------------------------------------- public API

ReliableChannel::ReliableChannel(const ChannelParams& params, ChannelOutput& out,
                                 plugin::common::LogSink& log)
    : params_(params), out_(out), log_(log), trace_(log.enabled(LogLevel::Trace)) {
    if (const std::string err = validate(params); !err.empty()) {
        logf(log_, LogLevel::Error, "pml dr channel: %s; using defaults", err.c_str());
        params_ = ChannelParams{};
    }
    recovery_ = recovery_params(params_);
}

ReliableChannel::~ReliableChannel() = default;

void ReliableChannel::reschedule(PeerId id) noexcept {
    Peer* p = find(id);
    const Micros d = p != nullptr ? Ops::deadline(*this, *p) : kNever;
    const Micros old = p != nullptr ? p->indexed : kNever;
    // Lazy: a deadline that moved later (or went away) keeps its earlier
    // entry, which fires, finds nothing due and re-indexes the peer. Most
    // calls move deadlines later, so the hot path touches no tree node.
    if (d == old || (old != kNever && (d == kNever || d > old)))
        return;
    if (old != kNever)
        timers_.erase({old, id});
    if (d != kNever)
        timers_.insert({d, id});
    timers_changed_ = true;
    if (p != nullptr)
        p->indexed = d;
}

void ReliableChannel::drain_outputs() {
    if (draining_)
        return;  // a nested call: the outer drain hands these over
    draining_ = true;
    struct Reset {
        ReliableChannel& ch;
        ~Reset() {
            ch.queue_.clear();
            ch.released_.clear();
            ch.draining_ = false;
        }
    } reset{*this};
    using Kind = Output::Kind;
    // By index: callbacks may append to both (which may reallocate).
    std::size_t i = 0;
    for (std::size_t r = 0; r < released_.size() || i < queue_.size();) {
        if (r < released_.size()) {
            const auto [peer, token] = released_[r++];
            out_.acked(peer, token);
            continue;
        }
        const Output o = queue_[i++];  // a copy: callbacks may append
        switch (o.kind) {
            case Kind::Transmit: {
                // Skip what became moot in the meantime (path failed, peer
                // gone, frame abandoned): its completion is no longer owed.
                Peer* p = find(o.peer);
                if (p == nullptr || !p->tx.allocated())
                    break;
                const std::uint8_t slot = p->paths.find(o.path);
                const TxFrame& f = p->tx.at(o.ref.seq);
                if (slot == kNoSlot || f.state == FrameState::Free || f.seq != o.ref.seq ||
                    f.token != o.ref.token || (f.pending & slot_bit(slot)) == 0)
                    break;
                // Done at once: as in submit(). The callback may have changed
                // the peer, so slot is taken before and checked after.
                if (out_.transmit(o.peer, o.path, o.ref, o.retransmit))
                    Ops::sent_inline(*this, o.peer, slot, o.ref, o.now);
                break;
            }
            case Kind::Ack:
                if (may_send(o.peer)) {
                    AckInfo ack = o.ack;  // the credit as it is when the ACK leaves
                    if (ack_credit_ != nullptr)
                        ack.released_total = ack_credit_->report_credit(o.peer);
                    out_.send_ack(o.peer, o.path, ack);
                }
                break;
            case Kind::Nack:
                if (may_send(o.peer))
                    out_.send_nack(o.peer, o.path, o.ref.seq);
                break;
            case Kind::Probe:
                if (may_send(o.peer))
                    out_.send_probe(o.peer, o.path, o.ref.seq, o.retransmit);
                break;
            case Kind::Bye:
                if (find(o.peer) != nullptr)
                    out_.send_bye(o.peer, o.path);
                break;
            case Kind::PathFailed:
                out_.path_failed(o.peer, o.path);
                break;
            case Kind::PeerDead:
                out_.peer_dead(o.peer);
                break;
            case Kind::Acked:
                out_.acked(o.peer, o.ref.token);
                break;
            case Kind::Abandoned:
                out_.abandoned(o.peer, o.ref.token);
                break;
        }
    }
}

void ReliableChannel::add_peer(PeerId peer) {
    if (peer >= peers_.size())
        peers_.resize(std::size_t{peer} + 1);
    if (peers_[peer])
        return;
    auto p = std::make_unique<Peer>();
    p->id = peer;
    p->tx.restart(params_.first_seq);
    p->rx = RxTracker(p->tx.cum_acked());
    p->peer_max_ack_delay = params_.ack_delay;  // until its ACK frames say otherwise
    Ops::wake(*this, *p);
    // No slots reserved: most peers have one path (issue 27: 8 reserved slots
    // were 1.3 KB per process of the job). Slots are addressed by index, never
    // held across add_path, so growing the vector moves nothing that matters.
    peers_[peer] = std::move(p);
}

void ReliableChannel::remove_peer(PeerId peer) {
    if (resting(peer)) {
        if (resting_[peer]->listed_active)
            std::erase(active_, peer);
        resting_[peer].reset();
    }
    Peer* p = find(peer);
    if (p == nullptr)
        return;
    if (p->tx.allocated()) {
        Ops::settle(*this, *p);
        for (std::uint32_t s = p->tx.una(); s != p->tx.next_seq(); s = seq_after(s)) {
            const TxFrame& f = p->tx.at(s);
            if (f.state == FrameState::InFlight) {
                Ops::emit(*this, Output::Kind::Abandoned, peer, 0, f.token);
            } else if (f.state == FrameState::Acked) {
                Ops::emit(*this, Output::Kind::Acked, peer, 0, f.token);
            }
        }
    }
    if (p->indexed != kNever) {
        timers_.erase({p->indexed, peer});
        timers_changed_ = true;
    }
    if (p->active)
        std::erase(active_, peer);  // a peer added again under this id starts unlisted
    peers_[peer].reset();
    flush_outputs();
}

bool ReliableChannel::add_path(PeerId peer, PathId path, bool standby) {
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead || path == kAnyPath)
        return false;
    // A standby path with nothing better to stand by for is a live one.
    const PathState as =
        standby && p->paths.choose(kAnyPath, 0) != kNoSlot ? PathState::Standby : PathState::Alive;
    if (const std::uint8_t slot = p->paths.find(path); slot != kNoSlot) {
        PathSlot& pa = p->paths[slot];
        if (!carries_traffic(pa.state)) {
            Ops::set_state(*this, *p, pa, as, "re-added");
            if (as == PathState::Alive && !pa.standby)
                Ops::demote_standby(*this, *p);
            pa.probe_deadline = kNever;
            pa.probe_id = 0;
            reschedule(peer);
        }
        return true;
    }
    if (p->paths.size() >= params_.max_paths) {
        logf(log_, LogLevel::Warn,
             "pml dr channel: peer %u: more than %u paths, %" PRIu64 " unused", peer,
             params_.max_paths, path);
        return false;
    }
    PathSlot pa;
    pa.id = path;
    pa.state = as;
    pa.standby = standby;
    p->paths.add(pa);
    p->ack_slot = p->paths.find(p->ack_path);  // data may have come on it already
    return true;
}

bool ReliableChannel::ensure_peer(PeerId peer) {
    return touch(peer) != nullptr;
}

ReliableChannel::Peer* ReliableChannel::make_offered(PeerId peer) {
    std::vector<PathOffer> offers;
    out_.offer_paths(peer, offers);
    if (offers.empty())
        return nullptr;
    const Micros rtt = resting(peer) ? resting_[peer]->rtt_units * kRestRttUnit : 0;
    add_peer(peer);  // a resting peer wakes
    peers_[peer]->offered = true;
    // Paths the BML chose first: a standby path is one only beside another.
    std::stable_partition(offers.begin(), offers.end(),
                          [](const PathOffer& o) { return !o.standby; });
    for (const PathOffer& o : offers)
        (void)add_path(peer, o.path, o.standby);
    Peer* p = find(peer);
    if (rtt > 0)  // what it had learnt before it rested, as its first sample
        for (PathSlot& pa : p->paths)
            pa.rtt.sample(rtt, 0, 0);
    return p;
}

void ReliableChannel::remove_path_everywhere(PathId path, Micros now) {
    for (PeerId peer = 0; peer < peers_.size(); ++peer)
        if (peers_[peer] != nullptr)
            remove_path(peer, path, now);
}

void ReliableChannel::remove_path(PeerId peer, PathId path, Micros now) {
    Peer* p = touch(peer);
    if (p == nullptr)
        return;
    const std::uint8_t slot = p->paths.find(path);
    if (slot == kNoSlot)
        return;
    Ops::fail_path(*this, *p, slot, now, "removed (BTL error)");
    reschedule(peer);
    flush_outputs();
}

void ReliableChannel::declare_dead(PeerId peer, const char* reason) {
    Peer* p = touch(peer);  // a peer never used must still fail its requests
    if (p == nullptr || p->state == PeerState::Dead)
        return;
    Ops::settle(*this, *p);  // what its traffic acknowledged is not abandoned
    Ops::kill(*this, *p, reason);
    reschedule(peer);
    flush_outputs();
}

Micros ReliableChannel::next_deadline() const noexcept {
    return timers_.empty() ? kNever : timers_.begin()->first;
}

Micros ReliableChannel::exact_deadline() const noexcept {
    Micros d = kNever;
    for (const auto& p : peers_)
        if (p)
            d = std::min(d, Ops::deadline(*this, *p));
    return d;
}

void ReliableChannel::on_timer(Micros now) {
    // Collect first: firing reschedules, and a peer fires at most once per call.
    due_.clear();
    for (const auto& entry : timers_) {
        if (entry.first > now)
            break;
        due_.push_back(entry);
    }
    for (const auto& entry : due_) {
        timers_.erase(entry);
        timers_changed_ = true;
        const PeerId id = entry.second;
        if (Peer* p = find(id); p != nullptr) {
            p->indexed = kNever;
            Ops::fire(*this, *p, now);
        }
        reschedule(id);
    }
    flush_outputs();
    rest_due(now);
}

// ---------------------------------------------------------------- observation

bool ReliableChannel::has_peer(PeerId peer) const noexcept {
    return find(peer) != nullptr;
}

PeerState ReliableChannel::peer_state(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr)
        return resting(peer) ? PeerState::Alive : PeerState::Dead;
    return p->state;
}

PathState ReliableChannel::path_state(PeerId peer, PathId path) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr)
        return PathState::Failed;
    const std::uint8_t s = p->paths.find(path);
    return s != kNoSlot ? p->paths[s].state : PathState::Failed;
}

bool ReliableChannel::path_preferred(PeerId peer, PathId path) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return false;
    const std::uint8_t s = p->paths.find(path);
    return s != kNoSlot && p->paths.preferred(s);
}

const PeerCounters* ReliableChannel::counters(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? &p->counters : nullptr;
}

const PathCounters* ReliableChannel::path_counters(PeerId peer, PathId path) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr)
        return nullptr;
    const std::uint8_t s = p->paths.find(path);
    return s != kNoSlot ? &p->paths[s].counters : nullptr;
}

std::vector<PathId> ReliableChannel::paths(PeerId peer) const {
    std::vector<PathId> out;
    if (const Peer* p = find(peer); p != nullptr)
        for (const PathSlot& pa : p->paths)
            out.push_back(pa.id);
    return out;
}

std::size_t ReliableChannel::live_paths(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return 0;
    return static_cast<std::size_t>(
        std::count_if(p->paths.begin(), p->paths.end(),
                      [](const PathSlot& pa) { return pa.state != PathState::Failed; }));
}

std::size_t ReliableChannel::unreleased(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? p->tx.unreleased() : 0;
}

std::size_t ReliableChannel::unacked(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? p->tx.unacked() : 0;
}

std::size_t ReliableChannel::memory_bytes() const noexcept {
    // The per-call scratch (queue_, due_) and the timer index are left out:
    // they hold at most a few entries per peer and frame of the window.
    std::size_t n =
        peers_.capacity() * sizeof(peers_[0]) + resting_.capacity() * sizeof(resting_[0]);
    for (const auto& r : resting_)
        if (r)
            n += sizeof(Resting) + (r->all ? sizeof(PeerCounters) : 0);
    for (const auto& p : peers_) {
        if (!p)
            continue;
        n += sizeof(Peer) + p->paths.memory_bytes() + p->tx.memory_bytes() + p->rx.memory_bytes() +
             p->dirty.capacity() * sizeof(std::uint32_t);
    }
    return n;
}

}  // namespace pml::dr::core
