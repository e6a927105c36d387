// The receive-side brain of pml dr, sans I/O: peers, communicators, the
// request ids that travel on the wire, and the validation and dispatch of
// every arriving frame. The glue owns requests, convertors and BTLs; it feeds
// frames in and gets matches, CTSs and FRAGs out through EngineSink.
//
// Request ids on the wire (RNDV.send_req, CTS.recv_req, FRAG.recv_req) are
// never pointers: a peer could forge them. They index tables here, are bound
// to the peer they were issued for, and a stale or foreign id is dropped.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "log.hpp"
#include "matching.hpp"
#include "proc_name.hpp"
#include "request_table.hpp"
#include "trust.hpp"
#include "wire.hpp"
#include "wire_local.hpp"

namespace pml::dr::core {

using PeerName = plugin::common::ProcName;

class EngineSink : public MatchSink {
  public:
    // The receiver matched our RNDV: send [offset, want_len) of `send`.
    virtual void on_cts(Handle send, PeerId peer, const CtsHdr& cts) = 0;
    // Payload of a rendezvous message for receive `recv` at byte `offset`.
    virtual void on_frag(Handle recv, PeerId peer, std::uint64_t offset,
                         std::span<const std::uint8_t> payload) = 0;
    // Eager flow control: tell `peer` how many of its eager bytes have left
    // our unexpected store (send it a CREDIT frame).
    virtual void on_credit(PeerId /*peer*/, std::uint64_t /*released_total*/) {}
    // Optional one-pass path for a checksummed FRAG of receive `recv`: copy
    // the payload to its place while computing its CRC32C into `crc` and
    // return true, or return false to get on_frag after the engine's own
    // check. A copied payload whose CRC is wrong is never accounted (the
    // retransmission overwrites it); a right one is, through on_frag_placed.
    virtual bool place_frag(Handle /*recv*/, std::uint64_t /*offset*/,
                            std::span<const std::uint8_t> /*payload*/, std::uint32_t& /*crc*/) {
        return false;
    }
    virtual void on_frag_placed(Handle /*recv*/, PeerId /*peer*/, std::uint64_t /*offset*/,
                                std::size_t /*len*/) {}
    // The receiver asks for [offset, want_len) of `send` by BTL puts (a PUT
    // frame that came on `path`). A sink that does not put sends FRAGs, as
    // for a CTS.
    virtual void on_put(Handle send, PeerId peer, const PutHdr& put, std::uint64_t /*path*/) {
        on_cts(send, peer, cts_of(put));
    }
    // The sender says its puts for receive `recv` are complete (a FRAG with
    // kFlagPutDone at offset == the receive's accepted length, on `path`).
    // `data_crc`: the CRC32C of the bytes it put, when it sent one.
    virtual void on_put_done(Handle /*recv*/, PeerId /*peer*/, std::uint64_t /*path*/,
                             std::optional<std::uint32_t> /*data_crc*/) {}
};

// The reliability layer's hook into the receive path (frame_gate.hpp; only
// the core and its tests see its definition).
class FrameGate;

// What is waiting on a dead peer (Engine::fail_peer).
struct PeerWaiters {
    std::vector<Handle> posted_recvs;  // receives naming the peer, not yet matched
    std::vector<Handle> active_recvs;  // matched rendezvous receives still expecting data
    std::vector<Handle> sends;         // rendezvous sends still expecting a CTS
};

// Counters of bad input: every dropped frame lands in exactly one of these.
struct RxCounters {
    std::uint64_t frames = 0;
    std::uint64_t bytes = 0;
    std::uint64_t decode_errors = 0;  // short, bad version/type/flags/length
    std::uint64_t checksum_errors = 0;
    std::uint64_t unknown_peer = 0;
    std::uint64_t bad_rank = 0;
    std::uint64_t unknown_request = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t pending_unknown_comm = 0;  // parked until the communicator exists
    std::uint64_t dropped_unknown_comm = 0;  // parked past the limit
    std::uint64_t bad_credit = 0;            // credit report releasing more than we ever sent
    std::uint64_t over_limit = 0;            // sender ignored flow control; store full
    std::uint64_t not_admitted = 0;          // the gate refused it (duplicate, outside window)
    std::uint64_t local_frames = 0;          // LOCAL_MATCH frames passed to matching
    std::uint64_t untrusted_local = 0;       // LOCAL_MATCH on a path or from a peer not memory-only
};

// Eager flow control, per peer. A sender may have at most eager_window()
// bytes of eager payload (MATCH data, RNDV first chunks) that the receiver has
// not yet released from its unexpected store; past that it sends RNDVs
// without data, which cost the receiver only a header. The receiver reports
// cumulative releases in every ACK frame and, where no ACK would carry them
// soon (trusted local paths, releases when a receive is posted), in CREDIT
// frames. Over the full protocol a sender whose window would not hold
// another message like the one it sends flags that frame credit-starved;
// the receiver acknowledges it right after taking it, and until that answer
// arrives messages that do not fit wait instead of going as RNDVs: with many
// senders to one receiver a window of one message keeps them eager.
enum class EagerGrant : std::uint8_t {
    Send,        // charged: send it eagerly
    SendAndAsk,  // charged; flag the frame kFlagCreditStarved (what is left
                 // would not hold another such message)
    Wait,        // no room, but an answer is on its way: hold the message
    NoRoom,      // no room: send it without data (an RNDV, flagged starved)
};

struct PeerFlow {
    std::uint64_t eager_sent = 0;        // sender: charged bytes, ever
    std::uint64_t released_by_peer = 0;  // sender: the peer's latest cumulative report
    std::uint64_t released = 0;          // receiver: this peer's bytes we released, ever
    std::uint64_t reported = 0;          // receiver: what our last report said (CREDIT or ACK)
};

class Engine {
  public:
    Engine(Config config, plugin::common::LogSink& log);

    // --- peers
    PeerId add_peer(PeerName name);
    // The id of a known peer; false if unknown.
    bool find_peer(PeerName name, PeerId& out) const noexcept;
    // The process this engine runs in (its own messages cannot fail). Set
    // before the first communicator is added.
    void set_local(PeerName name) noexcept {
        local_ = name;
        has_local_ = true;
    }
    // The peer is dead: takes every request id and posted receive bound to
    // it out of the engine so the glue can complete them in error, and the
    // MPI_ANY_SOURCE receives of every communicator left without a live
    // source (source_dead). The peer stays dead; a second call takes nothing.
    PeerWaiters fail_peer(PeerId peer);
    [[nodiscard]] bool peer_dead(PeerId peer) const noexcept {
        return peer < dead_.size() && dead_[peer] != 0;
    }
    // Whether a receive or probe for `src` (a rank of communicator `cid`'s
    // remote group, or MPI_ANY_SOURCE) can only be satisfied by a message
    // that arrived already: `src` is a dead peer, or MPI_ANY_SOURCE in a
    // communicator that lost a process and has no live one left but this
    // process itself. Such a receive is never queued: it takes what arrived
    // or fails. (A wildcard receive in a group that still holds a live
    // process waits: that process may send.) One comparison while no peer
    // died.
    [[nodiscard]] bool source_dead(std::uint32_t cid, std::int32_t src) const noexcept {
        return dead_count_ != 0 && source_dead_slow(cid, src);
    }
    // Trusted local paths (trust.hpp): whether `peer` is reached only through
    // memory (its LOCAL_MATCH frames are taken) and whether ours to it go as
    // LOCAL_MATCH. Decided once per peer; None for unknown peers.
    void set_trust(PeerId peer, LocalTrust trust);
    [[nodiscard]] bool accepts_local(PeerId peer) const noexcept {
        return peer < trust_.size() && trust_[peer] != LocalTrust::None;
    }
    [[nodiscard]] bool sends_local(PeerId peer) const noexcept {
        return peer < trust_.size() && trust_[peer] == LocalTrust::AcceptAndSend;
    }
    // The reliability layer (nullptr: none; every frame is processed, ACKs ignored).
    void set_gate(FrameGate* gate) noexcept { gate_ = gate; }
    [[nodiscard]] const PeerName* peer_name(PeerId id) const noexcept;
    [[nodiscard]] std::size_t peer_count() const noexcept { return peers_.size(); }

    // --- communicators. remote_peers[r] is the peer that is rank r of the
    // remote group (the group messages come from).
    void add_comm(std::uint32_t cid, std::vector<PeerId> remote_peers, EngineSink& sink);
    void del_comm(std::uint32_t cid, EngineSink& sink);
    [[nodiscard]] CommMatcher* comm(std::uint32_t cid) noexcept {
        Comm* c = find_comm(cid);
        return c == nullptr ? nullptr : &c->matcher;
    }

    // Receive/probe helpers that keep the held-bytes accounting right.
    // Both release the returned message's eager bytes for flow control and
    // may call sink.on_credit.
    UnexpectedPtr post_recv(std::uint32_t cid, Handle recv, std::int32_t src, std::int32_t tag,
                            EngineSink& sink);
    UnexpectedPtr take_unexpected(std::uint32_t cid, std::int32_t src, std::int32_t tag,
                                  EngineSink& sink);

    // --- eager flow control (sender side)
    [[nodiscard]] std::uint64_t eager_window() const noexcept { return eager_window_; }
    // Charges `bytes` of eager payload to `peer`; false (nothing charged) when
    // the window is full, unless `force` (for the few bytes of an RGET handle).
    bool try_charge_eager(PeerId peer, std::uint64_t bytes, bool force = false) noexcept;
    // The full protocol's choice for an eager message of `bytes` (see
    // EagerGrant); Send and SendAndAsk charged it. A peer served by trusted
    // local paths (no ACKs to answer) or a gate-less engine never asks.
    EagerGrant grant_eager(PeerId peer, std::uint64_t bytes) noexcept {
        // Inline: room for this message and another like it, the usual case.
        if (peer < flow_.size()) {
            PeerFlow& f = flow_[peer];
            if (f.eager_sent - f.released_by_peer + 2 * bytes <= eager_window_) {
                f.eager_sent += bytes;
                return EagerGrant::Send;
            }
        }
        return grant_eager_near_full(peer, bytes);
    }
    // Whether a question to `peer` awaits its answer; end_wait() stops
    // waiting for it (ReliableEngine: nothing is in flight to the peer, so
    // the answering ACK was lost and will not come again).
    [[nodiscard]] bool waits_for_credit(PeerId peer) const noexcept {
        return peer < asking_.size() && asking_[peer] != 0;
    }
    void end_wait(PeerId peer) noexcept {
        if (peer < asking_.size())
            asking_[peer] = 0;
    }
    // Gives back a charge whose frame did not go out (or went out shorter).
    void uncharge_eager(PeerId peer, std::uint64_t bytes) noexcept;
    // Receiver: the cumulative releases of `peer`'s eager bytes, now
    // reported (an ACK frame carries them).
    std::uint64_t report_credit(PeerId peer) noexcept;
    [[nodiscard]] const PeerFlow* flow(PeerId peer) const noexcept;

    // --- request ids for rendezvous traffic
    std::uint64_t register_send(Handle send, PeerId peer);
    std::uint64_t register_recv(Handle recv, PeerId peer, std::uint64_t want_len);
    void release_send(std::uint64_t id) noexcept { sends_.remove(id); }
    void release_recv(std::uint64_t id) noexcept { recvs_.remove(id); }

    // --- arriving frames (one BTL segment, header + payload contiguous).
    // path: the glue's opaque id of the BTL the frame came on.
    void on_frame(std::span<const std::uint8_t> frame, EngineSink& sink, std::uint64_t path = 0);
    // A LOCAL_MATCH (wire_local.hpp) as the BTL handed it over: one segment
    // (`header` is the whole frame, `payload` empty) or two (`header` the
    // 16-byte header, `payload` the rest).
    // path_trusted: the glue trusts the BTL it came on. The sender is the
    // peer at src_rank of communicator cid, which must be trusted as well;
    // any other frame is refused and counted (untrusted_local).
    void on_local_frame(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload,
                        EngineSink& sink, std::uint64_t path, bool path_trusted);

    [[nodiscard]] const RxCounters& rx() const noexcept { return rx_; }
    [[nodiscard]] std::size_t held_bytes() const noexcept { return held_bytes_; }
    // Most eager bytes ever held at once (unexpected + out of order).
    [[nodiscard]] std::size_t held_peak() const noexcept { return held_peak_; }
    [[nodiscard]] const Config& config() const noexcept { return config_; }

  private:
    using ReqEntry = RequestTable::Entry;
    struct NameHash {
        std::size_t operator()(const PeerName& n) const noexcept {
            return (static_cast<std::size_t>(n.jobid) << 32) ^ n.vpid;
        }
    };
    struct Comm {
        std::vector<PeerId> remote;
        CommMatcher matcher;
        std::uint32_t dead = 0;  // processes of `remote` that are dead
        bool has_local = false;  // `remote` holds this process
        // No live process but this one left to send (source_dead).
        [[nodiscard]] bool orphaned() const noexcept {
            return dead > 0 && dead + (has_local ? 1u : 0u) >= remote.size();
        }
    };
    // A MATCH/RNDV for a communicator this process has not created yet
    // (another rank's MPI_Comm_dup/split finished first).
    struct Parked {
        std::uint32_t cid;
        std::uint64_t path;
        std::vector<std::uint8_t> frame;
        bool local = false;  // a LOCAL_MATCH (header and payload in `frame`)
    };

    // The common case in one pass: an intact MATCH from a known peer, checked
    // by decode_match(). False (nothing touched): dispatch() decides.
    bool on_match_frame(std::span<const std::uint8_t> frame, EngineSink& sink, std::uint64_t path);
    // A sequenced frame through the gate: its carried ack_seq, then whether
    // it is admitted (a refusal is counted).
    bool pass_gate(PeerId peer, std::uint64_t path, const Common& c, std::size_t bytes);
    // The peer with this name (nullptr: unknown). Peers of the first job seen
    // (the usual case: one job) are found by vpid without hashing.
    [[nodiscard]] const PeerId* lookup(const PeerName& name) const noexcept {
        if (name.jobid == home_jobid_ && name.vpid < by_vpid_.size())
            return by_vpid_[name.vpid] != kNoPeer ? &by_vpid_[name.vpid] : nullptr;
        auto it = peer_ids_.find(name);
        return it != peer_ids_.end() ? &it->second : nullptr;
    }
    // `frame` is what is parked when the communicator is not there yet.
    void on_match_or_rndv(PeerId peer, const MatchFields& m, const RndvHdr* rndv,
                          std::uint16_t flags, std::span<const std::uint8_t> payload,
                          std::span<const std::uint8_t> frame, EngineSink& sink,
                          std::uint64_t path);
    // A MATCH or RNDV from `peer`, checked to be rank m.src_rank of `comm`:
    // matched, queued as unexpected, or dropped over the store's limit.
    // gated: it came through the gate (an ACK is owed for it), not as a
    // LOCAL_MATCH.
    void arrive(Comm& comm, PeerId peer, const MatchFields& m, const RndvHdr* rndv,
                std::uint16_t flags, std::span<const std::uint8_t> payload, EngineSink& sink,
                std::uint64_t path, bool gated);
    // Keeps a frame (`head` then `tail`) for communicator `cid`, which this
    // process has not created yet, up to unexpected_limit bytes.
    void park(std::uint32_t cid, std::uint64_t path, std::span<const std::uint8_t> head,
              std::span<const std::uint8_t> tail, bool local);
    // A decoded LOCAL_MATCH from a trusted path: its sender checked, then
    // matched (or parked until its communicator exists).
    void on_local_match(const LocalMatchHdr& h, std::span<const std::uint8_t> header,
                        std::span<const std::uint8_t> payload, EngineSink& sink,
                        std::uint64_t path);
    // A decoded frame past its checks, from a known peer: what each type's
    // take() needs.
    struct Arrival {
        PeerId peer;
        std::uint64_t path;
        const Common& common;
        std::span<const std::uint8_t> payload;
        std::span<const std::uint8_t> frame;
        EngineSink& sink;
    };
    // One handler per frame type, chosen by the decoded header's type
    // (dispatch; a type without its overloads does not compile). to_gate:
    // the channel's own frames, handed to the gate (true); data frames are
    // not the gate's (false): they are admitted, then taken.
    bool to_gate(const AckHdr& h, PeerId peer, std::uint64_t path);
    bool to_gate(const NackHdr& h, PeerId peer, std::uint64_t path);
    bool to_gate(const ProbeHdr& h, PeerId peer, std::uint64_t path);
    bool to_gate(const ByeHdr& h, PeerId peer, std::uint64_t path);
    static bool to_gate(const MatchHdr&, PeerId, std::uint64_t) { return false; }
    static bool to_gate(const RndvHdr&, PeerId, std::uint64_t) { return false; }
    static bool to_gate(const CtsHdr&, PeerId, std::uint64_t) { return false; }
    static bool to_gate(const PutHdr&, PeerId, std::uint64_t) { return false; }
    static bool to_gate(const FragHdr&, PeerId, std::uint64_t) { return false; }
    static bool to_gate(const CreditHdr&, PeerId, std::uint64_t) { return false; }
    void take(const MatchHdr& h, const Arrival& a);
    void take(const RndvHdr& h, const Arrival& a);
    void take(const CtsHdr& h, const Arrival& a);
    void take(const PutHdr& h, const Arrival& a);
    void take(const FragHdr& h, const Arrival& a);
    void take(const CreditHdr& h, const Arrival& a);
    // ACK, NACK, PROBE, BYE without a gate (no reliability layer): nothing to do.
    static void take(const AckHdr&, const Arrival&) {}
    static void take(const NackHdr&, const Arrival&) {}
    static void take(const ProbeHdr&, const Arrival&) {}
    static void take(const ByeHdr&, const Arrival&) {}
    // on_frame; gated false for frames the gate already admitted (parked ones).
    void dispatch(std::span<const std::uint8_t> frame, EngineSink& sink, std::uint64_t path,
                  bool gated);
    void payload_damaged(const Common& c, const PeerId* peer, std::uint64_t path, bool gated);
    void count_decode_error(const plugin::common::Error& e) noexcept;
    [[nodiscard]] bool source_dead_slow(std::uint32_t cid, std::int32_t src) const noexcept;
    void release_unexpected(const Unexpected& msg, EngineSink& sink) noexcept;
    // grant_eager() when the window would not hold two such messages.
    EagerGrant grant_eager_near_full(PeerId peer, std::uint64_t bytes) noexcept;
    // Receiver: `bytes` of `peer`'s eager payload left our store. ack_follows:
    // on the arrival of a frame that came through the gate, whose ACK will
    // carry the release (starved: that frame asked for it at once); else a
    // LOCAL_MATCH's arrival or a later release (a receive was posted).
    // Inline: most releases end at the batch test.
    void release_eager(PeerId peer, std::uint64_t bytes, bool starved, bool ack_follows,
                       EngineSink& sink) {
        if (peer >= flow_.size())
            return;
        PeerFlow& f = flow_[peer];
        f.released += bytes;
        if (ack_follows ? starved : starved || f.released - f.reported >= eager_window_ / 4)
            report_release(peer, f, starved, ack_follows, sink);
    }
    // release_eager() past the batch test: the report that may be due.
    void report_release(PeerId peer, PeerFlow& f, bool starved, bool ack_follows, EngineSink& sink);
    // The direct small-message path (on_local_frame): a whole LOCAL_MATCH
    // whose receive is posted and that is next in its source's order, from
    // the BTL's bytes to the matched receive with one peer lookup. False:
    // nothing done, the general way decides.
    bool take_direct(std::span<const std::uint8_t> frame, EngineSink& sink, std::uint64_t path);
    // The end of both direct paths (a LOCAL_MATCH, a gated MATCH): the
    // message from m.src_rank of `c` (checked to be `peer`) matched to the
    // receive first in line for it (CommMatcher::take_next_posted). False:
    // nothing done.
    bool match_direct(Comm& c, PeerId peer, const MatchFields& m, std::uint16_t flags,
                      std::span<const std::uint8_t> payload, EngineSink& sink, std::uint64_t path);
    // Sender: a credit report (CREDIT, or an ACK's; answer: it answers our
    // credit-starved frame).
    void take_credit(PeerId peer, std::uint64_t released_total, bool answer) noexcept;

    Config config_;
    plugin::common::LogSink& log_;
    std::vector<PeerName> peers_;
    std::vector<std::uint8_t> dead_;  // by PeerId: fail_peer() was called (1)
    std::vector<LocalTrust> trust_;   // by PeerId: set_trust
    std::size_t dead_count_ = 0;
    PeerName local_{};
    bool has_local_ = false;
    std::uint64_t eager_window_;  // unexpected_limit / peers (at least one)
    std::vector<PeerFlow> flow_;
    std::vector<std::uint8_t> asking_;  // by PeerId: 1 while a credit question is out (lazy)
    std::unordered_map<PeerName, PeerId, NameHash> peer_ids_;
    static constexpr PeerId kNoPeer = ~PeerId{0};
    static constexpr std::uint32_t kMaxDirectVpids = 1u << 20;  // bounds by_vpid_
    std::uint32_t home_jobid_ = 0;
    std::vector<PeerId> by_vpid_;  // peers of home_jobid_ by vpid (kNoPeer: none)
    // Indexed by context id: Open MPI hands out small dense ids (indices of
    // its communicator table). Only add_comm grows it; ids from the wire are
    // bounds-checked, never used to grow it.
    std::vector<std::unique_ptr<Comm>> comms_;
    [[nodiscard]] Comm* find_comm(std::uint32_t cid) const noexcept {
        return cid < comms_.size() ? comms_[cid].get() : nullptr;
    }
    RequestTable sends_{0};
    RequestTable recvs_{1};
    std::vector<Parked> parked_;
    std::size_t parked_bytes_ = 0;
    std::size_t held_bytes_ = 0;
    std::size_t held_peak_ = 0;
    RxCounters rx_;
    FrameGate* gate_ = nullptr;
};

}  // namespace pml::dr::core
