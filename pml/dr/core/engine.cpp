#include "engine.hpp"
#include "frame_gate.hpp"

#include <algorithm>
#include <utility>

#include "crc32c.hpp"

namespace pml::dr::core {

using plugin::common::ErrorCode;
using plugin::common::logf;
using plugin::common::LogLevel;

namespace {

// The process at `rank` of a communicator's remote group (nullptr: no such rank).
const PeerId* peer_at(const std::vector<PeerId>& remote, std::int32_t rank) noexcept {
    return rank >= 0 && static_cast<std::size_t>(rank) < remote.size()
               ? &remote[static_cast<std::size_t>(rank)]
               : nullptr;
}

// What the matcher is told of a MATCH (rndv: nullptr) or RNDV from `peer`.
MessageInfo message_info(PeerId peer, const MatchFields& m, const RndvHdr* rndv,
                         std::uint16_t flags, std::size_t payload_len,
                         std::uint64_t path) noexcept {
    MessageInfo info;
    info.peer = peer;
    info.src = m.src_rank;
    info.tag = m.tag;
    info.seq = m.msg_seq;
    info.rndv = rndv != nullptr;
    info.sync = (flags & kFlagSync) != 0;
    info.msg_len = rndv != nullptr ? rndv->msg_len : payload_len;
    info.send_req = rndv != nullptr ? rndv->send_req : 0;
    info.rget = (flags & kFlagRget) != 0;
    info.rget_data_csum = (flags & kFlagDataCsum) != 0;
    info.remote_addr = rndv != nullptr ? rndv->remote_addr : 0;
    info.path = path;
    return info;
}

}  // namespace

Engine::Engine(Config config, plugin::common::LogSink& log)
    : config_(std::move(config)), log_(log), eager_window_(config_.unexpected_limit) {}

PeerId Engine::add_peer(PeerName name) {
    if (const PeerId* known = lookup(name))
        return *known;
    const auto id = static_cast<PeerId>(peers_.size());
    if (peers_.empty())
        home_jobid_ = name.jobid;
    // Peers of the first job seen are found by vpid (4 bytes each); only
    // others take a hash-table entry.
    if (name.jobid == home_jobid_ && name.vpid < kMaxDirectVpids) {
        if (by_vpid_.size() <= name.vpid)
            by_vpid_.resize(std::size_t{name.vpid} + 1, kNoPeer);
        by_vpid_[name.vpid] = id;
    } else {
        peer_ids_.emplace(name, id);
    }
    peers_.push_back(name);
    flow_.emplace_back();
    // The receiver's unexpected store is shared by every peer that may
    // send to it. No floor: with very many peers a window may hold no
    // eager data at all, and every message then goes as a data-less RNDV.
    // (Kept, not computed per message: a division on every send.)
    eager_window_ = config_.unexpected_limit / peers_.size();
    return id;
}

bool Engine::find_peer(PeerName name, PeerId& out) const noexcept {
    const PeerId* p = lookup(name);
    if (p == nullptr)
        return false;
    out = *p;
    return true;
}

const PeerName* Engine::peer_name(PeerId id) const noexcept {
    return id < peers_.size() ? &peers_[id] : nullptr;
}

void Engine::add_comm(std::uint32_t cid, std::vector<PeerId> remote_peers, EngineSink& sink) {
    const auto n = static_cast<std::uint32_t>(remote_peers.size());
    if (cid >= comms_.size())
        comms_.resize(static_cast<std::size_t>(cid) + 1);
    if (comms_[cid])
        del_comm(cid, sink);  // a reused id: drop the old state first
    auto c = std::make_unique<Comm>(Comm{std::move(remote_peers), CommMatcher(n)});
    for (const PeerId p : c->remote) {
        c->dead += peer_dead(p) ? 1u : 0u;
        c->has_local = c->has_local || (has_local_ && p < peers_.size() && peers_[p] == local_);
    }
    comms_[cid] = std::move(c);
    // Replay what arrived before this communicator existed, in arrival order.
    std::vector<Parked> replay;
    auto keep = std::stable_partition(parked_.begin(), parked_.end(),
                                      [cid](const Parked& p) { return p.cid != cid; });
    std::move(keep, parked_.end(), std::back_inserter(replay));
    parked_.erase(keep, parked_.end());
    for (Parked& p : replay) {
        parked_bytes_ -= p.frame.size();
        if (p.local) {  // counted when it arrived; its sender is checked now
            const std::span<const std::uint8_t> f(p.frame);
            if (auto h = decode_local_match(f))
                on_local_match(*h, f.first(kLocalMatchHeaderSize), f.subspan(kLocalMatchHeaderSize),
                               sink, p.path);
            continue;
        }
        // Counted in frames/bytes when it arrived; dispatch counts it again.
        // The gate admitted it then: a second look would call it a duplicate.
        --rx_.frames;
        rx_.bytes -= p.frame.size();
        dispatch(p.frame, sink, p.path, false);
    }
}

PeerWaiters Engine::fail_peer(PeerId peer) {
    PeerWaiters w;
    if (peer >= peers_.size() || peer_dead(peer))
        return w;
    if (dead_.size() < peers_.size())
        dead_.resize(peers_.size(), 0);
    dead_[peer] = 1;
    ++dead_count_;
    if (peer < trust_.size())  // nothing more goes to it or is taken from it as LOCAL_MATCH
        trust_[peer] = LocalTrust::None;
    for (auto& c : comms_) {
        if (!c)
            continue;
        bool member = false;
        for (std::size_t r = 0; r < c->remote.size(); ++r) {
            if (c->remote[r] != peer)
                continue;
            member = true;
            ++c->dead;
            c->matcher.take_posted_from(static_cast<std::int32_t>(r), w.posted_recvs);
        }
        if (member && c->orphaned())
            c->matcher.take_posted_any(w.posted_recvs);
    }
    recvs_.take_bound_to(peer, w.active_recvs);
    sends_.take_bound_to(peer, w.sends);
    return w;
}

bool Engine::source_dead_slow(std::uint32_t cid, std::int32_t src) const noexcept {
    const Comm* c = find_comm(cid);
    if (c == nullptr)
        return false;
    if (src == kAnySource)
        return c->orphaned();
    const PeerId* peer = peer_at(c->remote, src);
    return peer != nullptr && peer_dead(*peer);
}

void Engine::del_comm(std::uint32_t cid, EngineSink& sink) {
    Comm* c = find_comm(cid);
    if (c == nullptr)
        return;
    // Unexpected messages left on a freed communicator are dropped with it;
    // their senders get the eager credit back.
    c->matcher.for_each_held([&](const Unexpected& u) {
        held_bytes_ -= std::min(held_bytes_, u.data.size());
        release_eager(u.info.peer, u.data.size(), false, false, sink);
    });
    comms_[cid].reset();
}

UnexpectedPtr Engine::post_recv(std::uint32_t cid, Handle recv, std::int32_t src, std::int32_t tag,
                                EngineSink& sink) {
    CommMatcher* m = comm(cid);
    if (m == nullptr)
        return nullptr;
    UnexpectedPtr msg = m->post(recv, src, tag);
    if (msg)
        release_unexpected(*msg, sink);
    return msg;
}

UnexpectedPtr Engine::take_unexpected(std::uint32_t cid, std::int32_t src, std::int32_t tag,
                                      EngineSink& sink) {
    CommMatcher* m = comm(cid);
    if (m == nullptr)
        return nullptr;
    UnexpectedPtr msg = m->take(src, tag);
    if (msg)
        release_unexpected(*msg, sink);
    return msg;
}

void Engine::release_unexpected(const Unexpected& msg, EngineSink& sink) noexcept {
    held_bytes_ -= std::min(held_bytes_, msg.data.size());
    release_eager(msg.info.peer, msg.data.size(), false, false, sink);
}

bool Engine::try_charge_eager(PeerId peer, std::uint64_t bytes, bool force) noexcept {
    if (peer >= flow_.size())
        return false;
    PeerFlow& f = flow_[peer];
    const std::uint64_t outstanding = f.eager_sent - f.released_by_peer;
    if (!force && outstanding + bytes > eager_window())
        return false;
    f.eager_sent += bytes;
    return true;
}

EagerGrant Engine::grant_eager_near_full(PeerId peer, std::uint64_t bytes) noexcept {
    if (peer >= flow_.size())
        return EagerGrant::NoRoom;
    PeerFlow& f = flow_[peer];
    const std::uint64_t outstanding = f.eager_sent - f.released_by_peer;
    const std::uint64_t window = eager_window();
    if (outstanding + bytes > window)
        return waits_for_credit(peer) ? EagerGrant::Wait : EagerGrant::NoRoom;
    f.eager_sent += bytes;
    if (window - outstanding - bytes >= bytes)
        return EagerGrant::Send;  // room for another: the usual case
    // Only an ACK can carry the answer: the full protocol, a live peer.
    const bool may_ask = gate_ != nullptr && !sends_local(peer) && !peer_dead(peer);
    if (!may_ask || waits_for_credit(peer))
        return EagerGrant::Send;
    if (asking_.size() < flow_.size())
        asking_.resize(flow_.size(), 0);
    asking_[peer] = 1;
    return EagerGrant::SendAndAsk;
}

std::uint64_t Engine::report_credit(PeerId peer) noexcept {
    if (peer >= flow_.size())
        return 0;
    PeerFlow& f = flow_[peer];
    f.reported = f.released;
    return f.released;
}

void Engine::take_credit(PeerId peer, std::uint64_t released_total, bool answer) noexcept {
    if (peer >= flow_.size())
        return;
    PeerFlow& f = flow_[peer];
    if (released_total > f.eager_sent) {
        ++rx_.bad_credit;  // releases more than we ever sent: ignore it
        return;
    }
    f.released_by_peer = std::max(f.released_by_peer, released_total);
    if (answer)
        end_wait(peer);
}

void Engine::uncharge_eager(PeerId peer, std::uint64_t bytes) noexcept {
    if (peer >= flow_.size())
        return;
    PeerFlow& f = flow_[peer];
    f.eager_sent -= std::min(bytes, f.eager_sent - f.released_by_peer);
}

const PeerFlow* Engine::flow(PeerId peer) const noexcept {
    return peer < flow_.size() ? &flow_[peer] : nullptr;
}

void Engine::report_release(PeerId peer, PeerFlow& f, bool starved, bool ack_follows,
                            EngineSink& sink) {
    if (ack_follows) {
        // The ACK owed for the frame carries the release; a starved frame's
        // ACK is held for this answer, which goes now.
        if (starved)
            gate_->answer_credit(peer);
        return;
    }
    // Reports go in batches of a quarter window (at once to a starved
    // sender): most releases end here.
    const std::uint64_t unreported = f.released - f.reported;
    if (unreported == 0 || (!starved && unreported < eager_window() / 4))
        return;
    if (gate_ != nullptr && !accepts_local(peer)) {
        // The full protocol: ACK frames carry our reports; a later release
        // (a receive was posted) large enough to matter goes in an ACK now.
        if (unreported >= eager_window() / 4)
            gate_->answer_credit(peer);
        return;
    }
    // Trusted local paths (no ACKs) or no reliability layer: CREDIT frames.
    f.reported = f.released;
    sink.on_credit(peer, f.released);
}

std::uint64_t Engine::register_send(Handle send, PeerId peer) {
    return sends_.add(ReqEntry{send, peer, 0});
}

std::uint64_t Engine::register_recv(Handle recv, PeerId peer, std::uint64_t want_len) {
    return recvs_.add(ReqEntry{recv, peer, want_len});
}

void Engine::count_decode_error(const plugin::common::Error& e) noexcept {
    if (e.code == ErrorCode::BadChecksum)
        ++rx_.checksum_errors;
    else
        ++rx_.decode_errors;
    logf(log_, LogLevel::Debug, "dropped frame: %.*s (%.*s)",
         static_cast<int>(to_string(e.code).size()), to_string(e.code).data(),
         static_cast<int>(e.message.size()), e.message.data());
}

// A payload failed its checksum under an intact header: the sender and seq
// can be believed, and the gate may ask for the frame again at once instead
// of waiting for the sender's ACK timer.
void Engine::payload_damaged(const Common& c, const PeerId* peer, std::uint64_t path, bool gated) {
    ++rx_.checksum_errors;
    if (gate_ != nullptr && gated && peer != nullptr && c.frame_seq != 0)
        gate_->on_damaged(*peer, path, c.frame_seq);
}

void Engine::on_frame(std::span<const std::uint8_t> frame, EngineSink& sink, std::uint64_t path) {
    if (!on_match_frame(frame, sink, path))
        dispatch(frame, sink, path, true);
}

bool Engine::on_match_frame(std::span<const std::uint8_t> frame, EngineSink& sink,
                            std::uint64_t path) {
    MatchHdr h;
    if (!decode_match(frame, h))
        return false;
    const PeerId* peer = lookup(PeerName{h.common.src_jobid, h.common.src_vpid});
    const auto payload = frame.subspan(kMatchHeaderSize);
    if (peer == nullptr || ((h.common.flags & kFlagPayloadCsum) != 0 &&
                            plugin::common::crc32c(payload) != h.match.payload_crc))
        return false;
    ++rx_.frames;
    rx_.bytes += frame.size();
    if (gate_ != nullptr && !pass_gate(*peer, path, h.common, frame.size()))
        return true;
    // The direct path when the sender is who it says and its receive is
    // first in line; the general one (on_match_or_rndv) for everything else.
    const MatchFields& m = h.match;
    Comm* c = find_comm(m.cid);
    const PeerId* claimed = c != nullptr ? peer_at(c->remote, m.src_rank) : nullptr;
    if (claimed != nullptr && *claimed == *peer &&
        match_direct(*c, *peer, m, h.common.flags, payload, sink, path)) {
        release_eager(*peer, payload.size(), (h.common.flags & kFlagCreditStarved) != 0,
                      gate_ != nullptr, sink);
        return true;
    }
    on_match_or_rndv(*peer, m, nullptr, h.common.flags, payload, frame, sink, path);
    return true;
}

bool Engine::pass_gate(PeerId peer, std::uint64_t path, const Common& c, std::size_t bytes) {
    if (gate_->admit(peer, path, c, bytes))
        return true;
    ++rx_.not_admitted;
    return false;
}

void Engine::dispatch(std::span<const std::uint8_t> frame, EngineSink& sink, std::uint64_t path,
                      bool gated) {
    ++rx_.frames;
    rx_.bytes += frame.size();
    Decoded decoded_frame;
    if (auto ok = decode_header_into(frame, 0, decoded_frame); !ok) {
        count_decode_error(ok.error());
        return;
    }
    const Decoded* decoded = &decoded_frame;
    const Common& c = common_of(decoded->header);
    const PeerId* known = lookup(PeerName{c.src_jobid, c.src_vpid});
    std::uint32_t want_crc = 0;
    const bool has_crc = payload_crc_of(*decoded, want_crc);
    // A FRAG for a receive we know is checked while it is copied to its place
    // (one pass over the data, not two); everything else is checked here.
    const auto* frag = std::get_if<FragHdr>(&decoded->header);
    const ReqEntry* target = nullptr;
    if (has_crc && frag != nullptr && known != nullptr &&
        (gate_ == nullptr || !gated || gate_->fresh(*known, c.frame_seq))) {
        const ReqEntry* e = recvs_.find(frag->recv_req);
        if (e != nullptr && e->peer == *known && frag->offset <= e->want_len &&
            decoded->payload.size() <= e->want_len - frag->offset)
            target = e;
    }
    const auto payload_intact = [&] {
        return plugin::common::crc32c(decoded->payload) == want_crc;
    };
    if (has_crc && target == nullptr && !payload_intact()) {
        payload_damaged(c, known, path, gated);
        return;
    }
    if (known == nullptr) {
        ++rx_.unknown_peer;
        logf(log_, LogLevel::Debug, "dropped %.*s from unknown process %u.%u",
             static_cast<int>(to_string(c.type).size()), to_string(c.type).data(), c.src_jobid,
             c.src_vpid);
        return;
    }
    if (target != nullptr) {
        const ReqEntry entry = *target;  // the sink may release it
        std::uint32_t got = 0;
        if (sink.place_frag(entry.handle, frag->offset, decoded->payload, got)) {
            if (got != want_crc) {
                payload_damaged(c, known, path, gated);
                return;
            }
            // Placed before the gate spoke: a duplicate wrote the same bytes again.
            if (gate_ != nullptr && gated && !pass_gate(*known, path, c, frame.size()))
                return;
            sink.on_frag_placed(entry.handle, *known, frag->offset, decoded->payload.size());
            return;
        }
        if (!payload_intact()) {
            payload_damaged(c, known, path, gated);
            return;
        }
    }
    const PeerId peer = *known;
    if (gate_ != nullptr && gated) {
        if (std::visit([&](const auto& h) { return to_gate(h, peer, path); }, decoded->header))
            return;
        if (!pass_gate(peer, path, c, frame.size()))
            return;
    }
    const Arrival a{peer, path, c, decoded->payload, frame, sink};
    std::visit([&](const auto& h) { take(h, a); }, decoded->header);
}

// The channel's own frames go to the gate (their carried ack first); a data
// frame is not the gate's (false): it is admitted, then taken.
bool Engine::to_gate(const AckHdr& h, PeerId peer, std::uint64_t path) {
    take_credit(peer, h.released_total, (h.common.flags & kFlagCreditAnswer) != 0);
    gate_->on_ack(peer, path, h);
    return true;
}
bool Engine::to_gate(const NackHdr& h, PeerId peer, std::uint64_t path) {
    gate_->on_carried_ack(peer, path, h.common.ack_seq);
    gate_->on_nack(peer, path, h.seq);
    return true;
}
bool Engine::to_gate(const ProbeHdr& h, PeerId peer, std::uint64_t path) {
    gate_->on_carried_ack(peer, path, h.common.ack_seq);
    gate_->on_probe(peer, path, h.probe_id, h.reply);
    return true;
}
bool Engine::to_gate(const ByeHdr& h, PeerId peer, std::uint64_t path) {
    gate_->on_carried_ack(peer, path, h.common.ack_seq);
    gate_->on_bye(peer, path);
    return true;
}

void Engine::take(const MatchHdr& h, const Arrival& a) {
    on_match_or_rndv(a.peer, h.match, nullptr, a.common.flags, a.payload, a.frame, a.sink, a.path);
}

void Engine::take(const RndvHdr& h, const Arrival& a) {
    on_match_or_rndv(a.peer, h.match, &h, a.common.flags, a.payload, a.frame, a.sink, a.path);
}

void Engine::take(const CtsHdr& h, const Arrival& a) {
    const ReqEntry* e = sends_.find(h.send_req);
    if (e == nullptr || e->peer != a.peer) {
        ++rx_.unknown_request;
        return;
    }
    a.sink.on_cts(e->handle, a.peer, h);
}

void Engine::take(const PutHdr& h, const Arrival& a) {
    const ReqEntry* e = sends_.find(h.send_req);
    if (e == nullptr || e->peer != a.peer) {
        ++rx_.unknown_request;
        return;
    }
    a.sink.on_put(e->handle, a.peer, h, a.path);
}

void Engine::take(const FragHdr& h, const Arrival& a) {
    const ReqEntry* e = recvs_.find(h.recv_req);
    if (e == nullptr || e->peer != a.peer) {
        ++rx_.unknown_request;
        return;
    }
    if ((a.common.flags & kFlagPutDone) != 0) {
        if (h.offset != e->want_len) {
            ++rx_.decode_errors;
            logf(log_, LogLevel::Debug, "dropped PUT-done short of the accepted length");
            return;
        }
        a.sink.on_put_done(e->handle, a.peer, a.path,
                           (a.common.flags & kFlagPayloadCsum) != 0
                               ? std::optional<std::uint32_t>(h.payload_crc)
                               : std::nullopt);
        return;
    }
    if (h.offset > e->want_len || a.payload.size() > e->want_len - h.offset) {
        ++rx_.decode_errors;
        logf(log_, LogLevel::Debug, "dropped FRAG beyond the accepted length");
        return;
    }
    a.sink.on_frag(e->handle, a.peer, h.offset, a.payload);
}

void Engine::take(const CreditHdr& h, const Arrival& a) {
    take_credit(a.peer, h.released_total, false);
}

void Engine::park(std::uint32_t cid, std::uint64_t path, std::span<const std::uint8_t> head,
                  std::span<const std::uint8_t> tail, bool local) {
    const std::size_t bytes = head.size() + tail.size();
    if (parked_bytes_ + bytes > config_.unexpected_limit) {
        ++rx_.dropped_unknown_comm;
        logf(log_, LogLevel::Warn, "dropped message for unknown communicator %u (limit reached)",
             cid);
        return;
    }
    ++rx_.pending_unknown_comm;
    parked_bytes_ += bytes;
    Parked p{cid, path, {head.begin(), head.end()}, local};
    p.frame.insert(p.frame.end(), tail.begin(), tail.end());
    parked_.push_back(std::move(p));
}

void Engine::set_trust(PeerId peer, LocalTrust trust) {
    if (peer >= peers_.size())
        return;
    if (trust_.size() < peers_.size())
        trust_.resize(peers_.size(), LocalTrust::None);
    trust_[peer] = trust;
}

void Engine::on_local_frame(std::span<const std::uint8_t> header,
                            std::span<const std::uint8_t> payload, EngineSink& sink,
                            std::uint64_t path, bool path_trusted) {
    if (payload.empty() && path_trusted && take_direct(header, sink, path))
        return;
    ++rx_.frames;
    rx_.bytes += header.size() + payload.size();
    if (payload.empty()) {  // one segment: the payload follows the header
        payload = header.size() > kLocalMatchHeaderSize ? header.subspan(kLocalMatchHeaderSize)
                                                        : std::span<const std::uint8_t>{};
    } else if (header.size() != kLocalMatchHeaderSize) {
        ++rx_.decode_errors;
        logf(log_, LogLevel::Debug, "dropped LOCAL_MATCH: a %zu-byte header segment",
             header.size());
        return;
    }
    auto h = decode_local_match(header);
    if (!h) {
        count_decode_error(h.error());
        return;
    }
    if (!path_trusted) {
        ++rx_.untrusted_local;
        logf(log_, LogLevel::Debug, "dropped LOCAL_MATCH: it came on a path we do not trust");
        return;
    }
    on_local_match(*h, header.first(kLocalMatchHeaderSize), payload, sink, path);
}

[[gnu::always_inline]] inline bool Engine::match_direct(Comm& c, PeerId peer, const MatchFields& m,
                                                        std::uint16_t flags,
                                                        std::span<const std::uint8_t> payload,
                                                        EngineSink& sink, std::uint64_t path) {
    Handle recv = 0;
    if (!c.matcher.take_next_posted(m.src_rank, m.tag, m.msg_seq, recv))
        return false;
    sink.on_match(recv, message_info(peer, m, nullptr, flags, payload.size(), path), payload);
    return true;
}

bool Engine::take_direct(std::span<const std::uint8_t> frame, EngineSink& sink,
                         std::uint64_t path) {
    const auto h = decode_local_match(frame);
    if (!h)
        return false;
    Comm* c = find_comm(h->cid);
    const PeerId* sender = c != nullptr ? peer_at(c->remote, h->src_rank) : nullptr;
    if (sender == nullptr || !accepts_local(*sender))
        return false;
    const PeerId peer = *sender;
    const auto payload = frame.subspan(kLocalMatchHeaderSize);
    if (!match_direct(*c, peer, match_fields_of(*h, payload.size()), 0, payload, sink, path))
        return false;
    ++rx_.frames;
    rx_.bytes += frame.size();
    ++rx_.local_frames;
    release_eager(peer, payload.size(), false, false, sink);
    return true;
}

void Engine::on_local_match(const LocalMatchHdr& h, std::span<const std::uint8_t> header,
                            std::span<const std::uint8_t> payload, EngineSink& sink,
                            std::uint64_t path) {
    Comm* c = find_comm(h.cid);
    if (c == nullptr) {
        park(h.cid, path, header, payload, true);
        return;
    }
    const PeerId* sender = peer_at(c->remote, h.src_rank);
    if (sender == nullptr) {
        ++rx_.bad_rank;
        logf(log_, LogLevel::Debug, "dropped LOCAL_MATCH: rank %d outside communicator %u",
             h.src_rank, h.cid);
        return;
    }
    const PeerId peer = *sender;
    if (!accepts_local(peer)) {
        ++rx_.untrusted_local;
        logf(log_, LogLevel::Debug,
             "dropped LOCAL_MATCH: peer %u is not reached through memory only", peer);
        return;
    }
    ++rx_.local_frames;
    arrive(*c, peer, match_fields_of(h, payload.size()), nullptr, 0, payload, sink, path, false);
}

void Engine::on_match_or_rndv(PeerId peer, const MatchFields& m, const RndvHdr* rndv,
                              std::uint16_t flags, std::span<const std::uint8_t> payload,
                              std::span<const std::uint8_t> frame, EngineSink& sink,
                              std::uint64_t path) {
    Comm* found = find_comm(m.cid);
    if (found == nullptr) {
        park(m.cid, path, frame, {}, false);
        return;
    }
    Comm& comm = *found;
    if (const PeerId* claimed = peer_at(comm.remote, m.src_rank);
        claimed == nullptr || *claimed != peer) {
        ++rx_.bad_rank;
        logf(log_, LogLevel::Debug,
             "dropped message: rank %d of communicator %u (size %zu) is not the sender (peer %u)",
             m.src_rank, m.cid, comm.remote.size(), peer);
        return;
    }
    arrive(comm, peer, m, rndv, flags, payload, sink, path, gate_ != nullptr);
}

void Engine::arrive(Comm& comm, PeerId peer, const MatchFields& m, const RndvHdr* rndv,
                    std::uint16_t flags, std::span<const std::uint8_t> payload, EngineSink& sink,
                    std::uint64_t path, bool gated) {
    const MessageInfo info = message_info(peer, m, rndv, flags, payload.size(), path);
    // Flow control keeps well-behaved senders within the window; a peer that
    // ignores it must not grow our memory without bound.
    if (held_bytes_ + payload.size() > 2 * config_.unexpected_limit + eager_window()) {
        ++rx_.over_limit;
        logf(log_, LogLevel::Warn, "dropped message from peer %u: unexpected store over its limit",
             peer);
        return;
    }
    // Everything this call matched left the store; what it queued stays.
    // All messages one call delivers come from the same source, so the
    // difference is this peer's release.
    const std::size_t held_before = held_bytes_;
    auto r = comm.matcher.arrive(info, payload, sink, held_bytes_);
    if (!r) {
        ++rx_.duplicates;
        return;
    }
    held_peak_ = std::max(held_peak_, held_bytes_);
    const std::uint64_t released = payload.size() + held_before - held_bytes_;
    release_eager(peer, released, (flags & kFlagCreditStarved) != 0, gated, sink);
}

}  // namespace pml::dr::core
