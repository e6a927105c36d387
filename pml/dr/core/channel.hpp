// The reliability channel of pml dr, sans I/O: per-peer frame sequence
// numbers, ACK/NACK, retransmission, duplicate suppression, failover between
// paths and peer-death detection. It sits under the engine: every data frame
// (MATCH, RNDV, CTS, FRAG, CREDIT) to a peer gets a per-peer `frame_seq`;
// ACK frames themselves are unsequenced (frame_seq 0).
//
// Frames are opaque to the channel: the glue hands in a FrameToken (u64) and
// owns the bytes. The channel decides the seq, when to (re)send and on which
// path, and tells the glue through ChannelOutput. No clocks (time `now` comes
// in with every call), no threads, no exceptions, no Open MPI.
//
// Vocabulary (DESIGN.md §4):
//   frame  one BTL send, identified per peer by its frame_seq (u32, from 1)
//   vfrag  64 consecutive seqs aligned on 64: vfrag id = seq / 64 (absolute,
//          so both ends agree without negotiation; 2^32 is a multiple of 64,
//          so the mapping survives wrap). One ACK reports one vfrag.
//   path   peer x BTL module, the glue's PathId
//
// Sequence space: seq 0 means "no seq" on the wire, so it is never assigned:
// after 0xFFFFFFFF comes 1. The receiver treats seq 0 as having arrived
// (cumulative ack steps over it), the sender never has a frame with seq 0.
// All comparisons go through plugin::common::seq_* (wrap-safe).
//
// Sender (per peer):
//   - a window of at most `window` frames not yet released (a frame is
//     released once acknowledged by the peer AND every local completion the
//     BTL owes for it came back); submit() reports WindowFull beyond that and
//     the glue queues.
//   - ACK {cum_seq, sack_base, sack_mask}: every seq <= cum arrived, bit i of
//     the mask: seq sack_base + i arrived (sack_base is a vfrag base).
//   - NACK: a frame still unacked below the highest seq an ACK newly
//     acknowledges is resent at once, but only if a frame transmitted *later on
//     the same path* was among those newly acknowledged (a RACK-style guard: it
//     keeps striping over several paths and reordering from causing spurious
//     resends, and resends a lost resend only once something sent after it
//     got through).
//   - NACK frame (the receiver saw the frame's payload damaged): the frame
//     is resent at once, on its path unless that path still owes its
//     completion or failed.
//   - loss recovery per path (recovery.hpp, RFC 9002 / RFC 8985): an RTT
//     estimator fed by acknowledged frames sent once (srtt, rttvar, min;
//     ACK frames report how long the peer held them and its bound on that),
//     and a probe timeout PTO = srtt + max(4 rttvar, granularity) + the
//     peer's max ACK delay, armed while the path has unacked frames,
//     restarted on progress, doubled per consecutive expiry, capped at
//     ack_timeout. On expiry a PROBE goes on the path; the peer answers
//     with its ACK, then a PROBE_ACK, on that path, and every frame sent
//     there before the probe and still unacknowledged is resent (FIFO: it
//     was lost). A peer that only did not call MPI for a while costs a
//     header, not a resend. From the second expiry on a copy of the oldest
//     frame also goes on another usable path, which the peer answers if it
//     is alive. A frame sent on several paths credits none of them when
//     acknowledged ("mixed").
//   - a path with an expiry unanswered is Suspect: new frames avoid it
//     while an Alive path exists; when it goes idle it is probed with a
//     PROBE frame (answered by PROBE_ACK on the same path) every PTO. The
//     (ack_retries+1)-th consecutive expiry fails it if the peer was heard
//     on another live path since the previous probe: the peer is alive and
//     this path does not reach it. Heard nowhere, the path stays, probing
//     at the longest back-off (silent_expiries): a peer that computes
//     outside MPI, where nothing acknowledges, sounds the same as a dead
//     network, and only peer_dead_timeout gives up on it.
//   - a Failed path is probed with PROBE frames every probe_interval,
//     doubled per unanswered probe up to probe_max; a PROBE_ACK re-admits
//     it (Failed -> Alive, paths_readmitted) and new traffic spreads over
//     it again. Each end probes the paths it failed itself.
//   - watchdog per path for local completion (the BTL's des_cbfunc): armed
//     while completions are outstanding on the path, restarted by any
//     completion; the (watchdog_retries+1)-th expiry fails the path. A frame
//     is never handed to a path that still owes its completion for that frame
//     (so the BTL never holds two descriptors for one frame).
//   - path failed (PTO expiries as above, watchdog, a completion with error,
//     or remove_path()): every unacked frame on it is re-driven on the next
//     live path (round-robin order after the failed one); no live path left
//     -> the peer is dead.
//   - peer dead also when the peer has unacked frames and acknowledged nothing
//     for peer_dead_timeout.
//   - path choice for new frames: the glue's hint when that path is
//     preferred (Alive, or Suspect with no Alive path: the glue keeps its
//     BML weighting), otherwise round-robin over the peer's paths, Alive
//     before Suspect ones.
//   - standby paths (add_path(..., standby = true): a BTL that reaches the
//     peer but that the BML left out) carry nothing while another path is
//     Alive or Suspect. When fail_path() leaves none, the first standby path
//     added (the glue adds them best first) becomes Alive at once and the
//     failed path's frames are re-driven onto it; no standby left either ->
//     the peer is dead. A standby path still takes arrivals and ACKs (the
//     peer may have promoted its end).
//
// Receiver (per peer):
//   - cumulative seq + a ring bitmap of `window` bits for the seqs after it:
//     memory is bounded, a seq at or below cum or with its bit set is a
//     duplicate (re-acked at once: the earlier ACK may be lost, never
//     re-delivered); a seq more than `window` ahead is dropped unacked (an
//     honest sender never gets there; a later resend lands in the window).
//   - every frame to the peer carries the cumulative seq (ack_seq); when a
//     data frame leaves with the current one and nothing arrived out of order,
//     no ACK frame is owed (request/reply traffic sends no ACK frames).
//   - ACKs coalesce: after `ack_every` delivered frames or `ack_delay` after
//     the first unacked one, at once for a frame the sender marked ack_now,
//     right after the engine took it for a credit-starved one (answer_credit)
//     and for the first arrival past a gap (the sender resends the hole
//     without waiting); one ACK per vfrag that saw arrivals above cum (a
//     bare cumulative ACK when there is none); sent on the path the latest
//     data came on (another live path if the channel declared that one
//     failed).
//
// Output discipline: outputs are queued and handed to ChannelOutput at the end
// of the outermost public call, after the channel's state is consistent. The
// output's methods may call back into the channel (submit from acked(),
// on_local_complete from inside transmit(), ...); such nested calls act at once
// and their outputs join the same queue. Consequently transmit() for a frame
// may run before submit() has returned its seq: FrameRef carries it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config.hpp"
#include "log.hpp"
#include "matching.hpp"
#include "recovery.hpp"
#include "time.hpp"

namespace pml::dr::core {

using plugin::common::Micros;

using PathId = std::uint64_t;      // the glue's id of a (peer, BTL module)
using FrameToken = std::uint64_t;  // the glue's handle of a frame's bytes

inline constexpr PathId kAnyPath = ~PathId{0};
inline constexpr std::uint32_t kVfragFrames = 64;  // width of the ACK bitmask
inline constexpr unsigned kMaxPathsPerPeer = 32;   // per-frame path bitmasks are u32

struct FrameRef {
    std::uint32_t seq = 0;
    FrameToken token = 0;
    friend bool operator==(const FrameRef&, const FrameRef&) = default;
};

// The payload of an ACK frame (wire.hpp AckHdr). sack_mask == 0 means "no
// selective part"; sack_base is then 0.
struct AckInfo {
    std::uint32_t cum_seq = 0;
    std::uint32_t sack_base = 0;
    std::uint64_t sack_mask = 0;
    // How long the receiver held this ACK after the latest arrival it
    // covers, and its bound on that (its ack_delay); the sender takes the
    // first out of RTT samples and adds the second to its PTO. Carried acks
    // (a data frame's ack_seq) have neither.
    Micros delay = 0;
    Micros max_delay = 0;
    // The engine's eager-credit report for the peer (AckCredit), filled in
    // when the ACK goes out; credit_answer: sent by answer_credit().
    std::uint64_t released_total = 0;
    bool credit_answer = false;
    friend bool operator==(const AckInfo&, const AckInfo&) = default;
};

// When a delivered frame is acknowledged: coalesced (ack_every, ack_delay),
// at once (the sender waits on it), or held for answer_credit() (the
// engine's answer to a credit-starved frame, which must follow its
// delivery; ack_delay still bounds it).
enum class AckTiming : std::uint8_t { Delayed, Now, Held };

// What ACK frames carry besides acknowledgements: the eager-credit report
// of the engine (ReliableEngine wires it in). Read as each ACK goes out.
class AckCredit {
  public:
    virtual ~AckCredit() = default;
    // Cumulative eager bytes of `peer` released; now reported to it.
    virtual std::uint64_t report_credit(PeerId peer) = 0;
};

enum class Verdict : std::uint8_t {
    Deliver,    // first arrival: hand the frame to the engine
    Duplicate,  // seen before: drop it (it was re-acked)
    Drop,       // not acceptable now (too far ahead, seq 0, unknown or dead peer)
};
std::string_view to_string(Verdict v) noexcept;

enum class SubmitStatus : std::uint8_t { Ok, WindowFull, NoPath, PeerDead, UnknownPeer };
std::string_view to_string(SubmitStatus s) noexcept;

struct SubmitResult {
    SubmitStatus status = SubmitStatus::UnknownPeer;
    std::uint32_t seq = 0;  // valid when ok()
    [[nodiscard]] bool ok() const noexcept { return status == SubmitStatus::Ok; }
};

// What check_submit_on() found: the answer, the seq the frame will get, the
// cumulative ack it carries, and (for submit_checked(), opaque to the
// caller) the path's slot.
struct SubmitCheck {
    SubmitStatus status = SubmitStatus::UnknownPeer;
    std::uint32_t seq = 0;  // valid when ok()
    std::uint32_t ack = 0;  // ack_seq() now, valid when ok()
    std::uint8_t slot = 0xFF;
    [[nodiscard]] bool ok() const noexcept { return status == SubmitStatus::Ok; }
};

// State machines (house style: enum class + name table + one checked
// transition() that logs `old -> new (reason)`).
enum class PathState : std::uint8_t {
    Alive,    // usable, no unanswered timer expiry
    Suspect,  // a PTO or watchdog expired unanswered; avoided while an Alive path exists
    Failed,   // carries nothing but PROBEs until one is answered (or add_path())
    Standby,  // usable, but chosen only once no Alive or Suspect path is left
};
// Whether the channel puts new frames on a path in this state.
constexpr bool carries_traffic(PathState s) noexcept {
    return s == PathState::Alive || s == PathState::Suspect;
}
enum class PeerState : std::uint8_t { Alive, Dead };
enum class FrameState : std::uint8_t {
    Free,      // slot unused, or the frame was released
    InFlight,  // sent (or queued to be sent), not acknowledged
    Acked,     // acknowledged, waiting for outstanding local completions
};
// Finalize's BYE exchange with one peer (ReliableChannel::leave()).
enum class LeaveState : std::uint8_t {
    Staying,      // no BYE either way
    ByeSent,      // ours went, the peer's has not come
    ByeReceived,  // the peer's came, ours has not gone
    Left,         // both: nothing more goes to the peer
};
std::string_view to_string(PathState s) noexcept;
std::string_view to_string(PeerState s) noexcept;
std::string_view to_string(LeaveState s) noexcept;
std::string_view to_string(FrameState s) noexcept;
bool transition_allowed(PathState from, PathState to) noexcept;
bool transition_allowed(PeerState from, PeerState to) noexcept;
bool transition_allowed(LeaveState from, LeaveState to) noexcept;
// Inline: every frame makes two or three of these transitions.
constexpr bool transition_allowed(FrameState from, FrameState to) noexcept {
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

struct ChannelParams {
    // frames per peer in flight; power of two, 64..4096; both ends equal
    unsigned window = defaults::kWindow;
    // Delivered frames that trigger an ACK frame at once (channel_params: a
    // quarter of the window). Over tcp an ACK frame costs a system call on each
    // side; a frame going back carries the same cumulative ack for nothing.
    unsigned ack_every = defaults::kWindow / 4;
    unsigned settle_every = 16;  // carried acks are applied in batches of this many frames
    Micros ack_delay = defaults::kAckDelay;  // longest an arrival waits for its ACK
    // Loss recovery (recovery.hpp): the cap of a backed-off PTO, and the
    // consecutive expiries a path survives while the peer answers elsewhere.
    Micros ack_timeout = defaults::kAckTimeout;
    unsigned ack_retries = defaults::kAckRetries;
    Micros initial_rtt = 10 * plugin::common::kMillis;  // before the first sample
    Micros granularity = 200;                           // floor of the PTO's variance term
    Micros probe_interval = defaults::kProbeInterval;   // first re-admission probe
    Micros probe_max = defaults::kProbeMax;             // longest between them
    Micros watchdog_timeout = defaults::kWatchdogTimeout;
    unsigned watchdog_retries = defaults::kWatchdogRetries;
    Micros peer_dead_timeout = defaults::kPeerDeadTimeout;
    // A peer's send window (window x 40 B) is freed once nothing holds a slot
    // and nothing was sent or acknowledged for this long; the next submit
    // allocates it again. A peer quiet both ways for this long, all of it
    // acknowledged, its paths working, goes to rest (see ReliableChannel).
    Micros window_idle_release = 1 * plugin::common::kSeconds;
    unsigned max_paths = 8;       // per peer, 1..kMaxPathsPerPeer
    std::uint32_t first_seq = 1;  // != 0; both ends equal (tests start near the wrap)
};

// Timer/retry values and the window from the validated Config; the rest keep their defaults.
ChannelParams channel_params(const Config& config) noexcept;
// The loss-recovery part of the parameters.
recovery::Params recovery_params(const ChannelParams& params) noexcept;
// Empty on success, otherwise what is wrong.
std::string validate(const ChannelParams& params);

struct PathCounters {
    std::uint64_t frames_sent = 0;  // transmissions, resends included
    std::uint64_t bytes_sent = 0;
    std::uint64_t retransmits = 0;
    std::uint64_t frames_received = 0;  // delivered data frames that came on this path
    std::uint64_t bytes_received = 0;
    std::uint64_t acks_sent = 0;
    std::uint64_t acks_received = 0;
    std::uint64_t ack_timeouts = 0;  // PTO expiries that sent a probe
    // expiries past ack_retries that kept the path: the peer was silent on every path
    std::uint64_t silent_expiries = 0;
    std::uint64_t probes_sent = 0;       // PROBE frames (idle Suspect or Failed path)
    std::uint64_t paths_readmitted = 0;  // Failed -> Alive on an answered PROBE
    std::uint64_t rtt_samples = 0;
    Micros srtt = 0;  // the estimator's current values (0: no sample yet)
    Micros rttvar = 0;
    Micros min_rtt = 0;
    std::uint64_t watchdog_timeouts = 0;
    std::uint64_t local_errors = 0;  // completions with error
    std::uint64_t redriven = 0;      // frames moved off this path when it failed
    std::uint64_t failures = 0;      // times this path was declared failed
};

struct PeerCounters {
    // sender
    std::uint64_t frames_submitted = 0;
    std::uint64_t frames_sent = 0;  // transmissions, resends included
    std::uint64_t bytes_sent = 0;
    std::uint64_t retransmits = 0;       // = nack + timeout + failover resends
    std::uint64_t nack_retransmits = 0;  // holes below a later ACKed frame, and NACK frames
    std::uint64_t timeout_retransmits = 0;
    std::uint64_t failover_retransmits = 0;
    std::uint64_t frames_acked = 0;
    std::uint64_t frames_abandoned = 0;  // unacked when the peer died or was removed
    std::uint64_t window_full = 0;       // submit() answered WindowFull
    std::uint64_t acks_received = 0;
    std::uint64_t carried_acks = 0;  // ack_seqs of the peer's data frames that acked something
    std::uint64_t dup_acks = 0;      // valid but acknowledging nothing new
    std::uint64_t stale_acks = 0;    // cum_seq below one already seen (reordered)
    std::uint64_t bad_acks = 0;      // acknowledging seqs never sent, misaligned sack_base
    std::uint64_t nacks_received = 0;
    std::uint64_t stale_nacks = 0;  // for frames no longer unacknowledged
    std::uint64_t ack_timeouts = 0;
    std::uint64_t silent_expiries = 0;  // see PathCounters
    std::uint64_t absences = 0;         // timers found a PTO late (away from MPI): deferred once
    std::uint64_t watchdog_timeouts = 0;
    std::uint64_t local_errors = 0;
    std::uint64_t stale_completions = 0;  // for frames/paths the channel no longer tracks
    std::uint64_t failovers = 0;          // path failures that re-drove frames elsewhere
    std::uint64_t paths_lost = 0;
    std::uint64_t probe_retransmits = 0;  // PTO probe copies sent on another path
    std::uint64_t probes_sent = 0;        // PROBE frames
    std::uint64_t paths_readmitted = 0;
    std::uint64_t stale_probes = 0;        // PROBE_ACKs answering no probe of ours
    std::uint64_t standby_promotions = 0;  // standby paths made Alive: no other path was left
    // finalize (leave())
    std::uint64_t byes_sent = 0;
    std::uint64_t byes_received = 0;
    std::uint64_t unsent_after_leave = 0;  // ACKs, NACKs, PROBEs not sent: the peer left
    std::uint64_t windows_released = 0;    // send windows freed after an idle period
    // receiver
    std::uint64_t frames_delivered = 0;
    std::uint64_t bytes_delivered = 0;
    std::uint64_t duplicates_dropped = 0;
    std::uint64_t too_far_dropped = 0;
    std::uint64_t bad_seq = 0;  // data with frame_seq 0
    std::uint64_t acks_sent = 0;
    std::uint64_t acks_carried = 0;  // ACKs made unnecessary by a data frame's ack_seq
    std::uint64_t acks_unsent = 0;   // no usable path to send an ACK on
    std::uint64_t nacks_sent = 0;    // damaged arrivals reported at once

    bool operator==(const PeerCounters&) const = default;
};

// How many peers went to rest and woke again (see ReliableChannel, resting
// peers), and the counters of rested peers that their rest records do not
// keep (what every healthy peer accrues: ACKs, acknowledged frames, ...):
// per-peer counters plus these give the process's totals.
struct RestCounters {
    std::uint64_t rests = 0;
    std::uint64_t wakes = 0;
    PeerCounters folded;
};

// A path the glue offers for a peer the channel has no state for yet (see
// ChannelOutput::offer_paths).
struct PathOffer {
    PathId path = 0;
    bool standby = false;  // as add_path(peer, path, standby)
};

class ChannelOutput {
  public:
    virtual ~ChannelOutput() = default;
    // The paths to `peer`, for which add_peer() was never called: the
    // channel makes a peer's state (about 1 KB with one path) only when it
    // is first sent to or heard from, and asks here what add_path() would
    // have been told. Nothing offered (the default): the peer stays unknown.
    virtual void offer_paths(PeerId /*peer*/, std::vector<PathOffer>& /*out*/) {}
    // Put frame `ref` (stamped with ref.seq) on `path`. True: the BTL is
    // already done with it (a send that completed inline, like sendi), which
    // stands for on_local_complete(peer, path, ref, ok = true). False: the
    // call is owed one on_local_complete(peer, path, ref, ...) unless the
    // path fails first.
    virtual bool transmit(PeerId peer, PathId path, FrameRef ref, bool retransmit) = 0;
    // Send an (unsequenced) ACK frame on `path`. No completion is expected.
    virtual void send_ack(PeerId peer, PathId path, const AckInfo& ack) = 0;
    // Send an (unsequenced) NACK for the peer's frame `seq` on `path`.
    virtual void send_nack(PeerId peer, PathId path, std::uint32_t seq) = 0;
    // Send an (unsequenced) PROBE (reply: PROBE_ACK) with `id` on `path`,
    // also when the channel declared that path failed.
    virtual void send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) = 0;
    // Send an (unsequenced) BYE on `path` (finalize, see leave()).
    virtual void send_bye(PeerId peer, PathId path) = 0;
    // The channel stopped using `path` (emitted for remove_path() too). Later
    // completions from it are ignored; buffers the BTL may still hold are the
    // glue's business.
    virtual void path_failed(PeerId peer, PathId path) = 0;
    // Every abandoned()/acked() of the peer's frames precedes this; the peer's
    // pending and future requests must fail.
    virtual void peer_dead(PeerId peer) = 0;
    // The frame is acknowledged by the peer and no BTL owes a completion for it:
    // its resources (retransmit copy, borrowed user buffer) can be released.
    virtual void acked(PeerId peer, FrameToken token) = 0;
    // The frame will never be acknowledged (peer dead or removed).
    virtual void abandoned(PeerId peer, FrameToken token) = 0;
};

class ReliableChannel {
  public:
    // `params` must pass validate() (otherwise the defaults are used, logged).
    ReliableChannel(const ChannelParams& params, ChannelOutput& out,
                    plugin::common::LogSink& log = plugin::common::NullLogSink::instance());
    ~ReliableChannel();
    ReliableChannel(const ReliableChannel&) = delete;
    ReliableChannel& operator=(const ReliableChannel&) = delete;

    // --- peers and paths (from the glue's add_procs / BTL error callbacks).
    // A peer is made by add_peer(), or on its first use from what the
    // output offers (ChannelOutput::offer_paths): a submit, an arrival from
    // it, a PROBE or damaged frame from it, a path of it removed, its death
    // declared, or ensure_peer().
    //
    // Resting peers: a peer made from the output's offer that talked to us
    // and was quiet both ways for window_idle_release (everything
    // acknowledged, no ACK owed, no path Suspect or Failed, no probe out,
    // not leaving) gives up its state (about 900 B with one path, plus its
    // window) for a rest record of 64 B: the sequence numbers of both
    // directions, its slowest path's RTT and its counters (the traffic ones;
    // all of them if it saw trouble; the routine ones are folded into
    // rest_counters()). Its next use, a BYE from it or leave() makes its
    // state again from the output's offer, carrying on its sequences, every
    // path's RTT estimate starting from the one kept. Until then
    // it reads as a peer without state (has_peer() false, no path, nothing
    // unacknowledged) except for peer_state() (Alive), left() (false) and
    // counters_of().
    void add_peer(PeerId peer);
    // The peer's state, made now from the output's offer if there is none
    // yet. False: unknown (nothing offered).
    bool ensure_peer(PeerId peer);
    // Forget a peer without declaring it dead (finalize): its unreleased frames
    // are reported acked (if acknowledged) or abandoned.
    void remove_peer(PeerId peer);
    // false: unknown or dead peer, or max_paths reached. Re-adding a failed
    // path revives it. standby: a path kept for failover only (see above);
    // added while the peer has no Alive or Suspect path, it is Alive at once.
    // A path already Alive or Suspect stays so; a standby one re-added with
    // standby = false becomes Alive.
    bool add_path(PeerId peer, PathId path, bool standby = false);
    // The BTL reported an error: fail the path now and re-drive its frames.
    void remove_path(PeerId peer, PathId path, Micros now);
    // The BTL itself is gone: remove_path() for every peer that has state
    // (the output must not offer the path to the others any more).
    void remove_path_everywhere(PathId path, Micros now);
    // Something outside the channel (the runtime) knows the peer is dead:
    // as when its last path fails, what it has not acknowledged is abandoned
    // and peer_dead() follows. Unknown or dead peers: nothing happens.
    void declare_dead(PeerId peer, const char* reason);

    // --- sender
    SubmitResult submit(PeerId peer, FrameToken token, Micros now, std::size_t bytes = 0,
                        PathId hint = kAnyPath);
    [[nodiscard]] bool can_submit(PeerId peer) const noexcept;
    // submit() for a caller that puts the frame on `path` itself, at once,
    // the way a BTL's sendi does: recorded as transmitted and done, nothing
    // handed to ChannelOutput::transmit() and no completion owed (the hot
    // path makes no round trip through the channel's outputs). If the
    // transmission turns out not to be done at once (the caller posts a
    // descriptor, or fails), the caller first calls expect_completion(),
    // then reports on_local_complete() as for any transmission. NoPath when
    // `path` is not usable (the caller may submit() to let the channel choose).
    SubmitResult submit_on(PeerId peer, PathId path, FrameToken token, Micros now,
                           std::size_t bytes = 0);
    // What submit_on(peer, path, ...) would answer now, recording nothing
    // (seq: the one it would assign). A caller whose transmission cannot
    // come back into the channel before it returns (no BTL that delivers
    // inside its send) may transmit first and submit_on() right after: the
    // bookkeeping then leaves the path from the send to the wire.
    SubmitCheck check_submit_on(PeerId peer, PathId path);
    // submit_on() of the frame `check` allowed, without checking again, and
    // ack_carried(peer, check.ack): the frame carries that ack. If anything
    // was submitted to the peer in between (the seq moved on), it is a plain
    // submit_on().
    SubmitResult submit_checked(PeerId peer, PathId path, const SubmitCheck& check,
                                FrameToken token, Micros now, std::size_t bytes = 0);
    // The transmission of `ref` on `path` just recorded by submit_on() will
    // report its completion (on_local_complete), under the watchdog.
    void expect_completion(PeerId peer, PathId path, FrameRef ref, Micros now);
    // The seq the next successful submit() to `peer` will assign (0: unknown
    // peer), so a frame can be encoded with it and need no restamping.
    [[nodiscard]] std::uint32_t next_seq(PeerId peer) const noexcept;
    // The BTL finished with a transmission of `ref` on `path` (ok=false: it
    // failed, which fails the path).
    void on_local_complete(PeerId peer, PathId path, FrameRef ref, bool ok, Micros now);
    void on_ack(PeerId peer, PathId path, const AckInfo& ack, Micros now);
    // The cumulative ack_seq every frame from the peer carries (wire.hpp).
    // Not newer than what is known: nothing happens (the usual case). It is
    // only recorded here: what it acknowledges is applied by settle_batches()
    // once settle_every frames are due, and before anything that depends on it:
    // timers, a full window, path failure, flush_acks(), remove_peer().
    void on_carried_ack(PeerId peer, PathId path, std::uint32_t ack_seq, Micros now);
    // Applies the carried acks of every peer with a batch of settle_every due.
    // The glue calls it after handing a frame to a BTL and from progress: the
    // release then runs off the path from an arrival to its delivery and to
    // the reply, where it would cost about as much as the rest together.
    void settle_batches();
    // Whether settle_batches() has something to do.
    [[nodiscard]] bool batches_due() const noexcept { return !batch_due_.empty(); }
    // Applies now what the peer's carried acks acknowledged: a request is
    // about to wait on it (the CTS that answered its RNDV acknowledged it).
    void settle_carried(PeerId peer);
    // The peer got our frame `seq` damaged: resend it now (if still unacked).
    void on_nack(PeerId peer, PathId path, std::uint32_t seq, Micros now);
    // A PROBE arrived on `path`: answered with a PROBE_ACK on the same path.
    void on_probe(PeerId peer, PathId path, std::uint32_t id, Micros now);
    // The answer to our PROBE `id` on `path`: the path works both ways
    // (Suspect -> Alive, Failed -> Alive: re-admitted).
    void on_probe_ack(PeerId peer, PathId path, std::uint32_t id, Micros now);

    // --- receiver: a data frame with `seq` arrived intact on `path`.
    // timing: see AckTiming (Now: the sender waits on this frame's ACK, the
    // last frame of a request).
    Verdict on_data(PeerId peer, PathId path, std::uint32_t seq, Micros now, std::size_t bytes = 0,
                    AckTiming timing = AckTiming::Delayed);
    // on_carried_ack(ack_seq) then on_data(seq), with one peer lookup: the
    // receive path of every sequenced frame.
    Verdict on_sequenced(PeerId peer, PathId path, std::uint32_t seq, std::uint32_t ack_seq,
                         Micros now, std::size_t bytes, AckTiming timing);
    // The engine took a frame flagged credit-starved (delivered with
    // AckTiming::Held): acknowledge now, the ACK marked as the answer.
    void answer_credit(PeerId peer, Micros now);
    // Where ACKs get their eager-credit report (nullptr: they carry 0).
    void set_ack_credit(AckCredit* credit) noexcept { ack_credit_ = credit; }
    // The ack_seq a frame to `peer` carries now: every seq up to it arrived.
    [[nodiscard]] std::uint32_t ack_seq(PeerId peer) const noexcept;
    // A frame carrying ack_seq() went to `peer`: when that is all an ACK
    // frame would say (nothing arrived out of order), none is owed any more.
    void ack_carried(PeerId peer, std::uint32_t ack_seq) noexcept;
    // Whether on_data(peer, ., seq) would deliver, without recording anything.
    [[nodiscard]] bool is_fresh(PeerId peer, std::uint32_t seq) const noexcept;
    // A data frame with `seq` arrived with a damaged payload (intact header):
    // NACK it unless it already arrived intact.
    void on_damaged(PeerId peer, PathId path, std::uint32_t seq, Micros now);

    // Sends every ACK still owed now instead of at its coalescing deadline
    // (finalize: the peer may be waiting for them before it leaves), and
    // applies every carried ack_seq not applied yet.
    // Visits only the peers in the active set (peers with sequenced traffic
    // since they were last found quiet) and drops from it those now quiet.
    void flush_acks(Micros now);
    // Peers that may owe or be owed ACKs (a superset right after flush_acks:
    // exactly those with frames unacknowledged or an ACK owed). Valid until
    // the next call into the channel.
    [[nodiscard]] std::span<const PeerId> active_peers() const noexcept { return active_; }
    // Peers flush_acks() looked at, ever (for tests of its cost).
    [[nodiscard]] std::uint64_t flush_visits() const noexcept { return flush_visits_; }

    // --- finalize: leaving without writing to a peer that already left.
    // Ranks leave MPI_Finalize's fence at different times, and a departed
    // rank's connections are closed: an ACK, PROBE or PROBE answer sent to
    // it then makes its BTL report a write error. So each side sends a BYE
    // (wire.hpp) to every peer it exchanged sequenced frames with, and to
    // every peer that sent one, once nothing of its own to that peer is
    // unacknowledged, no ACK is owed to it and no PROBE of its own on a live
    // path awaits an answer (the answer would come after the prober left).
    // After its BYE a side sends that peer nothing but ACKs of late frames;
    // once it has the peer's BYE too, the peer is left and is sent nothing
    // at all. A lost BYE costs the glue's bound on the wait.
    void leave(Micros now);
    // Sends what became due (owed ACKs, BYEs) and counts the peers not left
    // yet (dead peers count as left). The glue calls it until it is 0.
    std::size_t leaving(Micros now);
    void on_bye(PeerId peer, PathId path, Micros now);
    // We sent our BYE and have the peer's (or the peer is dead or unknown).
    [[nodiscard]] bool left(PeerId peer) const noexcept;

    // --- timers as data. next_deadline() may be earlier than anything is
    // due (a deadline that moved later is re-indexed lazily); on_timer() then
    // does nothing but look again.
    [[nodiscard]] Micros next_deadline() const noexcept;
    // Whether next_deadline() may have changed since the last call (most
    // arrivals and sends leave it alone: the glue then re-arms nothing).
    [[nodiscard]] bool take_timers_changed() noexcept {
        return std::exchange(timers_changed_, false);
    }
    // The earliest deadline actually pending (O(peers); for tests and checks).
    [[nodiscard]] Micros exact_deadline() const noexcept;
    void on_timer(Micros now);

    // --- observation
    [[nodiscard]] const ChannelParams& params() const noexcept { return params_; }
    [[nodiscard]] bool has_peer(PeerId peer) const noexcept;
    // Unknown peers read as Dead, unknown paths as Failed.
    [[nodiscard]] PeerState peer_state(PeerId peer) const noexcept;
    [[nodiscard]] PathState path_state(PeerId peer, PathId path) const noexcept;
    // Whether new traffic should use `path`: Alive, or Suspect while the
    // peer has no Alive path.
    [[nodiscard]] bool path_preferred(PeerId peer, PathId path) const noexcept;
    // The counters of a peer with state (nullptr: none; see counters_of).
    [[nodiscard]] const PeerCounters* counters(PeerId peer) const noexcept;
    // Its counters, resting or not (zeros: unknown).
    [[nodiscard]] PeerCounters counters_of(PeerId peer) const noexcept;
    [[nodiscard]] bool resting(PeerId peer) const noexcept {
        return peer < resting_.size() && resting_[peer] != nullptr;
    }
    [[nodiscard]] const RestCounters& rest_counters() const noexcept { return rest_counters_; }
    [[nodiscard]] const PathCounters* path_counters(PeerId peer, PathId path) const noexcept;
    [[nodiscard]] std::vector<PathId> paths(PeerId peer) const;
    // Paths to the peer not declared failed, standby ones included (0 for an
    // unknown or dead peer): with one, a frame can never be re-driven elsewhere.
    [[nodiscard]] std::size_t live_paths(PeerId peer) const noexcept;
    // Frames holding a window slot (unacked, or acked but owed a completion).
    [[nodiscard]] std::size_t unreleased(PeerId peer) const noexcept;
    [[nodiscard]] std::size_t unacked(PeerId peer) const noexcept;
    // Bytes of per-peer state: bounded by peers x (window, paths), independent
    // of how many frames were ever sent.
    [[nodiscard]] std::size_t memory_bytes() const noexcept;

  private:
    struct Peer;     // per-peer state (channel_internal.hpp)
    struct Resting;  // what a resting peer keeps (channel_internal.hpp)
    struct Output;
    struct Ops;  // the implementation's helpers (channel.cpp)

    // Inline: every entry starts here.
    Peer* find(PeerId peer) noexcept { return peer < peers_.size() ? peers_[peer].get() : nullptr; }
    // find(), or the peer made from the output's offer (nullptr: unknown).
    Peer* touch(PeerId peer) {
        Peer* p = find(peer);
        return p != nullptr ? p : make_offered(peer);
    }
    Peer* make_offered(PeerId peer);
    // find(), or a resting peer woken (leave, a BYE: not what an unknown
    // peer's frames would make state for).
    Peer* find_or_wake(PeerId peer) {
        Peer* p = find(peer);
        return p != nullptr || !resting(peer) ? p : make_offered(peer);
    }
    // Puts the peers fire() found due to rest to rest (channel_rest.cpp),
    // once the outputs of that visit went.
    void rest_due(Micros now);
    void rest(Peer& p);
    static PeerCounters rested_view(const Resting& r) noexcept;
    [[nodiscard]] const Peer* find(PeerId peer) const noexcept {
        return peer < peers_.size() ? peers_[peer].get() : nullptr;
    }
    void reschedule(PeerId id) noexcept;
    // Hands the queued outputs to out_ (nothing queued, the usual case: inline).
    void flush_outputs() {
        if (!queue_.empty() || !released_.empty())
            drain_outputs();
    }
    void drain_outputs();
    // Whether an unsequenced frame may go to the peer: known and not left
    // (see leave(); what is held back is counted).
    bool may_send(PeerId peer) noexcept;

    ChannelParams params_;
    recovery::Params recovery_;  // from params_
    ChannelOutput& out_;
    AckCredit* ack_credit_ = nullptr;
    plugin::common::LogSink& log_;
    bool trace_ = false;  // log_ at Trace, read once: frames' transitions test it
    std::vector<std::unique_ptr<Peer>> peers_;       // indexed by PeerId
    std::vector<std::unique_ptr<Resting>> resting_;  // indexed by PeerId (rest records)
    std::vector<PeerId> rest_due_;                   // scratch for on_timer
    RestCounters rest_counters_;
    std::set<std::pair<Micros, PeerId>> timers_;  // one entry per peer with a deadline
    std::vector<Output> queue_;                   // outputs not yet handed to out_
    // acked() outputs of released frames, the most common output: handed
    // over before queue_ (kill() reports through queue_, so a peer's
    // releases still precede its peer_dead()).
    std::vector<std::pair<PeerId, FrameToken>> released_;
    std::vector<std::pair<Micros, PeerId>> due_;  // scratch for on_timer
    std::vector<PeerId> batch_due_;               // peers with a carried batch to settle
    // Peers that sent or were sent a sequenced frame since flush_acks() last
    // found them quiet (nothing of ours unacknowledged, no ACK owed): what
    // finalize visits, instead of every peer.
    std::vector<PeerId> active_;
    std::uint64_t flush_visits_ = 0;
    // Peers that ever sent or were sent a sequenced frame, or sent a BYE:
    // those leave() says goodbye to.
    std::vector<PeerId> talked_;
    std::vector<PeerId> leaving_;  // not left yet, once leave() was called
    bool leave_started_ = false;
    bool draining_ = false;
    bool timers_changed_ = true;  // timers_ changed since take_timers_changed()
};

}  // namespace pml::dr::core
