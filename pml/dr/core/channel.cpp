// The pml dr reliability channel (see channel.hpp for the protocol).
#include "channel.hpp"

#include <algorithm>
#include <array>
#include <cinttypes>

#include "backoff.hpp"
#include "seq.hpp"

namespace pml::dr::core {

using plugin::common::logf;
using plugin::common::LogLevel;
using plugin::common::seq_diff;
using plugin::common::seq_gt;
using plugin::common::seq_le;
using plugin::common::seq_lt;

namespace {

constexpr std::uint8_t kNoSlot = 0xFF;

// The seq after s. 0 means "none" on the wire and is skipped.
constexpr std::uint32_t seq_after(std::uint32_t s) noexcept {
    const auto n = static_cast<std::uint32_t>(s + 1u);
    return n == 0 ? 1u : n;
}

constexpr std::uint32_t slot_bit(std::uint8_t slot) noexcept {
    return std::uint32_t{1} << slot;
}

// Name tables, indexed by the enumerators' values.
constexpr std::array<const char*, 3> kPathStateNames = {"alive", "suspect", "failed"};
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
            return to == PathState::Suspect || to == PathState::Failed;
        case PathState::Suspect:
            return to == PathState::Alive || to == PathState::Failed;
        case PathState::Failed:
            return to == PathState::Alive;  // re-added by the glue
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

bool transition_allowed(FrameState from, FrameState to) noexcept {
    switch (from) {
        case FrameState::Free:
            return to == FrameState::InFlight;
        case FrameState::InFlight:
            return to == FrameState::Acked || to == FrameState::Free;
        case FrameState::Acked:
            return to == FrameState::Free;
    }
    return false;
}

ChannelParams channel_params(const Config& config) noexcept {
    ChannelParams p;
    p.ack_timeout = config.ack_timeout;
    p.ack_retries = config.ack_retries;
    p.watchdog_timeout = config.watchdog_timeout;
    p.watchdog_retries = config.watchdog_retries;
    p.peer_dead_timeout = config.peer_dead_timeout;
    return p;
}

std::string validate(const ChannelParams& p) {
    if (p.window < 64 || p.window > 4096 || (p.window & (p.window - 1)) != 0)
        return "channel window must be a power of two in 64..4096";
    if (p.ack_every < 1)
        return "channel ack_every must be at least 1";
    if (p.ack_delay < 0)
        return "channel ack_delay must not be negative";
    if (p.ack_timeout <= 0 || p.watchdog_timeout <= 0 || p.peer_dead_timeout <= 0)
        return "channel timeouts must be positive";
    if (p.max_paths < 1 || p.max_paths > kMaxPathsPerPeer)
        return "channel max_paths must be in 1..32";
    if (p.first_seq == 0)
        return "channel first_seq must not be 0";
    return {};
}

// ---------------------------------------------------------------- state

namespace {

struct TxFrame {
    FrameToken token = 0;
    Micros last_tx = 0;          // time of the latest transmission
    std::uint64_t tx_order = 0;  // per-peer transmission counter at that time
    std::uint32_t seq = 0;
    std::uint32_t pending = 0;  // path slots that owe a local completion
    std::uint32_t bytes = 0;    // for counters only
    FrameState state = FrameState::Free;
    std::uint8_t path = kNoSlot;  // slot whose ACK timer covers the frame
};

struct PathSlot {
    PathId id = 0;
    PathState state = PathState::Alive;
    unsigned ack_retries = 0;  // ACK timer expiries since the last progress
    unsigned wd_retries = 0;   // watchdog expiries since the last completion
    Micros ack_deadline = kNever;
    Micros wd_deadline = kNever;
    std::uint32_t outstanding = 0;    // unacked frames whose ACK this path's timer covers
    std::uint32_t local_pending = 0;  // transmissions awaiting local completion
    PathCounters counters;
};

}  // namespace

struct ReliableChannel::Peer {
    PeerId id = 0;
    PeerState state = PeerState::Alive;
    std::vector<PathSlot> paths;
    std::size_t rr = 0;  // round-robin cursor over paths
    PeerCounters counters;
    Micros indexed = kNever;  // this peer's entry in timers_

    // sender
    std::vector<TxFrame> window;  // `window` slots, allocated on the first submit
    std::uint32_t next_seq = 1;   // next to assign
    std::uint32_t una = 1;        // oldest seq holding a slot (== next_seq: none)
    std::uint32_t cum_acked = 0;  // highest cumulative ack seen
    std::uint64_t tx_counter = 0;
    std::uint32_t unacked = 0;     // InFlight frames
    std::uint32_t unreleased = 0;  // InFlight + Acked frames
    Micros last_progress = 0;      // last ack progress, or when unacked left 0

    // receiver
    std::vector<std::uint64_t> rx_bits;  // ring bitmap: bit (seq % window) for seqs after rx_cum
    std::uint32_t rx_cum = 0;            // every seq <= rx_cum arrived
    std::vector<std::uint32_t> dirty;    // vfrag ids with arrivals since the last ACK
    unsigned rx_unacked = 0;             // deliveries since the last ACK
    Micros ack_due = kNever;
    PathId ack_path = kAnyPath;  // where the latest data came from
};

struct ReliableChannel::Output {
    enum class Kind : std::uint8_t { Transmit, Ack, PathFailed, PeerDead, Acked, Abandoned };
    Kind kind = Kind::Transmit;
    bool retransmit = false;
    PeerId peer = 0;
    PathId path = 0;
    FrameRef ref;
    AckInfo ack;
};

// ---------------------------------------------------------------- helpers

struct ReliableChannel::Ops {
    using Ch = ReliableChannel;
    using Kind = Output::Kind;

    // Per-ACK scratch: what the ACK newly acknowledged.
    struct AckScan {
        bool any = false;
        std::uint32_t highest = 0;
        std::uint32_t progressed = 0;  // path slots with newly acked frames
        std::array<std::uint64_t, kMaxPathsPerPeer> max_tx{};
    };

    static TxFrame& tx(Ch& ch, Peer& p, std::uint32_t seq) noexcept {
        return p.window[seq & (ch.params_.window - 1)];
    }

    static std::uint8_t find_slot(const Peer& p, PathId id) noexcept {
        for (std::size_t i = 0; i < p.paths.size(); ++i)
            if (p.paths[i].id == id)
                return static_cast<std::uint8_t>(i);
        return kNoSlot;
    }

    // A usable path: the hint if usable, else round-robin from `start`, Alive
    // before Suspect; slots in `avoid` are skipped.
    static std::uint8_t choose_path(const Peer& p, PathId hint, std::size_t start,
                                    std::uint32_t avoid = 0) noexcept {
        if (hint != kAnyPath) {
            const std::uint8_t s = find_slot(p, hint);
            if (s != kNoSlot && p.paths[s].state != PathState::Failed && (avoid & slot_bit(s)) == 0)
                return s;
        }
        const std::size_t n = p.paths.size();
        for (const PathState want : {PathState::Alive, PathState::Suspect}) {
            for (std::size_t i = 0; i < n; ++i) {
                const auto s = static_cast<std::uint8_t>((start + i) % n);
                if (p.paths[s].state == want && (avoid & slot_bit(s)) == 0)
                    return s;
            }
        }
        return kNoSlot;
    }

    // --- state machines

    static void set_state(Ch& ch, Peer& p, PathSlot& pa, PathState to, const char* reason) {
        if (pa.state == to)
            return;
        if (!transition_allowed(pa.state, to)) {
            logf(ch.log_, LogLevel::Error,
                 "pml dr channel: peer %u path %" PRIu64 ": illegal %s -> %s (%s)", p.id, pa.id,
                 name(pa.state), name(to), reason);
            return;
        }
        logf(ch.log_, LogLevel::Debug, "pml dr channel: peer %u path %" PRIu64 ": %s -> %s (%s)",
             p.id, pa.id, name(pa.state), name(to), reason);
        pa.state = to;
    }

    static bool set_state(Ch& ch, Peer& p, PeerState to, const char* reason) {
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

    static void set_state(Ch& ch, Peer& p, TxFrame& f, FrameState to, const char* reason) {
        if (!transition_allowed(f.state, to)) {
            logf(ch.log_, LogLevel::Error, "pml dr channel: peer %u seq %u: illegal %s -> %s (%s)",
                 p.id, f.seq, name(f.state), name(to), reason);
            return;
        }
        logf(ch.log_, LogLevel::Trace, "pml dr channel: peer %u seq %u: %s -> %s (%s)", p.id, f.seq,
             name(f.state), name(to), reason);
        f.state = to;
    }

    // Alive <-> Suspect follows the retry counters.
    static void refresh(Ch& ch, Peer& p, PathSlot& pa, const char* reason) {
        if (pa.state == PathState::Failed)
            return;
        const bool suspect = pa.ack_retries > 0 || pa.wd_retries > 0;
        set_state(ch, p, pa, suspect ? PathState::Suspect : PathState::Alive, reason);
    }

    // --- sender

    static void leave_path(Peer& p, std::uint8_t slot) noexcept {
        PathSlot& pa = p.paths[slot];
        if (pa.outstanding > 0 && --pa.outstanding == 0)
            pa.ack_deadline = kNever;
    }

    // Makes `slot` the path whose ACK timer covers the unacked frame.
    static void move_frame(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now) {
        if (f.path == slot)
            return;
        if (f.path != kNoSlot)
            leave_path(p, f.path);
        f.path = slot;
        PathSlot& pa = p.paths[slot];
        if (pa.outstanding++ == 0)
            pa.ack_deadline = add_saturating(now, backoff(ch.params_.ack_timeout, pa.ack_retries));
    }

    // Hands the frame to the path. False (nothing sent) when that path still
    // owes a completion for this frame: the BTL never holds two descriptors of
    // one frame, and the timers will come back to it.
    static bool transmit(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now,
                         bool retransmit) {
        const std::uint32_t bit = slot_bit(slot);
        if ((f.pending & bit) != 0)
            return false;
        if (f.state == FrameState::InFlight)
            move_frame(ch, p, f, slot, now);
        PathSlot& pa = p.paths[slot];
        f.last_tx = now;
        f.tx_order = ++p.tx_counter;
        f.pending |= bit;
        if (pa.local_pending++ == 0)
            pa.wd_deadline =
                add_saturating(now, backoff(ch.params_.watchdog_timeout, pa.wd_retries));
        ++pa.counters.frames_sent;
        pa.counters.bytes_sent += f.bytes;
        ++p.counters.frames_sent;
        p.counters.bytes_sent += f.bytes;
        if (retransmit) {
            ++pa.counters.retransmits;
            ++p.counters.retransmits;
        }
        Output o;
        o.kind = Kind::Transmit;
        o.retransmit = retransmit;
        o.peer = p.id;
        o.path = pa.id;
        o.ref = FrameRef{f.seq, f.token};
        ch.queue_.push_back(o);
        return true;
    }

    static void emit(Ch& ch, Kind kind, PeerId peer, PathId path = 0, FrameToken token = 0) {
        Output o;
        o.kind = kind;
        o.peer = peer;
        o.path = path;
        o.ref.token = token;
        ch.queue_.push_back(o);
    }

    static void release_if_done(Ch& ch, Peer& p, TxFrame& f) {
        if (f.state != FrameState::Acked || f.pending != 0)
            return;
        set_state(ch, p, f, FrameState::Free, "released");
        --p.unreleased;
        emit(ch, Kind::Acked, p.id, 0, f.token);
    }

    // Frees window slots from the oldest end.
    static void advance_una(Ch& ch, Peer& p) noexcept {
        while (p.una != p.next_seq && tx(ch, p, p.una).state == FrameState::Free)
            p.una = seq_after(p.una);
        // Keep cum_acked >= una - 1 (only a lying peer can sack frames past
        // its cumulative ack), so ACK processing never walks more than a window.
        const auto floor = static_cast<std::uint32_t>(p.una - 1u);
        if (seq_lt(p.cum_acked, floor))
            p.cum_acked = floor;
    }

    static void ack_frame(Ch& ch, Peer& p, std::uint32_t seq, AckScan& scan) {
        TxFrame& f = tx(ch, p, seq);
        if (f.seq != seq || f.state != FrameState::InFlight)
            return;
        set_state(ch, p, f, FrameState::Acked, "acknowledged");
        --p.unacked;
        ++p.counters.frames_acked;
        if (f.path != kNoSlot) {
            leave_path(p, f.path);
            scan.progressed |= slot_bit(f.path);
            scan.max_tx[f.path] = std::max(scan.max_tx[f.path], f.tx_order);
        }
        if (!scan.any || seq_gt(seq, scan.highest))
            scan.highest = seq;
        scan.any = true;
        release_if_done(ch, p, f);
    }

    enum class AckCheck { Ok, Stale, Bad };

    static AckCheck check_ack(const Peer& p, const AckInfo& a) noexcept {
        if (seq_lt(a.cum_seq, p.cum_acked))
            return AckCheck::Stale;
        if (!seq_lt(a.cum_seq, p.next_seq))
            return AckCheck::Bad;  // beyond anything sent
        if (a.sack_mask == 0)
            return a.sack_base == 0 ? AckCheck::Ok : AckCheck::Bad;
        if (a.sack_base % kVfragFrames != 0)
            return AckCheck::Bad;
        for (unsigned i = 0; i < kVfragFrames; ++i) {
            if (((a.sack_mask >> i) & 1u) == 0)
                continue;
            const auto s = static_cast<std::uint32_t>(a.sack_base + i);
            if (seq_le(s, a.cum_seq))
                continue;  // covered by cum
            if (s == 0 || !seq_lt(s, p.next_seq))
                return AckCheck::Bad;
        }
        return AckCheck::Ok;
    }

    // Path failed: forget its owed completions, re-drive its unacked frames on
    // the next live path; none left -> the peer is dead.
    static void fail_path(Ch& ch, Peer& p, std::uint8_t slot, Micros now, const char* reason) {
        PathSlot& pa = p.paths[slot];
        if (pa.state == PathState::Failed || p.state == PeerState::Dead)
            return;
        set_state(ch, p, pa, PathState::Failed, reason);
        ++pa.counters.failures;
        ++p.counters.paths_lost;
        pa.ack_deadline = kNever;
        pa.wd_deadline = kNever;
        pa.ack_retries = 0;
        pa.wd_retries = 0;
        pa.local_pending = 0;
        emit(ch, Kind::PathFailed, p.id, pa.id);

        const std::uint32_t bit = slot_bit(slot);
        const std::uint8_t target = choose_path(p, kAnyPath, std::size_t{slot} + 1);
        bool moved = false;
        for (std::uint32_t s = p.una; s != p.next_seq; s = seq_after(s)) {
            TxFrame& f = tx(ch, p, s);
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
                const std::uint8_t other =
                    choose_path(p, kAnyPath, std::size_t{slot} + 1, f.pending);
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
        advance_una(ch, p);
    }

    // The peer is dead: report every frame, stop every timer.
    static void kill(Ch& ch, Peer& p, const char* reason) {
        if (!set_state(ch, p, PeerState::Dead, reason))
            return;
        for (std::uint32_t s = p.una; s != p.next_seq; s = seq_after(s)) {
            TxFrame& f = tx(ch, p, s);
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
        p.una = p.next_seq;
        p.unacked = 0;
        p.unreleased = 0;
        for (PathSlot& pa : p.paths) {
            pa.ack_deadline = kNever;
            pa.wd_deadline = kNever;
            pa.outstanding = 0;
            pa.local_pending = 0;
        }
        p.ack_due = kNever;
        p.dirty.clear();
        p.rx_unacked = 0;
        emit(ch, Kind::PeerDead, p.id);
    }

    static void ack_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now) {
        PathSlot& pa = p.paths[slot];
        if (pa.outstanding == 0) {
            pa.ack_deadline = kNever;
            return;
        }
        const Micros timeout = ch.params_.ack_timeout;
        const std::uint32_t bit = slot_bit(slot);
        // Frames a completion is owed for are the watchdog's business.
        std::size_t aged = 0;
        Micros youngest_wait = kNever;
        for (std::uint32_t s = p.una; s != p.next_seq; s = seq_after(s)) {
            const TxFrame& f = tx(ch, p, s);
            if (f.state != FrameState::InFlight || f.path != slot || (f.pending & bit) != 0)
                continue;
            const Micros due = add_saturating(f.last_tx, timeout);
            if (due <= now)
                ++aged;
            else
                youngest_wait = std::min(youngest_wait, due);
        }
        if (aged == 0) {  // nothing to resend yet: not an expiry that counts
            pa.ack_deadline = youngest_wait != kNever
                                  ? youngest_wait
                                  : add_saturating(now, backoff(timeout, pa.ack_retries));
            return;
        }
        ++pa.ack_retries;
        ++pa.counters.ack_timeouts;
        ++p.counters.ack_timeouts;
        if (pa.ack_retries > ch.params_.ack_retries) {
            fail_path(ch, p, slot, now, "ack retries exhausted");
            return;
        }
        refresh(ch, p, pa, "ack timer expired");
        for (std::uint32_t s = p.una; s != p.next_seq; s = seq_after(s)) {
            TxFrame& f = tx(ch, p, s);
            if (f.state != FrameState::InFlight || f.path != slot || (f.pending & bit) != 0 ||
                add_saturating(f.last_tx, timeout) > now)
                continue;
            if (transmit(ch, p, f, slot, now, true))
                ++p.counters.timeout_retransmits;
        }
        pa.ack_deadline = add_saturating(now, backoff(timeout, pa.ack_retries));
    }

    static void watchdog_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now) {
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

    // --- receiver

    static bool rx_bit(const Ch& ch, const Peer& p, std::uint32_t seq) noexcept {
        const std::uint32_t pos = seq & (ch.params_.window - 1);
        return ((p.rx_bits[pos / 64] >> (pos % 64)) & 1u) != 0;
    }
    static void rx_put(const Ch& ch, Peer& p, std::uint32_t seq, bool on) noexcept {
        const std::uint32_t pos = seq & (ch.params_.window - 1);
        const std::uint64_t m = std::uint64_t{1} << (pos % 64);
        if (on)
            p.rx_bits[pos / 64] |= m;
        else
            p.rx_bits[pos / 64] &= ~m;
    }

    // Moves rx_cum over every contiguous arrival (and over seq 0, never sent).
    static void rx_advance(const Ch& ch, Peer& p) noexcept {
        for (;;) {
            const auto n = static_cast<std::uint32_t>(p.rx_cum + 1u);
            if (n != 0) {
                if (!rx_bit(ch, p, n))
                    break;
                rx_put(ch, p, n, false);
            }
            p.rx_cum = n;
        }
    }

    static bool arrived(const Ch& ch, const Peer& p, std::uint32_t s) noexcept {
        if (seq_le(s, p.rx_cum))
            return true;
        return seq_diff(s, p.rx_cum) <= static_cast<std::int32_t>(ch.params_.window) &&
               rx_bit(ch, p, s);
    }

    static void mark_dirty(Ch& ch, Peer& p, std::uint32_t vfrag, Micros now) {
        if (std::find(p.dirty.begin(), p.dirty.end(), vfrag) != p.dirty.end())
            return;
        const std::size_t cap = ch.params_.window / kVfragFrames + 1;
        if (p.dirty.size() >= cap) {
            std::erase_if(p.dirty, [&p](std::uint32_t v) {
                return seq_le(static_cast<std::uint32_t>(v * kVfragFrames + kVfragFrames - 1),
                              p.rx_cum);
            });
            if (p.dirty.size() >= cap)
                flush_acks(ch, p, now);
        }
        p.dirty.push_back(vfrag);
    }

    static void flush_acks(Ch& ch, Peer& p, Micros now) {
        (void)now;
        p.ack_due = kNever;
        p.rx_unacked = 0;
        // Back on the path the data came on, unless we declared it failed.
        PathId via = p.ack_path;
        std::uint8_t slot = find_slot(p, via);
        if ((slot != kNoSlot && p.paths[slot].state == PathState::Failed) || via == kAnyPath) {
            slot = choose_path(p, kAnyPath, 0);
            if (slot == kNoSlot) {
                ++p.counters.acks_unsent;
                p.dirty.clear();
                return;
            }
            via = p.paths[slot].id;
        }
        const auto send = [&](const AckInfo& a) {
            Output o;
            o.kind = Kind::Ack;
            o.peer = p.id;
            o.path = via;
            o.ack = a;
            ch.queue_.push_back(o);
            ++p.counters.acks_sent;
            if (slot != kNoSlot)
                ++p.paths[slot].counters.acks_sent;
        };
        bool any = false;
        for (const std::uint32_t v : p.dirty) {
            const auto base = static_cast<std::uint32_t>(v * kVfragFrames);
            if (seq_le(static_cast<std::uint32_t>(base + kVfragFrames - 1), p.rx_cum))
                continue;
            std::uint64_t mask = 0;
            for (unsigned i = 0; i < kVfragFrames; ++i)
                if (arrived(ch, p, static_cast<std::uint32_t>(base + i)))
                    mask |= std::uint64_t{1} << i;
            send(AckInfo{p.rx_cum, base, mask});
            any = true;
        }
        if (!any)
            send(AckInfo{p.rx_cum, 0, 0});
        p.dirty.clear();
    }

    // --- timers

    static Micros deadline(const Ch& ch, const Peer& p) noexcept {
        if (p.state == PeerState::Dead)
            return kNever;
        Micros d = p.ack_due;
        for (const PathSlot& pa : p.paths) {
            if (pa.state == PathState::Failed)
                continue;
            d = std::min({d, pa.ack_deadline, pa.wd_deadline});
        }
        if (p.unacked > 0)
            d = std::min(d, add_saturating(p.last_progress, ch.params_.peer_dead_timeout));
        return d;
    }

    static void fire(Ch& ch, Peer& p, Micros now) {
        if (p.ack_due <= now)
            flush_acks(ch, p, now);
        for (std::size_t i = 0; i < p.paths.size() && p.state == PeerState::Alive; ++i) {
            const auto slot = static_cast<std::uint8_t>(i);
            if (p.paths[i].state != PathState::Failed && p.paths[i].wd_deadline <= now)
                watchdog_expired(ch, p, slot, now);
            if (p.state == PeerState::Alive && p.paths[i].state != PathState::Failed &&
                p.paths[i].ack_deadline <= now)
                ack_expired(ch, p, slot, now);
        }
        if (p.state == PeerState::Alive && p.unacked > 0 &&
            add_saturating(p.last_progress, ch.params_.peer_dead_timeout) <= now)
            kill(ch, p, "nothing acknowledged for peer_dead_timeout");
    }
};

// ---------------------------------------------------------------- public API

ReliableChannel::ReliableChannel(const ChannelParams& params, ChannelOutput& out,
                                 plugin::common::LogSink& log)
    : params_(params), out_(out), log_(log) {
    if (const std::string err = validate(params); !err.empty()) {
        logf(log_, LogLevel::Error, "pml dr channel: %s; using defaults", err.c_str());
        params_ = ChannelParams{};
    }
}

ReliableChannel::~ReliableChannel() = default;

ReliableChannel::Peer* ReliableChannel::find(PeerId peer) noexcept {
    return peer < peers_.size() ? peers_[peer].get() : nullptr;
}
const ReliableChannel::Peer* ReliableChannel::find(PeerId peer) const noexcept {
    return peer < peers_.size() ? peers_[peer].get() : nullptr;
}

void ReliableChannel::reschedule(PeerId id) noexcept {
    Peer* p = find(id);
    const Micros d = p != nullptr ? Ops::deadline(*this, *p) : kNever;
    const Micros old = p != nullptr ? p->indexed : kNever;
    if (d == old)
        return;
    if (old != kNever)
        timers_.erase({old, id});
    if (d != kNever)
        timers_.insert({d, id});
    if (p != nullptr)
        p->indexed = d;
}

void ReliableChannel::flush_outputs() {
    if (draining_)
        return;  // a nested call: the outer drain hands these over
    draining_ = true;
    struct Reset {
        ReliableChannel& ch;
        ~Reset() {
            ch.queue_.clear();
            ch.draining_ = false;
        }
    } reset{*this};
    using Kind = Output::Kind;
    // By index: callbacks may append to queue_ (which may reallocate).
    for (std::size_t i = 0; i < queue_.size(); ++i) {  // NOLINT(modernize-loop-convert)
        const Output o = queue_[i];                    // a copy: callbacks may append
        switch (o.kind) {
            case Kind::Transmit: {
                // Skip what became moot in the meantime (path failed, peer
                // gone, frame abandoned): its completion is no longer owed.
                Peer* p = find(o.peer);
                if (p == nullptr || p->window.empty())
                    break;
                const std::uint8_t slot = Ops::find_slot(*p, o.path);
                const TxFrame& f = Ops::tx(*this, *p, o.ref.seq);
                if (slot == kNoSlot || f.state == FrameState::Free || f.seq != o.ref.seq ||
                    f.token != o.ref.token || (f.pending & slot_bit(slot)) == 0)
                    break;
                out_.transmit(o.peer, o.path, o.ref, o.retransmit);
                break;
            }
            case Kind::Ack:
                if (find(o.peer) != nullptr)
                    out_.send_ack(o.peer, o.path, o.ack);
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
    p->next_seq = p->una = params_.first_seq;
    p->cum_acked = p->rx_cum = static_cast<std::uint32_t>(params_.first_seq - 1u);
    p->paths.reserve(params_.max_paths);
    peers_[peer] = std::move(p);
}

void ReliableChannel::remove_peer(PeerId peer) {
    Peer* p = find(peer);
    if (p == nullptr)
        return;
    if (!p->window.empty()) {
        for (std::uint32_t s = p->una; s != p->next_seq; s = seq_after(s)) {
            const TxFrame& f = Ops::tx(*this, *p, s);
            if (f.state == FrameState::InFlight) {
                Ops::emit(*this, Output::Kind::Abandoned, peer, 0, f.token);
            } else if (f.state == FrameState::Acked) {
                Ops::emit(*this, Output::Kind::Acked, peer, 0, f.token);
            }
        }
    }
    if (p->indexed != kNever)
        timers_.erase({p->indexed, peer});
    peers_[peer].reset();
    flush_outputs();
}

bool ReliableChannel::add_path(PeerId peer, PathId path) {
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead || path == kAnyPath)
        return false;
    if (const std::uint8_t slot = Ops::find_slot(*p, path); slot != kNoSlot) {
        PathSlot& pa = p->paths[slot];
        if (pa.state == PathState::Failed)
            Ops::set_state(*this, *p, pa, PathState::Alive, "re-added");
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
    p->paths.push_back(pa);
    return true;
}

void ReliableChannel::remove_path(PeerId peer, PathId path, Micros now) {
    Peer* p = find(peer);
    if (p == nullptr)
        return;
    const std::uint8_t slot = Ops::find_slot(*p, path);
    if (slot == kNoSlot)
        return;
    Ops::fail_path(*this, *p, slot, now, "removed (BTL error)");
    reschedule(peer);
    flush_outputs();
}

SubmitResult ReliableChannel::submit(PeerId peer, FrameToken token, Micros now, std::size_t bytes,
                                     PathId hint) {
    Peer* p = find(peer);
    if (p == nullptr)
        return {SubmitStatus::UnknownPeer, 0};
    if (p->state == PeerState::Dead)
        return {SubmitStatus::PeerDead, 0};
    const std::uint8_t slot = Ops::choose_path(*p, hint, p->rr);
    if (slot == kNoSlot)
        return {SubmitStatus::NoPath, 0};
    if (p->window.empty())
        p->window.assign(params_.window, TxFrame{});
    if (static_cast<std::uint32_t>(p->next_seq - p->una) >= params_.window) {
        ++p->counters.window_full;
        return {SubmitStatus::WindowFull, 0};
    }
    if (hint == kAnyPath || p->paths[slot].id != hint)
        p->rr = std::size_t{slot} + 1;
    const std::uint32_t seq = p->next_seq;
    p->next_seq = seq_after(seq);
    TxFrame& f = Ops::tx(*this, *p, seq);
    f = TxFrame{};
    f.seq = seq;
    f.token = token;
    f.bytes = static_cast<std::uint32_t>(std::min<std::size_t>(bytes, UINT32_MAX));
    Ops::set_state(*this, *p, f, FrameState::InFlight, "submitted");
    if (p->unacked++ == 0)
        p->last_progress = now;
    ++p->unreleased;
    ++p->counters.frames_submitted;
    Ops::transmit(*this, *p, f, slot, now, false);
    reschedule(peer);
    flush_outputs();
    return {SubmitStatus::Ok, seq};
}

bool ReliableChannel::can_submit(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return false;
    if (Ops::choose_path(*p, kAnyPath, 0) == kNoSlot)
        return false;
    return static_cast<std::uint32_t>(p->next_seq - p->una) < params_.window;
}

void ReliableChannel::on_local_complete(PeerId peer, PathId path, FrameRef ref, bool ok,
                                        Micros now) {
    Peer* p = find(peer);
    if (p == nullptr)
        return;
    const std::uint8_t slot = Ops::find_slot(*p, path);
    if (slot == kNoSlot || p->window.empty()) {
        ++p->counters.stale_completions;
        return;
    }
    TxFrame& f = Ops::tx(*this, *p, ref.seq);
    const std::uint32_t bit = slot_bit(slot);
    if (f.state == FrameState::Free || f.seq != ref.seq || f.token != ref.token ||
        (f.pending & bit) == 0) {
        ++p->counters.stale_completions;  // e.g. the path failed in between
        return;
    }
    PathSlot& pa = p->paths[slot];
    f.pending &= ~bit;
    if (pa.local_pending > 0)
        --pa.local_pending;
    pa.wd_retries = 0;
    pa.wd_deadline = pa.local_pending > 0 ? add_saturating(now, params_.watchdog_timeout) : kNever;
    if (ok) {
        Ops::refresh(*this, *p, pa, "local completion");
    } else {
        ++pa.counters.local_errors;
        ++p->counters.local_errors;
        Ops::fail_path(*this, *p, slot, now, "local completion with error");
    }
    Ops::release_if_done(*this, *p, f);
    if (p->state == PeerState::Alive)
        Ops::advance_una(*this, *p);
    reschedule(peer);
    flush_outputs();
}

void ReliableChannel::on_ack(PeerId peer, PathId path, const AckInfo& ack, Micros now) {
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return;
    ++p->counters.acks_received;
    if (const std::uint8_t s = Ops::find_slot(*p, path); s != kNoSlot)
        ++p->paths[s].counters.acks_received;
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
                 peer, ack.cum_seq, ack.sack_base, ack.sack_mask, p->next_seq);
            return;
    }
    if (p->window.empty()) {  // nothing ever sent: a valid ACK can only repeat cum
        ++p->counters.dup_acks;
        return;
    }
    Ops::AckScan scan;
    for (std::uint32_t s = seq_after(p->cum_acked); seq_le(s, ack.cum_seq); s = seq_after(s))
        Ops::ack_frame(*this, *p, s, scan);
    p->cum_acked = ack.cum_seq;
    for (unsigned i = 0; i < kVfragFrames; ++i) {
        const auto s = static_cast<std::uint32_t>(ack.sack_base + i);
        if (((ack.sack_mask >> i) & 1u) != 0 && seq_gt(s, ack.cum_seq))
            Ops::ack_frame(*this, *p, s, scan);
    }
    if (!scan.any) {
        ++p->counters.dup_acks;
        return;
    }
    p->last_progress = now;
    for (std::size_t i = 0; i < p->paths.size(); ++i) {
        if ((scan.progressed & slot_bit(static_cast<std::uint8_t>(i))) == 0)
            continue;
        PathSlot& pa = p->paths[i];
        if (pa.state == PathState::Failed)
            continue;
        pa.ack_retries = 0;
        pa.ack_deadline = pa.outstanding > 0 ? add_saturating(now, params_.ack_timeout) : kNever;
        Ops::refresh(*this, *p, pa, "ack progress");
    }
    // NACK: holes below the highest seq this ACK acknowledged, resent when a
    // frame transmitted later on the same path got through.
    for (std::uint32_t s = seq_after(ack.cum_seq); seq_lt(s, scan.highest); s = seq_after(s)) {
        TxFrame& f = Ops::tx(*this, *p, s);
        if (f.seq != s || f.state != FrameState::InFlight || f.path == kNoSlot ||
            f.tx_order >= scan.max_tx[f.path])
            continue;
        if (Ops::transmit(*this, *p, f, f.path, now, true))
            ++p->counters.nack_retransmits;
    }
    Ops::advance_una(*this, *p);
    reschedule(peer);
    flush_outputs();
}

Verdict ReliableChannel::on_data(PeerId peer, PathId path, std::uint32_t seq, Micros now,
                                 std::size_t bytes) {
    Peer* p = find(peer);
    if (p == nullptr || p->state == PeerState::Dead)
        return Verdict::Drop;
    if (seq == 0) {
        ++p->counters.bad_seq;
        return Verdict::Drop;
    }
    if (p->rx_bits.empty()) {
        p->rx_bits.assign(params_.window / 64, 0);
        p->dirty.reserve(params_.window / kVfragFrames + 1);
    }
    const std::int32_t d = seq_diff(seq, p->rx_cum);
    if (d > static_cast<std::int32_t>(params_.window)) {
        ++p->counters.too_far_dropped;  // not acked: the sender resends later
        return Verdict::Drop;
    }
    p->ack_path = path;
    if (d <= 0 || Ops::rx_bit(*this, *p, seq)) {
        // Re-ack at once: the ACK that covered it may have been lost.
        ++p->counters.duplicates_dropped;
        if (d > 0)
            Ops::mark_dirty(*this, *p, seq / kVfragFrames, now);
        Ops::flush_acks(*this, *p, now);
        reschedule(peer);
        flush_outputs();
        return Verdict::Duplicate;
    }
    Ops::mark_dirty(*this, *p, seq / kVfragFrames, now);
    Ops::rx_put(*this, *p, seq, true);
    Ops::rx_advance(*this, *p);
    ++p->counters.frames_delivered;
    p->counters.bytes_delivered += bytes;
    if (const std::uint8_t s = Ops::find_slot(*p, path); s != kNoSlot) {
        ++p->paths[s].counters.frames_received;
        p->paths[s].counters.bytes_received += bytes;
    }
    if (++p->rx_unacked >= params_.ack_every)
        Ops::flush_acks(*this, *p, now);
    else if (p->ack_due == kNever)
        p->ack_due = add_saturating(now, params_.ack_delay);
    reschedule(peer);
    flush_outputs();
    return Verdict::Deliver;
}

Micros ReliableChannel::next_deadline() const noexcept {
    return timers_.empty() ? kNever : timers_.begin()->first;
}

void ReliableChannel::on_timer(Micros now) {
    // Collect first: firing reschedules, and a peer fires at most once per call.
    due_.clear();
    for (const auto& [at, id] : timers_) {
        if (at > now)
            break;
        due_.push_back(id);
    }
    for (const PeerId id : due_) {
        if (Peer* p = find(id); p != nullptr)
            Ops::fire(*this, *p, now);
        reschedule(id);
    }
    flush_outputs();
}

// ---------------------------------------------------------------- observation

bool ReliableChannel::has_peer(PeerId peer) const noexcept {
    return find(peer) != nullptr;
}

PeerState ReliableChannel::peer_state(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? p->state : PeerState::Dead;
}

PathState ReliableChannel::path_state(PeerId peer, PathId path) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr)
        return PathState::Failed;
    const std::uint8_t s = Ops::find_slot(*p, path);
    return s != kNoSlot ? p->paths[s].state : PathState::Failed;
}

const PeerCounters* ReliableChannel::counters(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? &p->counters : nullptr;
}

const PathCounters* ReliableChannel::path_counters(PeerId peer, PathId path) const noexcept {
    const Peer* p = find(peer);
    if (p == nullptr)
        return nullptr;
    const std::uint8_t s = Ops::find_slot(*p, path);
    return s != kNoSlot ? &p->paths[s].counters : nullptr;
}

std::vector<PathId> ReliableChannel::paths(PeerId peer) const {
    std::vector<PathId> out;
    if (const Peer* p = find(peer); p != nullptr)
        for (const PathSlot& pa : p->paths)
            out.push_back(pa.id);
    return out;
}

std::size_t ReliableChannel::unreleased(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? p->unreleased : 0;
}

std::size_t ReliableChannel::unacked(PeerId peer) const noexcept {
    const Peer* p = find(peer);
    return p != nullptr ? p->unacked : 0;
}

std::size_t ReliableChannel::memory_bytes() const noexcept {
    // The per-call scratch (queue_, due_) and the timer index are left out:
    // they hold at most a few entries per peer and frame of the window.
    std::size_t n = peers_.capacity() * sizeof(peers_[0]);
    for (const auto& p : peers_) {
        if (!p)
            continue;
        n += sizeof(Peer) + p->paths.capacity() * sizeof(PathSlot) +
             p->window.capacity() * sizeof(TxFrame) +
             p->rx_bits.capacity() * sizeof(std::uint64_t) +
             p->dirty.capacity() * sizeof(std::uint32_t);
    }
    return n;
}

}  // namespace pml::dr::core
