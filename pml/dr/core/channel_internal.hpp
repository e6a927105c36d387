// Private to the reliability channel's implementation (channel.cpp,
// channel_send.cpp, channel_recv.cpp); not a public header. It holds the
// per-peer state and the helpers the sender, the receiver and the timer
// dispatch share; channel.hpp documents the protocol.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backoff.hpp"
#include "channel.hpp"
#include "recovery.hpp"
#include "rx_tracker.hpp"
#include "seq.hpp"
#include "path_set.hpp"
#include "tx_window.hpp"

namespace pml::dr::core {

using channel_detail::kNoSlot;
using channel_detail::seq_after;
using channel_detail::slot_bit;
using channel_detail::TxFrame;
using PathSlot = PathSet::PathSlot;

struct ReliableChannel::Peer {
    PeerId id = 0;
    PeerState state = PeerState::Alive;
    bool active = false;      // listed in active_ (see flush_acks); sits in padding
    bool talked = false;      // listed in talked_ (see leave)
    bool in_leaving = false;  // listed in leaving_
    bool offered = false;     // made from the output's offer: it can be again (may rest)
    LeaveState leave = LeaveState::Staying;
    PathSet paths;
    std::size_t rr = 0;  // round-robin cursor over paths
    PeerCounters counters;
    Micros indexed = kNever;  // this peer's entry in timers_

    // sender
    TxWindow tx;             // the frames out, what the peer acknowledged of them
    Micros carried_at = 0;   // when tx.carried() arrived: the time its progress counts from
    bool batch_due = false;  // listed in batch_due_ (settle_every carried, not settled)
    std::uint64_t tx_counter = 0;
    Micros last_progress = 0;       // last ack progress, or when unacked left 0
    Micros peer_max_ack_delay = 0;  // the peer's bound on holding an ACK (its ACK frames say)
    std::uint32_t probe_ids = 0;    // PROBE ids issued to this peer
    // Probing of Suspect and Failed paths waits for traffic: nothing was
    // unacknowledged when a probe fell due (an idle job probes nothing).
    bool probes_paused = false;
    // A visit found this peer's timers more than a PTO late (this process
    // was away from MPI): back_at is set; cleared by ack progress.
    bool absence_noted = false;
    Micros last_submit = 0;  // when the latest new frame went out
    Micros back_at = 0;      // when this process was last found back from an absence

    // receiver
    RxTracker rx;                      // what arrived of its sequence
    std::vector<std::uint32_t> dirty;  // vfrag ids with arrivals since the last ACK
    unsigned rx_unacked = 0;           // deliveries since the last ACK
    Micros ack_due = kNever;
    Micros rx_latest = 0;             // when the latest data frame was delivered (ACK delay)
    PathId ack_path = kAnyPath;       // where the latest data came from
    std::uint8_t ack_slot = kNoSlot;  // its slot (paths never move once added)
};

// A resting peer's record (see channel.hpp, resting peers): with malloc's
// header 64 B.
inline constexpr Micros kRestRttUnit = 16;  // us: 1 s fits 16 bits
struct ReliableChannel::Resting {
    std::uint32_t next_seq = 0;   // ours to it
    std::uint32_t rx_cum = 0;     // its to us: every seq <= rx_cum arrived
    std::uint32_t probe_ids = 0;  // so that a late PROBE_ACK answers no new probe
    bool listed_active = false;   // its id is still in active_ (pruned by flush_acks)
    // The slowest path's smoothed RTT, in units of kRestRttUnit rounded up
    // (0: none), the first sample of every path's estimate when it wakes:
    // its first loss is not recovered at initial_rtt's pace.
    std::uint16_t rtt_units = 0;
    // The traffic counters every peer has; the others are zero, or all of
    // them are in `all` (a peer that saw trouble: resends, lost paths, ...).
    std::uint64_t frames_sent = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t frames_delivered = 0;
    std::uint64_t bytes_delivered = 0;
    std::unique_ptr<PeerCounters> all;
};

struct ReliableChannel::Output {
    enum class Kind : std::uint8_t {
        Transmit,
        Ack,
        Nack,
        Probe,  // ref.seq: the probe id; retransmit: it is the answer (PROBE_ACK)
        Bye,
        PathFailed,
        PeerDead,
        Acked,
        Abandoned,
    };
    Kind kind = Kind::Transmit;
    bool retransmit = false;
    PeerId peer = 0;
    PathId path = 0;
    FrameRef ref;
    AckInfo ack;
    Micros now = 0;  // Transmit: when it was decided (for an inline completion)
};

// The implementation's helpers, shared by the channel's .cpp files: the state
// machines, path choice and timer dispatch (channel.cpp), the sender
// (channel_send.cpp) and the receiver (channel_recv.cpp).
struct ReliableChannel::Ops {
    using Ch = ReliableChannel;
    using Kind = Output::Kind;

    // Per-ACK scratch: what the ACK newly acknowledged. max_tx[i] is set
    // only for the slots in `progressed` (left uninitialised otherwise: this
    // runs for every acknowledgement).
    struct AckScan {
        bool any = false;
        bool probe_due = false;  // a Suspect path went idle: probe it
        Micros now = 0;
        std::uint32_t highest = 0;
        std::uint32_t progressed = 0;  // path slots with newly acked frames (not mixed)
        std::array<std::uint64_t, kMaxPathsPerPeer> max_tx;
        // The RTT sample: the newly acked frame sent once and last of all.
        std::uint8_t sample_slot = kNoSlot;
        std::uint64_t sample_order = 0;
        Micros sample_sent = 0;
    };

    enum class AckCheck { Ok, Stale, Bad };

    static void emit(Ch& ch, Kind kind, PeerId peer, PathId path = 0, FrameToken token = 0) {
        Output o;
        o.kind = kind;
        o.peer = peer;
        o.path = path;
        o.ref.token = token;
        ch.queue_.push_back(o);
    }

    // --- paths, state machines, timers (channel.cpp)

    // Makes the first Standby path Alive (kNoSlot: none): fail_path() left
    // no other.
    static std::uint8_t promote_standby(Ch& ch, Peer& p);
    // A path that is not a standby one works again: promoted standby paths
    // go back to standing by (their unacked frames stay covered).
    static void demote_standby(Ch& ch, Peer& p);
    static void set_state(Ch& ch, Peer& p, PathSlot& pa, PathState to, const char* reason);
    static bool set_state(Ch& ch, Peer& p, PeerState to, const char* reason);
    static void set_state(Ch& ch, Peer& p, TxFrame& f, FrameState to, const char* reason) {
        if (!transition_allowed(f.state, to)) {
            illegal(ch, p, f, to, reason);
            return;
        }
        if (ch.trace_)
            traced(ch, p, f, to, reason);
        f.state = to;
    }
    static void illegal(Ch& ch, const Peer& p, const TxFrame& f, FrameState to, const char* reason);
    static void traced(Ch& ch, const Peer& p, const TxFrame& f, FrameState to, const char* reason);
    // Alive <-> Suspect follows the retry counters.
    static void refresh(Ch& ch, Peer& p, PathSlot& pa, const char* reason);
    static Micros deadline(const Ch& ch, const Peer& p) noexcept;
    // A deadline of the peer was just set to d: its timer entry must fire
    // no later than d. The hot paths call this instead of reschedule(),
    // which recomputes every deadline: the entry is kept at or before the
    // earliest deadline, later deadlines are found when it fires.
    static void due_by(Ch& ch, Peer& p, Micros d);
    static void fire(Ch& ch, Peer& p, Micros now);
    static void defer_after_absence(Ch& ch, Peer& p, Micros due, Micros now);
    static Micros dead_at(const Ch& ch, const Peer& p) noexcept;

    // --- sender (channel_send.cpp)
    // add_frame, record_transmit and move_frame (and data, delivered on the
    // receiving side) are defined always_inline: a first transmission and an
    // in-order arrival each run as one function, without the calls' register
    // saves (callgrind, 8 B messages over vader with the full protocol: about
    // 75 instructions less per message sent, 15 less per message received).

    // True when the path went idle while Suspect (a PROBE is due).
    static bool leave_path(Peer& p, std::uint8_t slot, Micros now) noexcept;
    // The path's PTO at its current back-off.
    static Micros pto_of(const Ch& ch, const Peer& p, const PathSlot& pa) noexcept;
    static bool window_room(Ch& ch, Peer& p);
    static std::uint32_t add_frame(Ch& ch, Peer& p, std::uint8_t slot, FrameToken token, Micros now,
                                   std::size_t bytes, bool owed);
    static void move_frame(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now);
    static bool transmit(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now,
                         bool retransmit);
    // transmit() is record_transmit() (the channel's state) then
    // queue_transmit() (the output); submit's direct path hands the frame
    // over itself instead of queueing it.
    // cover: the path's PTO timer takes the frame over (false for a probe
    // copy on another path, which leaves it with the stalled one).
    static void record_transmit(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now,
                                bool retransmit, bool owed = true, bool cover = true);
    // One more completion owed on `slot` for f, under the watchdog.
    static void owe_completion(Ch& ch, Peer& p, TxFrame& f, std::uint8_t slot, Micros now);
    static void queue_transmit(Ch& ch, const Peer& p, const TxFrame& f, std::uint8_t slot,
                               Micros now, bool retransmit);
    static void release_if_done(Ch& ch, Peer& p, TxFrame& f);
    // An acknowledged frame no BTL holds any more: free its slot, tell the glue.
    static void release(Ch& ch, Peer& p, TxFrame& f, const char* reason);
    // A frame went out inline on `slot` (transmit() said done): its owed
    // completion is settled at once.
    static void sent_inline(Ch& ch, PeerId peer, std::uint8_t slot, FrameRef ref, Micros now);
    // The BTL finished a transmission of `ref` on path `slot` (on_local_complete).
    static void complete(Ch& ch, Peer& p, std::uint8_t slot, FrameRef ref, bool ok, Micros now);
    static void ack_frame(Ch& ch, Peer& p, std::uint32_t seq, AckScan& scan);
    static AckCheck check_ack(const Peer& p, const AckInfo& a) noexcept;
    // A checked ACK (or carried ack_seq): releases, RTT sample, timer
    // restarts, resends of what it shows lost. full_view: an ACK frame
    // (selective part included), not a carried ack_seq.
    static void apply_ack(Ch& ch, Peer& p, const AckInfo& ack, Micros now, bool full_view);
    // Applies what carried ack_seqs acknowledged and is not applied yet, as
    // of when it arrived.
    static void settle(Ch& ch, Peer& p);
    // The peer has a frame of ours to acknowledge or we owe it an ACK: list
    // it in active_ (pruned by flush_acks once neither holds).
    // ack_carried() for a peer already found.
    static void carried_by_frame(Peer& p, std::uint32_t ack_seq) noexcept;
    static void mark_active(Ch& ch, Peer& p) {
        if (!p.active) {
            p.active = true;
            ch.active_.push_back(p.id);
            mark_talked(ch, p);
        }
    }
    static void mark_talked(Ch& ch, Peer& p) {
        if (!p.talked) {
            p.talked = true;
            ch.talked_.push_back(p.id);
        }
    }
    // Both BYEs are through: nothing more goes to the peer (channel_leave.cpp).
    static bool gone(const Peer& p) noexcept { return p.leave == LeaveState::Left; }
    static void set_state(Ch& ch, Peer& p, LeaveState to, const char* reason);
    // When the peer's send window is freed (kNever: not allocated, or a
    // frame holds a slot).
    static Micros window_release_at(const Ch& ch, const Peer& p) noexcept;
    // When the peer goes to rest (kNever: something keeps it awake; see
    // channel.hpp, resting peers; channel_rest.cpp).
    static Micros rest_at(const Ch& ch, const Peer& p) noexcept;
    // A peer made again (add_peer) carries on from its rest record, if any.
    static void wake(Ch& ch, Peer& p);
    // Our BYE, if nothing holds it back any more (see leave()).
    static void try_bye(Ch& ch, Peer& p, Micros now);
    static void fail_path(Ch& ch, Peer& p, std::uint8_t slot, Micros now, const char* reason);
    static void kill(Ch& ch, Peer& p, const char* reason);
    static void ack_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now);
    static void probe_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now);
    // One more unanswered PTO or PROBE on `slot`: past ack_retries it fails
    // the path if the peer was heard elsewhere since the last probe (true:
    // failed), else counts a silent expiry.
    static bool count_expiry(Ch& ch, Peer& p, std::uint8_t slot, Micros now);
    // An RTT sample for the path, reflected in its counters.
    static void rtt_sample(Ch& ch, const Peer& p, PathSlot& pa, Micros sent, Micros now,
                           Micros ack_delay);
    static void send_probe(Ch& ch, Peer& p, PathSlot& pa, Micros now);
    // Traffic again after probes_paused: re-arms the paused probe timers.
    static void resume_probes(Ch& ch, Peer& p, Micros now);
    // Loss by RACK: frames sent on a path before one it delivered (paths are FIFO).
    static bool resend_lost(Ch& ch, Peer& p, const AckScan& scan, std::uint32_t from,
                            std::uint32_t end, Micros now);
    static void watchdog_expired(Ch& ch, Peer& p, std::uint8_t slot, Micros now);

    // --- receiver (channel_recv.cpp)

    static void carried(Ch& ch, Peer& p, std::uint32_t ack_seq, Micros now);
    static Verdict data(Ch& ch, Peer& p, PathId path, std::uint32_t seq, Micros now,
                        std::size_t bytes, AckTiming timing);
    // A first arrival's accounting and ACK scheduling, once recorded.
    static Verdict delivered(Ch& ch, Peer& p, Micros now, std::size_t bytes, AckTiming timing);
    static void mark_dirty(Ch& ch, Peer& p, std::uint32_t vfrag, Micros now);
    // credit_answer: the ACK answers a credit-starved frame (answer_credit).
    static void flush_acks(Ch& ch, Peer& p, Micros now, bool credit_answer = false);
};

}  // namespace pml::dr::core
