// pml dr glue of the reliability channel (see reliability.hpp).
#include "reliability.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <limits>
#include <string_view>

#include "deadline_timer.hpp"
#include "fault.hpp"
#include "pml.hpp"
#include "scheduler.hpp"
#include "standby.hpp"
#include "wire.hpp"

namespace pml::dr::mca {
namespace {

using core::FrameRef;
using core::PathId;
using core::PeerId;
using plugin::common::kNever;
using plugin::common::logf;
using plugin::common::LogLevel;
using plugin::common::Micros;
using plugin::common::monotonic_now;

std::uint32_t saturate_u32(Micros v) noexcept {
    return v <= 0 ? 0 : v >= Micros{UINT32_MAX} ? UINT32_MAX : static_cast<std::uint32_t>(v);
}

struct PeerLimits {
    std::size_t max_frame = std::numeric_limits<std::size_t>::max();
    std::size_t eager = std::numeric_limits<std::size_t>::max();
};

// What a transmission attempt came to. Done: the BTL took the bytes inline
// (sendi) and owes no completion; Posted: its completion callback follows.
enum class TxResult { Done, Posted, Failed, Busy };

// The channel's outputs: frames onto BTLs, completions back to requests.
// (What the engine decodes for the channel reaches it through
// core::ChannelGate.)
class Glue final : public core::ChannelOutput {
  public:
    void offer_paths(PeerId peer, std::vector<core::PathOffer>& out) override;
    bool transmit(PeerId peer, PathId path, FrameRef ref, bool retransmit) override;
    void send_ack(PeerId peer, PathId path, const core::AckInfo& ack) override;
    void send_nack(PeerId peer, PathId path, std::uint32_t seq) override;
    void send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) override;
    void send_bye(PeerId peer, PathId path) override;
    void path_failed(PeerId peer, PathId path) override;
    void peer_dead(PeerId peer) override;
    void acked(PeerId, core::FrameToken token) override { release(token, true); }
    void abandoned(PeerId, core::FrameToken token) override { release(token, false); }

  private:
    // Sends an unsequenced control frame (ACK, NACK) of `len` bytes on `path`;
    // a frame that cannot go is lost like on a network (counted).
    static void send_unsequenced(PeerId peer, PathId path, const std::uint8_t* buf,
                                 std::size_t len) noexcept;
    static void release(core::FrameToken token, bool acked) noexcept;
};

// What the glue keeps beside the protocol object (State::reliable), which
// sends through `glue`.
struct Reliability {
    Glue glue;
    plugin::common::DeadlineTimer timer;
    std::atomic<Micros> deadline{kNever};  // read by progress() without the lock
    std::atomic<bool> batches_due{false};  // the channel's batches_due(), for progress()
    Micros now = 0;                        // time of the current entry
    std::vector<PeerLimits> limits;
    plugin::common::FaultInjector faults;
    // fault_fail_btl: frames this process sent over that BTL, and whether it died.
    std::uint64_t fail_btl_frames = 0;
    bool fail_btl_dead = false;
    std::uint64_t acks_dropped = 0;      // no descriptor or path for an ACK
    std::uint64_t frames_killed_rx = 0;  // arrived on a BTL fault_fail_btl killed
    std::uint64_t descriptor_waits = 0;  // frames deferred: the BTL had no descriptor free
    // ACK/NACK/PROBE/BYE descriptors a BTL queued and has not sent yet (tcp
    // before its connection is writable): finalize waits for them, or the
    // peer would never see our BYE.
    std::size_t control_queued = 0;
    // BTL modules that reported themselves gone (an error naming no peer):
    // never offered as a path again.
    std::vector<const mca_btl_base_module_t*> gone_btls;
    std::vector<std::uint8_t> scratch;  // corrupted copies of frames
    // Released frames for reuse, by the capacity of their byte buffers
    // (kSmallFrame), so a small frame does not take a large buffer.
    std::vector<StoredFrame*> pool_small;
    std::vector<StoredFrame*> pool_large;
    std::size_t pooled_bytes = 0;                     // byte capacity held by both pools
    const mca_btl_base_module_t* self_btl = nullptr;  // exempt from fault injection
};
Reliability g_rel;

core::ReliableEngine& rel() noexcept {
    return *state().reliable;
}

core::ReliableChannel& chan() noexcept {
    return rel().channel();
}

// A module that reported itself gone (reliability_btl_error naming no peer).
bool btl_gone(const mca_btl_base_module_t* btl) noexcept {
    return std::find(g_rel.gone_btls.begin(), g_rel.gone_btls.end(), btl) != g_rel.gone_btls.end();
}

// After every entry that reached the channel: its earliest deadline may have
// moved. `fired`: the timer just went off and is armed no more, whatever the
// channel's timers did.
void rearm(bool fired = false) noexcept {
    const std::optional<Micros> d = rel().deadline_change(fired);
    if (!d)
        return;
    g_rel.deadline.store(*d, std::memory_order_relaxed);
    g_rel.timer.arm(*d, g_rel.now);
}

// Releases what the peers' carried acks acknowledged, once a batch is due:
// after a frame went to its BTL, and from progress, not on the way from an
// arrival to its delivery.
void settle_batches() noexcept {
    if (!rel().batches_due())
        return;
    g_rel.batches_due.store(false, std::memory_order_relaxed);
    rel().settle_batches();
}

// After a frame reached the channel (its carried ack may complete a batch):
// progress() settles a batch it made due.
void note_batches_due() noexcept {
    if (rel().batches_due())
        g_rel.batches_due.store(true, std::memory_order_relaxed);
}

bool is_fail_btl(const mca_btl_base_module_t* btl) noexcept {
    const core::Config& c = state().config;
    return c.fault_fail_after > 0 && c.fault_fail_btl == btl_name(btl);
}

// fault_fail_btl: counts a frame about to go over `btl`; true once that BTL
// is dead (the frame must not go).
bool fail_btl_hit(const mca_btl_base_module_t* btl) noexcept {
    if (!is_fail_btl(btl))
        return false;
    if (g_rel.fail_btl_dead)
        return true;
    if (++g_rel.fail_btl_frames <= state().config.fault_fail_after)
        return false;
    g_rel.fail_btl_dead = true;
    logf(*state().log, LogLevel::Warn,
         "fault injection: BTL %s dies after %u frames (pml_dr_fault_fail_after)", btl_name(btl),
         state().config.fault_fail_after);
    return true;
}

// What the frame pools hold at most: frames, and bytes of buffer capacity.
// Large buffers are pooled too: unpooled, every eager frame past 4 KiB (tcp's
// reach 64 KiB) cost a malloc and a free, about 900 instructions, and page
// faults after glibc trimmed the freed heap.
constexpr std::size_t kPoolMax = 1024;
constexpr std::size_t kPoolBytes = std::size_t{1} << 20;
// A frame of an inline send (4 KiB of payload) and its header.
constexpr std::size_t kSmallFrame = 4096 + core::kMaxHeaderSize;

// Gives back the sender's first-transmission descriptor if it never went out.
void drop_prebuilt(StoredFrame* sf) noexcept {
    if (sf->prebuilt != nullptr)
        mca_bml_base_free(sf->prebuilt_bb, sf->prebuilt);
    sf->prebuilt = nullptr;
}

// The copy's checked transition; one not allowed is logged and changes nothing.
void advance(StoredFrame* sf, core::CopyState to, const char* why) noexcept {
    if (sf->life.to(to))
        return;
    logf(*state().log, LogLevel::Error, "frame %u to peer %u: %s -> %s refused (%s)", sf->seq,
         sf->peer, std::string(core::to_string(sf->life.state())).c_str(),
         std::string(core::to_string(to)).c_str(), why);
}

void destroy_if_done(StoredFrame* sf) noexcept {
    if (!sf->life.done())
        return;
    drop_prebuilt(sf);
    SendRequest* owner = sf->owner;
    const bool ok = sf->life.state() == core::CopyState::Acked;
    discard_frame(sf);
    if (owner != nullptr)
        frame_released(owner, ok);
}

void handed_over(StoredFrame* sf) noexcept {
    sf->life.taken_by_btl();
    if (SendRequest* r = sf->mpi_waiter) {
        sf->mpi_waiter = nullptr;
        send_mpi_complete(r, OMPI_SUCCESS);
    }
}

// Makes the kept copy carry `seq` and the current `ack` (with `add` flags),
// unless the encoder wrote both already and nothing is to be added.
void stamp_copy(StoredFrame* sf, std::uint32_t seq, std::uint32_t ack, std::uint16_t add,
                bool force) noexcept {
    if (force || sf->encoded_seq != seq || core::ack_seq_of(sf->bytes) != ack)
        (void)core::stamp(sf->bytes, seq, ack, add);
}

// Whether the BTL's sendi can take the kept copy whole.
bool sendi_fits(const mca_btl_base_module_t* btl, std::size_t size) noexcept {
    return btl->btl_sendi != nullptr && size <= btl->btl_eager_limit;
}

// The kept copy through the BTL's sendi; true: taken (the caller hands it
// over once the channel has it recorded: that may complete a request).
bool sendi_copy(StoredFrame* sf, mca_bml_base_btl_t* bb) noexcept {
    return mca_bml_base_sendi(bb, nullptr, sf->bytes.data(), sf->bytes.size(), 0, MCA_BTL_NO_ORDER,
                              kFrameDesFlags, kBtlTag, nullptr) == OMPI_SUCCESS;
}

void local_complete(StoredFrame* sf, PathId path, bool ok) noexcept {
    chan().on_local_complete(
        sf->peer, path, FrameRef{sf->seq, reinterpret_cast<core::FrameToken>(sf)}, ok, g_rel.now);
}

void frame_sent(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t*,
                mca_btl_base_descriptor_t* des, int status) noexcept {
    Guard g;
    auto* sf = static_cast<StoredFrame*>(des->des_cbdata);
    sf->life.let_go();
    g_rel.now = monotonic_now();
    if (status == OMPI_SUCCESS)
        handed_over(sf);
    if (sf->life.released()) {
        destroy_if_done(sf);  // acked or abandoned while this BTL still held it
        return;
    }
    if (status != OMPI_SUCCESS)
        logf(*state().log, LogLevel::Warn, "BTL %s completed a frame to peer %u with error %d",
             btl_name(btl), sf->peer, status);
    local_complete(sf, path_of(btl), status == OMPI_SUCCESS);
    rearm();
}

void control_sent(mca_btl_base_module_t*, mca_btl_base_endpoint_t*, mca_btl_base_descriptor_t*,
                  int) noexcept {
    if (g_rel.control_queued > 0)
        --g_rel.control_queued;
}

// Sends a frame's descriptor. `owe()` tells the channel to expect its
// completion, called unless the BTL finished the send inside its call
// (returned 1): then it calls nothing back, and the frame is done as a
// sendi's is.
template <typename Owe>
TxResult post(StoredFrame* sf, mca_bml_base_btl_t* bb, mca_btl_base_descriptor_t* des, PathId path,
              Owe&& owe) noexcept {
    des->des_cbfunc = frame_sent;
    des->des_cbdata = sf;
    sf->life.hold();
    const int rc = mca_bml_base_send(bb, des, kBtlTag);
    if (rc == 1) {
        // The caller holds the frame too: one acked inside the send (self)
        // is freed when it lets go.
        sf->life.let_go();
        handed_over(sf);
        return TxResult::Done;
    }
    owe();
    if (rc >= 0)
        return TxResult::Posted;
    sf->life.let_go();
    mca_bml_base_free(bb, des);
    if (rc == OMPI_ERR_OUT_OF_RESOURCE)
        return TxResult::Busy;
    local_complete(sf, path, false);
    return TxResult::Failed;
}

// One transmission of `sf` on `path` (bb: the BML's entry for it, nullptr
// if none): the sender's descriptor when it was built for that BTL, sendi
// for small copies, otherwise a fresh descriptor. `owed`: the channel counts
// a completion for it (its transmit()); false after submit_on(), which made
// it owed only if it does not go out at once.
TxResult put_on_path(StoredFrame* sf, mca_bml_base_btl_t* bb, PathId path, bool retransmit,
                     bool owed = true) noexcept {
    mca_btl_base_module_t* btl = btl_of(path);
    const auto owe = [sf, path, &owed]() noexcept {
        if (!owed)
            chan().expect_completion(sf->peer, path,
                                     FrameRef{sf->seq, reinterpret_cast<core::FrameToken>(sf)},
                                     g_rel.now);
        owed = true;
    };
    if (bb == nullptr || fail_btl_hit(btl)) {
        drop_prebuilt(sf);
        owe();
        local_complete(sf, path, false);
        return TxResult::Failed;
    }
    const auto add =
        static_cast<std::uint16_t>(sf->flags | (retransmit ? core::kFlagRetransmit : 0));
    // Every transmission carries the current ack_seq; once it is on its way
    // the peer needs no ACK frame for what it says.
    const PeerId peer = sf->peer;
    const std::uint32_t ack = ack_seq_for(peer);
    const auto carried = [peer, ack](TxResult r) noexcept {
        if (r == TxResult::Done || r == TxResult::Posted)
            chan().ack_carried(peer, ack);
        return r;
    };
    if (mca_btl_base_descriptor_t* des = sf->prebuilt; des != nullptr) {
        mca_bml_base_btl_t* pbb = sf->prebuilt_bb;
        sf->prebuilt = nullptr;
        if (!retransmit && pbb->btl == btl) {
            mca_btl_base_segment_t& seg = des->des_segments[0];
            (void)core::stamp({static_cast<std::uint8_t*>(seg.seg_addr.pval), seg.seg_len}, sf->seq,
                              ack, add);
            return carried(post(sf, bb, des, path, owe));
        }
        mca_bml_base_free(pbb, des);
    }
    const std::size_t hdr = sf->repack ? sf->bytes.size() : 0;
    const std::size_t size = sf->repack ? hdr + sf->len : sf->bytes.size();
    if (!sf->repack) {
        stamp_copy(sf, sf->seq, ack, add, retransmit);
        if (sendi_fits(btl, size) && sendi_copy(sf, bb)) {
            handed_over(sf);
            return carried(TxResult::Done);
        }
    }
    mca_btl_base_descriptor_t* des = nullptr;
    mca_bml_base_alloc(bb, &des, MCA_BTL_NO_ORDER, size, kFrameDesFlags);
    if (des == nullptr) {
        owe();  // what the retry from progress expects
        return TxResult::Busy;
    }
    auto* out = static_cast<std::uint8_t*>(des->des_segments[0].seg_addr.pval);
    if (!sf->repack) {
        std::memcpy(out, sf->bytes.data(), size);
    } else {
        std::memcpy(out, sf->bytes.data(), hdr);
        ConvertorAt conv(&sf->owner->base.req_base.req_convertor, sf->offset);
        iovec iov{out + hdr, sf->len};
        uint32_t iov_count = 1;
        size_t max_data = sf->len;
        if (opal_convertor_pack(conv.get(), &iov, &iov_count, &max_data) < 0 ||
            max_data != sf->len) {
            // Packing the same bytes twice cannot differ; if it does, this
            // frame cannot be resent at all.
            logf(*state().log, LogLevel::Error, "cannot re-pack a frame to peer %u for resending",
                 sf->peer);
            mca_bml_base_free(bb, des);
            owe();
            local_complete(sf, path, false);
            return TxResult::Failed;
        }
        (void)core::stamp({out, hdr}, sf->seq, ack, add);
    }
    des->des_segments[0].seg_len = size;
    return carried(post(sf, bb, des, path, owe));
}

// A transmission that found the BTL out of descriptors is retried from
// progress; the retry holds the frame so it cannot be freed under it.
// True: done inline (the channel's transmit() answer).
bool transmit_or_defer(StoredFrame* sf, mca_bml_base_btl_t* bb, PathId path, bool retransmit,
                       bool owed = true) noexcept {
    const TxResult first = put_on_path(sf, bb, path, retransmit, owed);
    if (first != TxResult::Busy)
        return first == TxResult::Done;
    ++g_rel.descriptor_waits;
    sf->life.hold();
    defer(nullptr, [sf, path, retransmit] {
        g_rel.now = monotonic_now();
        if (sf->life.released()) {
            sf->life.let_go();
            destroy_if_done(sf);
            return true;
        }
        if (chan().path_state(sf->peer, path) == core::PathState::Failed) {
            // The path failed while this frame waited for a descriptor (a
            // dead BTL refuses them for good): the channel re-drives it on
            // another path.
            sf->life.let_go();
            local_complete(sf, path, false);
            rearm();
            return true;
        }
        // Still held: a send done inside the BTL's call may release it.
        const TxResult again = put_on_path(sf, find_bml(sf->peer, btl_of(path)), path, retransmit);
        if (again == TxResult::Busy)
            return false;
        if (again == TxResult::Done)
            local_complete(sf, path, true);
        sf->life.let_go();
        destroy_if_done(sf);
        rearm();
        return true;
    });
    return false;
}

bool Glue::transmit(PeerId, PathId path, FrameRef ref, bool retransmit) {
    auto* sf = from_handle<StoredFrame>(ref.token);
    sf->seq = ref.seq;
    sf->life.hold();  // over the BTL call, as in submit_direct()
    const bool done = transmit_or_defer(sf, find_bml(sf->peer, btl_of(path)), path, retransmit);
    sf->life.let_go();
    destroy_if_done(sf);
    return done;
}

void Glue::send_unsequenced(PeerId peer, PathId path, const std::uint8_t* buf,
                            std::size_t len) noexcept {
    mca_btl_base_module_t* btl = btl_of(path);
    mca_bml_base_btl_t* bb = find_bml(peer, btl);
    if (bb == nullptr || (is_fail_btl(btl) && g_rel.fail_btl_dead)) {
        ++g_rel.acks_dropped;  // lost like on a network; the sender's timer covers it
        return;
    }
    if (btl->btl_sendi != nullptr &&
        mca_bml_base_sendi(bb, nullptr, const_cast<std::uint8_t*>(buf), len, 0, MCA_BTL_NO_ORDER,
                           kFrameDesFlags, kBtlTag, nullptr) == OMPI_SUCCESS)
        return;
    mca_btl_base_descriptor_t* des = nullptr;
    mca_bml_base_alloc(bb, &des, MCA_BTL_NO_ORDER, len, kFrameDesFlags);
    if (des == nullptr) {
        ++g_rel.acks_dropped;
        return;
    }
    std::memcpy(des->des_segments[0].seg_addr.pval, buf, len);
    des->des_segments[0].seg_len = len;
    des->des_cbfunc = control_sent;
    des->des_cbdata = nullptr;
    // Counted before the call: a BTL may call back inside it (then returns 0).
    ++g_rel.control_queued;
    const int rc = mca_bml_base_send(bb, des, kBtlTag);
    if (rc != 0)  // 1: sent whole inside the call, no callback; < 0: not sent
        --g_rel.control_queued;
    if (rc < 0) {
        mca_bml_base_free(bb, des);
        ++g_rel.acks_dropped;
    }
}

void Glue::send_ack(PeerId peer, PathId path, const core::AckInfo& ack) {
    core::AckHdr h;
    h.common = make_common(peer, ack.credit_answer ? core::kFlagCreditAnswer : 0);
    h.common.type = core::FrameType::Ack;
    h.common.ack_seq = ack.cum_seq;
    h.sack_base = ack.sack_base;
    h.sack_mask = ack.sack_mask;
    h.ack_delay = saturate_u32(ack.delay);
    h.max_ack_delay = saturate_u32(ack.max_delay);
    h.released_total = ack.released_total;
    std::uint8_t buf[core::kAckHeaderSize];
    (void)core::encode(h, buf);
    send_unsequenced(peer, path, buf, sizeof buf);
}

void Glue::send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) {
    core::ProbeHdr h;
    h.common = make_common(peer, 0);
    h.common.type = reply ? core::FrameType::ProbeAck : core::FrameType::Probe;
    h.probe_id = id;
    h.reply = reply;
    std::uint8_t buf[core::kProbeHeaderSize];
    (void)core::encode(h, buf);
    send_unsequenced(peer, path, buf, sizeof buf);
}

void Glue::send_bye(PeerId peer, PathId path) {
    core::ByeHdr h;
    h.common = make_common(peer, 0);
    h.common.type = core::FrameType::Bye;
    std::uint8_t buf[core::kByeHeaderSize];
    (void)core::encode(h, buf);
    send_unsequenced(peer, path, buf, sizeof buf);
}

void Glue::send_nack(PeerId peer, PathId path, std::uint32_t seq) {
    core::NackHdr h;
    h.common = make_common(peer, 0);
    h.common.type = core::FrameType::Nack;
    h.seq = seq;
    std::uint8_t buf[core::kNackHeaderSize];
    (void)core::encode(h, buf);
    send_unsequenced(peer, path, buf, sizeof buf);
}

// The channel makes a peer's state on its first use: its BML send paths
// (minus modules gone), then standby paths, opened now. Their BTLs bound the
// peer's frames: a frame built for one path may be resent on any other.
void Glue::offer_paths(PeerId peer, std::vector<core::PathOffer>& out) {
    ompi_proc_t* proc = proc_of(peer);
    mca_bml_base_endpoint_t* ep = proc != nullptr ? mca_bml_base_get_endpoint(proc) : nullptr;
    if (ep == nullptr)
        return;
    if (g_rel.limits.size() <= peer)
        g_rel.limits.resize(peer + 1);
    PeerLimits& lim = g_rel.limits[peer];
    const auto offer = [&](const mca_btl_base_module_t* btl, bool standby) {
        out.push_back(core::PathOffer{path_of(btl), standby});
        lim.max_frame = std::min(lim.max_frame, btl->btl_max_send_size);
        lim.eager = std::min(lim.eager, btl->btl_eager_limit);
    };
    for (const mca_btl_base_module_t* btl : bml_send_btls(ep)) {
        if (btl_gone(btl))
            continue;
        offer(btl, false);
        logf(*state().log, LogLevel::Debug, "peer %s: path over BTL %s",
             OMPI_NAME_PRINT(&proc->super.proc_name), btl_name(btl));
    }
    for (const mca_btl_base_module_t* btl : standby_btls(peer))
        if (!btl_gone(btl))
            offer(btl, true);
}

void Glue::path_failed(PeerId peer, PathId path) {
    const State& s = state();
    ompi_proc_t* proc = proc_of(peer);
    logf(*s.log, LogLevel::Warn, "path to %s over BTL %s failed; traffic moves to other paths",
         proc != nullptr ? OMPI_NAME_PRINT(&proc->super.proc_name) : "?", btl_name(btl_of(path)));
}

void Glue::peer_dead(PeerId peer) {
    const State& s = state();
    ompi_proc_t* proc = proc_of(peer);
    logf(*s.log, LogLevel::Error,
         "peer %s declared dead (no path left or no answer); its requests fail",
         proc != nullptr ? OMPI_NAME_PRINT(&proc->super.proc_name) : "?");
    const core::PeerWaiters w = engine().fail_peer(peer);
    for (core::Handle h : w.posted_recvs)
        recv_complete(from_handle<RecvRequest>(h), MPI_ERR_OTHER);
    for (core::Handle h : w.active_recvs) {
        auto* r = from_handle<RecvRequest>(h);
        r->wire_id = 0;  // the engine dropped it already
        recv_complete(r, MPI_ERR_OTHER);
    }
    for (core::Handle h : w.sends) {
        auto* r = from_handle<SendRequest>(h);
        r->wire_id = 0;
        fail_send(r);
    }
}

void Glue::release(core::FrameToken token, bool acked) noexcept {
    auto* sf = from_handle<StoredFrame>(token);
    advance(sf, acked ? core::CopyState::Acked : core::CopyState::Abandoned,
            acked ? "acknowledged" : "abandoned");
    destroy_if_done(sf);
}

}  // namespace

mca_bml_base_btl_t* find_bml(PeerId peer, const mca_btl_base_module_t* btl) noexcept {
    mca_bml_base_endpoint_t* ep = endpoint_of(peer);
    if (ep == nullptr)
        return nullptr;
    for (mca_bml_base_btl_array_t* arr : {&ep->btl_eager, &ep->btl_send}) {
        const std::size_t n = mca_bml_base_btl_array_get_size(arr);
        for (std::size_t i = 0; i < n; ++i) {
            mca_bml_base_btl_t* bb = mca_bml_base_btl_array_get_index(arr, i);
            if (bb->btl == btl)
                return bb;
        }
    }
    return standby_find(peer, btl);
}

std::vector<const mca_btl_base_module_t*> bml_send_btls(mca_bml_base_endpoint_t* ep) {
    std::vector<const mca_btl_base_module_t*> btls;
    for (mca_bml_base_btl_array_t* arr : {&ep->btl_eager, &ep->btl_send}) {
        const std::size_t n = mca_bml_base_btl_array_get_size(arr);
        for (std::size_t i = 0; i < n; ++i) {
            const mca_btl_base_module_t* btl = mca_bml_base_btl_array_get_index(arr, i)->btl;
            if (std::find(btls.begin(), btls.end(), btl) == btls.end())
                btls.push_back(btl);
        }
    }
    return btls;
}

StoredFrame* new_frame(PeerId peer, std::size_t bytes) noexcept {
    // Large buffers too short for this frame are from messages of an earlier
    // size: freed, not grown (growing copies the stale bytes along).
    while (bytes > kSmallFrame && !g_rel.pool_large.empty() &&
           g_rel.pool_large.back()->bytes.capacity() < bytes) {
        g_rel.pooled_bytes -= g_rel.pool_large.back()->bytes.capacity();
        delete g_rel.pool_large.back();
        g_rel.pool_large.pop_back();
    }
    std::vector<StoredFrame*>& pool =
        bytes > kSmallFrame && !g_rel.pool_large.empty() ? g_rel.pool_large : g_rel.pool_small;
    StoredFrame* sf = nullptr;
    if (pool.empty()) {
        // Out of memory for a frame's bookkeeping ends the process, as any
        // other allocation failure of this noexcept glue would.
        sf = new StoredFrame;  // NOLINT(bugprone-unhandled-exception-at-new)
    } else {
        sf = pool.back();
        pool.pop_back();
        g_rel.pooled_bytes -= sf->bytes.capacity();
        // The buffer is kept with its old length and content (every caller
        // sets the bytes): resizing a frame to the length it had zero-fills
        // nothing.
        std::vector<std::uint8_t> keep = std::move(sf->bytes);
        *sf = StoredFrame{};
        sf->bytes = std::move(keep);
    }
    sf->peer = peer;
    return sf;
}

void discard_frame(StoredFrame* sf) noexcept {
    const std::size_t cap = sf->bytes.capacity();
    if (g_rel.pooled_bytes + cap <= kPoolBytes &&
        g_rel.pool_small.size() + g_rel.pool_large.size() < kPoolMax) {
        (cap > kSmallFrame ? g_rel.pool_large : g_rel.pool_small).push_back(sf);
        g_rel.pooled_bytes += cap;
        return;
    }
    delete sf;
}

void reliability_init(const core::Config& config, plugin::common::OpalLogSink& log) {
    state().reliable = std::make_unique<core::ReliableEngine>(config, g_rel.glue, log);
    // Each process draws its own faults; the seed keeps a run reproducible.
    g_rel.faults = plugin::common::FaultInjector(
        config.fault_drop, config.fault_corrupt, config.fault_dup,
        config.fault_seed * 0x100000001B3ull + OMPI_PROC_MY_NAME->vpid);
    g_rel.timer.init([](Micros now) {
        Guard g;
        g_rel.now = now;
        rel().on_timer(now);
        rearm(true);
    });
}

void reliability_add_peer(PeerId peer, ompi_proc_t* proc) {
    // The channel's state for the peer comes with its first use
    // (Glue::offer_paths): a process of the job never talked to costs it
    // nothing. Its standby endpoints are opened now, outside any BTL
    // callback (a BTL's add_procs from inside another's callback would take
    // that BTL's locks under ours).
    if (g_rel.limits.size() <= peer)
        g_rel.limits.resize(peer + 1);
    mca_bml_base_endpoint_t* ep = mca_bml_base_get_endpoint(proc);
    if (ep == nullptr)
        return;
    const std::vector<const mca_btl_base_module_t*> bml = bml_send_btls(ep);
    // Frames to ourselves arrive on self, exempt from fault injection.
    if (proc == ompi_proc_local_proc)
        for (const mca_btl_base_module_t* btl : bml)
            if (std::string_view(btl_name(btl)) == "self")
                g_rel.self_btl = btl;
    const std::size_t max_paths = chan().params().max_paths;
    standby_add_peer(peer, proc, max_paths > bml.size() ? max_paths - bml.size() : 0);
}

int submit_frame(StoredFrame* sf, const mca_btl_base_module_t* hint) noexcept {
    g_rel.now = monotonic_now();
    const std::size_t bytes = sf->repack ? sf->bytes.size() + sf->len : sf->bytes.size();
    // The channel's from now: it may transmit it inside submit().
    advance(sf, core::CopyState::InChannel, "submitted");
    const core::SubmitResult res =
        chan().submit(sf->peer, reinterpret_cast<core::FrameToken>(sf), g_rel.now, bytes,
                      hint != nullptr ? path_of(hint) : core::kAnyPath);
    rearm();
    if (res.ok())
        return OMPI_SUCCESS;
    drop_prebuilt(sf);
    discard_frame(sf);
    return res.status == core::SubmitStatus::WindowFull ? OMPI_ERR_OUT_OF_RESOURCE
                                                        : OMPI_ERR_UNREACH;
}

namespace {

// The hot path of small frames: the BTL's sendi first, the channel's
// bookkeeping (submit_checked) right after, off the path from the send to the
// wire. Not on self, which delivers inside sendi (the ACK of a frame not yet
// recorded could come back), nor on a BTL fault injection is to kill. False:
// nothing sent, nothing recorded (the usual order follows).
[[gnu::always_inline]] inline bool sendi_then_record(StoredFrame* sf, mca_bml_base_btl_t* bb,
                                                     PathId path,
                                                     const core::SubmitCheck* checked) noexcept {
    mca_btl_base_module_t* btl = bb->btl;
    const std::size_t size = sf->bytes.size();
    if (!sendi_fits(btl, size) || btl == g_rel.self_btl || sf->repack || sf->prebuilt != nullptr ||
        is_fail_btl(btl))
        return false;
    const PeerId peer = sf->peer;
    const core::SubmitCheck check =
        checked != nullptr ? *checked : chan().check_submit_on(peer, path);
    if (!check.ok())
        return false;
    stamp_copy(sf, check.seq, check.ack, sf->flags, false);
    if (!sendi_copy(sf, bb))
        return false;
    advance(sf, core::CopyState::InChannel, "sent inline");
    // Read only now: nothing before the BTL's call needs the time.
    g_rel.now = monotonic_now();
    // Nothing ran in between (the BTL calls nothing back), so the channel
    // assigns the seq the frame went with.
    const core::SubmitResult res = chan().submit_checked(
        peer, path, check, reinterpret_cast<core::FrameToken>(sf), g_rel.now, size);
    sf->seq = res.seq;
    handed_over(sf);
    if (!res.ok() || res.seq != check.seq) {
        logf(*state().log, LogLevel::Error,
             "frame to peer %u sent as seq %u but recorded as %u (%s)", peer, check.seq, res.seq,
             std::string(core::to_string(res.status)).c_str());
        if (!res.ok()) {  // the channel will never release it
            advance(sf, core::CopyState::Abandoned, "not recorded");
            destroy_if_done(sf);
        }
    }
    return true;
}

}  // namespace

int submit_direct(StoredFrame* sf, mca_bml_base_btl_t* bb, bool* handed,
                  const core::SubmitCheck* checked) noexcept {
    const PathId path = path_of(bb->btl);
    if (sendi_then_record(sf, bb, path, checked)) {
        if (handed != nullptr)
            *handed = true;
        settle_batches();
        rearm();
        return OMPI_SUCCESS;
    }
    g_rel.now = monotonic_now();
    const std::size_t bytes = sf->repack ? sf->bytes.size() + sf->len : sf->bytes.size();
    const auto token = reinterpret_cast<core::FrameToken>(sf);
    const core::SubmitResult res = chan().submit_on(sf->peer, path, token, g_rel.now, bytes);
    if (res.status == core::SubmitStatus::NoPath) {
        // The channel picks another path (a failover: rare); the frame may
        // be gone when that returns, so it counts as handed.
        if (handed != nullptr)
            *handed = true;
        const mca_bml_base_btl_t* nearest = nearest_usable(sf->peer);
        return submit_frame(sf, nearest != nullptr ? nearest->btl : bb->btl);
    }
    if (!res.ok()) {
        drop_prebuilt(sf);
        discard_frame(sf);
        return res.status == core::SubmitStatus::WindowFull ? OMPI_ERR_OUT_OF_RESOURCE
                                                            : OMPI_ERR_UNREACH;
    }
    sf->seq = res.seq;
    advance(sf, core::CopyState::InChannel, "submitted on its path");
    // Held over the BTL call: one that delivers inside its send (self) may
    // bring the ACK back, which must not free the frame under it.
    sf->life.hold();
    (void)transmit_or_defer(sf, bb, path, false, false);
    sf->life.let_go();
    if (handed != nullptr)
        *handed = sf->life.past_handover();  // a BTL took it, it was acked, or the peer is gone
    destroy_if_done(sf);
    settle_batches();
    rearm();
    return OMPI_SUCCESS;
}

core::SubmitCheck check_submit(PeerId peer, const mca_btl_base_module_t* btl) noexcept {
    return chan().check_submit_on(peer, path_of(btl));
}

bool use_peer(PeerId peer) noexcept {
    return chan().ensure_peer(peer);
}

bool path_usable(PeerId peer, const mca_btl_base_module_t* btl) noexcept {
    // Asked only about peers being sent to: one that went to rest (or was
    // never used) gets its state, and its paths, back now.
    (void)use_peer(peer);
    return chan().path_preferred(peer, path_of(btl));
}

mca_bml_base_btl_t* nearest_usable(PeerId peer) noexcept {
    mca_bml_base_endpoint_t* ep = endpoint_of(peer);
    if (ep == nullptr)
        return nullptr;
    constexpr std::size_t kMax = 2 * core::kMaxSchedPaths;
    std::array<core::PathRank, kMax> rank{};
    std::array<mca_bml_base_btl_t*, kMax> entry{};
    std::size_t n = 0;
    for (mca_bml_base_btl_array_t* arr : {&ep->btl_eager, &ep->btl_send}) {
        const std::size_t size = mca_bml_base_btl_array_get_size(arr);
        for (std::size_t i = 0; i < size && n < kMax; ++i, ++n) {
            mca_bml_base_btl_t* bb = mca_bml_base_btl_array_get_index(arr, i);
            rank[n] = {bb->btl->btl_latency, bb->btl->btl_bandwidth, path_usable(peer, bb->btl)};
            entry[n] = bb;
        }
    }
    const std::size_t best = core::pick_nearest({rank.data(), n});
    return best == core::kNoPath ? nullptr : entry[best];
}

std::uint32_t next_seq(PeerId peer) noexcept {
    return chan().next_seq(peer);
}

std::uint32_t ack_seq_for(PeerId peer) noexcept {
    return chan().ack_seq(peer);
}

void settle_carried_acks(PeerId peer) noexcept {
    chan().settle_carried(peer);
}

std::size_t live_paths(PeerId peer) noexcept {
    (void)use_peer(peer);  // as path_usable(): a resting peer's paths come back
    return chan().live_paths(peer);
}

bool peer_is_dead(PeerId peer) noexcept {
    // A request's send starts here (start_send): the peer is used from now.
    // One nothing was offered for reads as dead.
    (void)use_peer(peer);
    return chan().peer_state(peer) == core::PeerState::Dead;
}

std::size_t frame_cap(PeerId peer) noexcept {
    return peer < g_rel.limits.size() ? g_rel.limits[peer].max_frame : 0;
}
std::size_t eager_cap(PeerId peer) noexcept {
    return peer < g_rel.limits.size() ? g_rel.limits[peer].eager : 0;
}

void reliability_on_frame(mca_btl_base_module_t* btl,
                          std::span<const std::uint8_t> frame) noexcept {
    g_rel.now = monotonic_now();
    if (g_rel.fail_btl_dead && is_fail_btl(btl)) {
        ++g_rel.frames_killed_rx;  // its network is gone: nothing arrives on it
        return;
    }
    core::ReliableEngine& r = rel();
    const auto path = path_of(btl);
    // The self BTL is a copy inside this process: faults injected there
    // would test nothing a network can do, only slow MPI_Ssend to self.
    if (!g_rel.faults.enabled() || btl == g_rel.self_btl) {
        (void)r.on_frame(frame, engine_sink(), path, g_rel.now);
        note_batches_due();
        rearm();
        return;
    }
    const plugin::common::FaultPlan plan = g_rel.faults.next(frame.size());
    if (plan.drop)
        return;
    if (plan.corrupt) {
        g_rel.scratch.assign(frame.begin(), frame.end());
        g_rel.scratch[plan.byte] ^= plan.mask;
        frame = g_rel.scratch;
    }
    // A copy: the first delivery may reuse the scratch buffer (nested frames
    // do not arrive here, but the BTL's buffer must stay untouched anyway).
    const std::vector<std::uint8_t> again =
        plan.duplicate ? std::vector<std::uint8_t>(frame.begin(), frame.end())
                       : std::vector<std::uint8_t>{};
    (void)r.on_frame(frame, engine_sink(), path, g_rel.now);
    if (plan.duplicate)
        (void)r.on_frame(again, engine_sink(), path, g_rel.now);
    note_batches_due();
    rearm();
}

void reliability_btl_error(mca_btl_base_module_t* btl, opal_proc_t* errproc) noexcept {
    g_rel.now = monotonic_now();
    if (errproc != nullptr) {
        PeerId peer = 0;
        if (engine().find_peer(core::PeerName{errproc->proc_name.jobid, errproc->proc_name.vpid},
                               peer))
            rel().path_lost(peer, path_of(btl), g_rel.now);
    } else {
        // The whole module is gone: no peer is offered it any more.
        if (!btl_gone(btl))
            g_rel.gone_btls.push_back(btl);
        rel().path_lost_to_all(path_of(btl), g_rel.now);
    }
    rearm();
}

void reliability_declare_dead(PeerId peer, const char* reason) noexcept {
    g_rel.now = monotonic_now();
    rel().declare_dead(peer, reason);
    rearm();
}

namespace {

// From the moment MPI_Finalize starts, peers leave as soon as their own
// frames are acknowledged: ranks come out of finalize's fence at different
// times, and an ACK, PROBE or resend of ours, sent while we still wait in
// that fence or drain below, may meet a socket a departed peer closed. A BTL
// writing to it (tcp uses writev) would kill this process with SIGPIPE
// instead of getting EPIPE. Nothing is left to lose by ignoring it this
// late, unless the application handles it itself.
void ignore_sigpipe_once_finalizing() noexcept {
    static std::atomic<bool> done{false};
    if (done.load(std::memory_order_relaxed) || ompi_mpi_state < OMPI_MPI_STATE_FINALIZE_STARTED ||
        done.exchange(true))
        return;
    if (struct sigaction sa{}; sigaction(SIGPIPE, nullptr, &sa) == 0 && sa.sa_handler == SIG_DFL)
        std::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int reliability_progress() noexcept {
    ignore_sigpipe_once_finalizing();
    if (g_rel.batches_due.load(std::memory_order_relaxed)) {
        Guard g;
        g_rel.now = monotonic_now();
        settle_batches();
        rearm();
    }
    const Micros d = g_rel.deadline.load(std::memory_order_relaxed);
    if (d == kNever)
        return 0;
    const Micros now = monotonic_now();
    if (now < d)
        return 0;
    Guard g;
    g_rel.now = now;
    g_rel.timer.poll(now);
    return 1;
}

void reliability_drain() noexcept {
    if (!state().reliable)
        return;
    ignore_sigpipe_once_finalizing();
    // Frames still unacknowledged get their chance to arrive, and no peer is
    // written to once it may have left: the channel's BYE exchange (leave()).
    // Two ACK timeouts give a lost frame one resend and its ACK time to come
    // back; a peer that already left cannot answer, so do not wait longer.
    const Micros until = monotonic_now() + 2 * state().config.ack_timeout;
    {
        Guard g;
        g_rel.now = monotonic_now();
        chan().leave(g_rel.now);
        rearm();
    }
    auto pending = [] {
        Guard g;
        g_rel.now = monotonic_now();
        const std::size_t n = chan().leaving(g_rel.now);
        rearm();
        return n;
    };
    while (pending() > 0 && monotonic_now() < until)
        opal_progress();
    // Our last frames (the BYE that ends the exchange, ACKs) out of the BTLs'
    // queues: a process that exits with them queued loses them.
    while (g_rel.control_queued > 0 && monotonic_now() < until)
        opal_progress();
}

const core::ReliableChannel* channel() noexcept {
    return state().reliable ? &state().reliable->channel() : nullptr;
}

ReliabilityStats reliability_stats() noexcept {
    return ReliabilityStats{g_rel.faults.counters(), g_rel.acks_dropped, g_rel.frames_killed_rx,
                            g_rel.descriptor_waits};
}

void reliability_fini() noexcept {
    if (!state().reliable)
        return;
    Guard g;
    g_rel.now = monotonic_now();
    rel().remove_all_peers();
    g_rel.timer.shutdown();
    g_rel.limits.clear();
    for (auto* pool : {&g_rel.pool_small, &g_rel.pool_large}) {
        for (StoredFrame* sf : *pool)
            delete sf;
        pool->clear();
    }
    g_rel.pooled_bytes = 0;
}

}  // namespace pml::dr::mca
