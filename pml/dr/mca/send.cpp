// Send side: MATCH for small messages, RNDV + CTS + FRAGs for the rest.
#include <algorithm>

#include "crc32c.hpp"
#include "pml.hpp"
#include "reliability.hpp"
#include "standby.hpp"
#include "wire_io.hpp"

namespace pml::dr::mca {

void check_send_done(SendRequest* r) noexcept {
    // Frames the channel holds and puts the BTL holds refer to the request.
    if (r->frames_inflight != 0 || r->puts_outstanding != 0)
        return;
    if (r->failed) {
        send_pml_complete(r);
        return;
    }
    if (r->put_verdict_wait)
        return;  // the receiver may still ask for the put data again
    if (!r->rndv || (r->cts_received && r->bytes_scheduled >= r->bytes_target))
        send_pml_complete(r);
}

namespace {

void schedule_frags(SendRequest* r) noexcept;

// The next BTL of `arr` in round-robin order whose path to `peer` the
// channel has not declared failed; none left, the nearest usable one of the
// peer's other BML paths (lowest latency: btl_eager holds only the lowest,
// and a far NIC's latency is raised by the topology weights), then the
// standby path the channel promoted (standby.hpp), else the plain next one
// (the channel then picks a path itself or reports the peer unreachable).
mca_bml_base_btl_t* next_usable(mca_bml_base_btl_array_t* arr, core::PeerId peer) noexcept {
    const std::size_t n = mca_bml_base_btl_array_get_size(arr);
    mca_bml_base_btl_t* first = mca_bml_base_btl_array_get_next(arr);
    mca_bml_base_btl_t* bb = first;
    for (std::size_t i = 1; i < n && !path_usable(peer, bb->btl); ++i)
        bb = mca_bml_base_btl_array_get_next(arr);
    if (path_usable(peer, bb->btl))
        return bb;
    if (mca_bml_base_btl_t* nearest = nearest_usable(peer); nearest != nullptr)
        return nearest;
    mca_bml_base_btl_t* standby = standby_active(peer);
    return standby != nullptr ? standby : first;
}

// How a data frame is kept by the reliability layer until the peer has it.
struct FrameOpts {
    bool copy = false;     // keep a copy of the whole frame: the user's buffer is released first
    bool ack_now = false;  // the request waits for this frame's ACK
    // ack_now also when the frame's payload reaches this message offset (the last FRAG)
    std::uint64_t ack_now_at = ~std::uint64_t{0};
    bool mpi_on_handover = false;  // the request MPI-completes once a BTL has the frame
};

// Hands a filled data frame to the reliability channel, which sends it on
// this BTL unless it picks another path. frame_len 0: the BTL laid out the
// segments itself (prepare_src). The request holds one count per frame until
// the channel released it (frame_released).
int post_data_frame(SendRequest* r, mca_bml_base_btl_t* bb, mca_btl_base_descriptor_t* des,
                    std::size_t frame_len, std::size_t hdr_size, std::uint64_t offset,
                    std::size_t len, const FrameOpts& opts) noexcept {
    if (frame_len != 0)
        des->des_segments[0].seg_len = frame_len;
    const auto* seg0 = static_cast<const std::uint8_t*>(des->des_segments[0].seg_addr.pval);
    // A frame kept whole: whichever segments the BTL laid it out in.
    std::size_t total = 0;
    for (std::size_t i = 0; opts.copy && i < des->des_segment_count; ++i)
        total += des->des_segments[i].seg_len;
    StoredFrame* sf = new_frame(r->peer, opts.copy ? total : hdr_size);
    sf->owner = r;
    sf->prebuilt = des;
    sf->prebuilt_bb = bb;
    if (opts.copy) {
        sf->bytes.reserve(total);
        sf->bytes.assign(seg0, seg0 + des->des_segments[0].seg_len);
        for (std::size_t i = 1; i < des->des_segment_count; ++i) {
            const auto* seg = static_cast<const std::uint8_t*>(des->des_segments[i].seg_addr.pval);
            sf->bytes.insert(sf->bytes.end(), seg, seg + des->des_segments[i].seg_len);
        }
    } else {
        sf->bytes.assign(seg0, seg0 + hdr_size);
        sf->repack = len > 0;
        sf->offset = offset;
        sf->len = len;
    }
    if (opts.ack_now || offset + len >= opts.ack_now_at)
        sf->flags = core::kFlagAckNow;
    if (opts.mpi_on_handover)
        sf->mpi_waiter = r;
    ++r->frames_inflight;
    const int rc = submit_direct(sf, bb);
    if (rc != OMPI_SUCCESS)
        --r->frames_inflight;
    return rc;
}

// Builds one frame: header (encoded by `encode_hdr(out, csum, crc, len)` once
// the payload is packed) followed by up to `len` bytes packed from the
// request at `offset`. The convertor may pack less than asked (it stops at
// element boundaries of some datatypes); `len` returns what went.
// Large frames of contiguous data: the BTL's prepare_src may send straight
// from the user's buffer (tcp: a second iovec) instead of a bounce copy. The
// buffer stays borrowed until the frame's completion callback.
template <typename EncodeHdr>
int send_prepared_frame(SendRequest* r, mca_bml_base_btl_t* bb, std::size_t hdr_size,
                        std::uint64_t offset, std::size_t& len, const FrameOpts& opts,
                        EncodeHdr&& encode_hdr) noexcept {
    opal_convertor_t* conv = &r->base.req_base.req_convertor;
    size_t pos = offset;
    opal_convertor_set_position(conv, &pos);
    size_t size = len;
    mca_btl_base_descriptor_t* des = nullptr;
    mca_bml_base_prepare_src(bb, conv, MCA_BTL_NO_ORDER, hdr_size, &size, kFrameDesFlags, &des);
    if (des == nullptr)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (size == 0 || des->des_segments[0].seg_len < hdr_size) {
        mca_bml_base_free(bb, des);
        return OMPI_ERROR;
    }
    if (opts.copy && size != len) {
        // A frame kept whole (MATCH) carries the whole message: copy it instead.
        mca_bml_base_free(bb, des);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    len = size;
    const bool csum = csum_wanted(bb->btl);
    std::uint32_t crc = 0;
    if (csum) {
        // The payload follows the header in segment 0 and/or fills the next segments.
        const mca_btl_base_segment_t* seg = des->des_segments;
        const auto* first = static_cast<const std::uint8_t*>(seg[0].seg_addr.pval);
        crc = plugin::common::crc32c(first + hdr_size, seg[0].seg_len - hdr_size);
        for (size_t i = 1; i < des->des_segment_count; ++i)
            crc = plugin::common::crc32c(seg[i].seg_addr.pval, seg[i].seg_len, crc);
    }
    encode_hdr(std::span<std::uint8_t>(
                   static_cast<std::uint8_t*>(des->des_segments[0].seg_addr.pval), hdr_size),
               csum, crc, len);
    return post_data_frame(r, bb, des, 0, hdr_size, offset, len, opts);
}

// From this payload size on, a BTL that sends in place (tcp: the payload as
// a second iovec) gets eager frames and RNDV heads through prepare_src too:
// one user-space copy less (none for an RNDV head; an eager frame keeps only
// the copy for resending), worth the convertor's set-up.
constexpr std::size_t kInPlaceMin = 4096;

template <typename EncodeHdr>
int send_data_frame(SendRequest* r, mca_bml_base_btl_t* bb, std::size_t hdr_size,
                    std::uint64_t offset, std::size_t& len, const FrameOpts& opts,
                    EncodeHdr&& encode_hdr) noexcept {
    const mca_btl_base_module_t* btl = bb->btl;
    const bool in_place = (btl->btl_flags & MCA_BTL_FLAGS_SEND_INPLACE) != 0 && len >= kInPlaceMin;
    if ((len > btl->btl_eager_limit || in_place) && btl->btl_prepare_src != nullptr &&
        !opal_convertor_need_buffers(&r->base.req_base.req_convertor)) {
        const int rc = send_prepared_frame(r, bb, hdr_size, offset, len, opts, encode_hdr);
        if (rc != OMPI_ERR_NOT_AVAILABLE)
            return rc;
    }
    mca_btl_base_descriptor_t* des = nullptr;
    mca_bml_base_alloc(bb, &des, MCA_BTL_NO_ORDER, hdr_size + len, kFrameDesFlags);
    if (des == nullptr)
        return OMPI_ERR_OUT_OF_RESOURCE;
    auto* base = static_cast<std::uint8_t*>(des->des_segments[0].seg_addr.pval);
    const bool csum = csum_wanted(bb->btl);
    std::uint32_t crc = 0;
    if (len > 0) {
        ConvertorAt conv(&r->base.req_base.req_convertor, offset);
        if (!opal_convertor_need_buffers(conv.get())) {
            // Contiguous data: one pass copies it and, when wanted, checksums it.
            void* src = nullptr;
            opal_convertor_get_current_pointer(conv.get(), &src);
            if (csum)
                crc = plugin::common::crc32c_copy(base + hdr_size, src, len);
            else
                std::memcpy(base + hdr_size, src, len);
        } else {
            iovec iov{base + hdr_size, len};
            uint32_t iov_count = 1;
            size_t max_data = len;
            if (opal_convertor_pack(conv.get(), &iov, &iov_count, &max_data) < 0 ||
                (max_data == 0 && len != 0)) {
                mca_bml_base_free(bb, des);
                return OMPI_ERROR;
            }
            len = max_data;
            if (csum)
                crc = plugin::common::crc32c(base + hdr_size, len);
        }
    }
    encode_hdr(std::span<std::uint8_t>(base, hdr_size), csum, crc, len);
    return post_data_frame(r, bb, des, hdr_size + len, hdr_size, offset, len, opts);
}

core::MatchFields match_fields(SendRequest* r, std::uint16_t seq, std::size_t len,
                               std::uint32_t crc) noexcept {
    core::MatchFields m;
    m.cid = r->cid;
    m.src_rank = r->my_rank;
    m.tag = r->base.req_base.req_tag;
    m.msg_seq = seq;
    m.payload_len = static_cast<std::uint32_t>(len);
    m.payload_crc = crc;
    return m;
}

void schedule_frags(SendRequest* r) noexcept {
    // A frame may be released from inside the loop (an ACK processed while
    // the BTL sends); frame_released must not re-enter it. Nothing left to
    // send (every RGET, every release after the last FRAG): nothing to weigh.
    if (r->scheduling || r->failed || r->bytes_scheduled >= r->bytes_target)
        return;
    r->scheduling = true;
    const unsigned window = state().config.pipeline_depth * state().config.vfrag_frags;
    mca_bml_base_btl_array_t* arr = &r->endpoint->btl_send;
    if (mca_bml_base_btl_array_get_size(arr) == 0)
        arr = &r->endpoint->btl_eager;
    // Frags go to the send BTLs in proportion to their weights (the BML
    // derives them from the BTLs' bandwidths).
    const std::size_t npaths = std::min(mca_bml_base_btl_array_get_size(arr), core::kMaxSchedPaths);
    double weights[core::kMaxSchedPaths];
    for (std::size_t i = 0; i < npaths; ++i) {
        const mca_bml_base_btl_t* bb = mca_bml_base_btl_array_get_index(arr, i);
        // A path the channel declared failed gets nothing new.
        weights[i] = path_usable(r->peer, bb->btl) ? static_cast<double>(bb->btl_weight) : 0.0;
    }
    // A BTL that reports no bandwidth (stock tcp on loopback) has BML weight
    // 0; once the weighted paths failed, the usable ones share evenly rather
    // than the scheduler falling back to a dead one.
    const auto none = [&weights, npaths] {
        return std::all_of(weights, weights + npaths, [](double w) { return w <= 0.0; });
    };
    // Every send BTL failed: the standby path the channel promoted takes all.
    mca_bml_base_btl_t* standby = nullptr;
    if (none()) {
        for (std::size_t i = 0; i < npaths; ++i)
            weights[i] =
                path_usable(r->peer, mca_bml_base_btl_array_get_index(arr, i)->btl) ? 1.0 : 0.0;
        if (none())
            standby = standby_active(r->peer);
    }
    // Frags fit every path, so any of them can carry a resend.
    const std::size_t cap = frame_cap(r->peer);
    while (!r->failed && r->bytes_scheduled < r->bytes_target && r->frames_inflight < window) {
        const std::size_t path = core::pick_weighted({weights, npaths}, {r->path_bytes, npaths});
        mca_bml_base_btl_t* bb =
            standby != nullptr ? standby : mca_bml_base_btl_array_get_index(arr, path);
        const std::size_t max_payload =
            std::min(bb->btl->btl_max_send_size, cap) - core::kFragHeaderSize;
        std::size_t len = static_cast<std::size_t>(
            std::min<std::uint64_t>(r->bytes_target - r->bytes_scheduled, max_payload));
        const std::uint64_t offset = r->bytes_scheduled;
        const std::uint64_t recv_id = r->peer_recv_id;
        FrameOpts opts;
        opts.ack_now_at = r->bytes_target;
        const int rc = send_data_frame(
            r, bb, core::kFragHeaderSize, offset, len, opts,
            [&](std::span<std::uint8_t> out, bool csum, std::uint32_t crc, std::size_t sent) {
                core::FragHdr h;
                h.common = make_common(r->peer, csum_flag(csum));
                h.recv_req = recv_id;
                h.offset = offset;
                h.payload_len = static_cast<std::uint32_t>(sent);
                h.payload_crc = crc;
                (void)core::encode(h, out);
            });
        if (rc == OMPI_SUCCESS) {
            r->bytes_scheduled = offset + len;
            r->path_bytes[path] += len;
            continue;
        }
        if (rc == OMPI_ERR_OUT_OF_RESOURCE) {
            // Out of descriptors: resume from progress once some complete.
            // One queued retry per request; completing the request drops it.
            if (!r->frags_deferred) {
                r->frags_deferred = true;
                defer(r, [r] {
                    r->frags_deferred = false;
                    if (!r->failed && !r->base.req_base.req_pml_complete) {
                        schedule_frags(r);  // queues a new retry if still short
                        check_send_done(r);
                    }
                    return true;
                });
            }
            break;
        }
        plugin::common::logf(*state().log, plugin::common::LogLevel::Warn,
                             "send to peer %u: cannot send a frag (error %d)", r->peer, rc);
        r->failed = true;
    }
    r->scheduling = false;
}

}  // namespace

void frame_released(SendRequest* r, bool acked) noexcept {
    --r->frames_inflight;
    if (!acked) {
        plugin::common::logf(*state().log, plugin::common::LogLevel::Warn,
                             "send to peer %u: a frame will never be acknowledged", r->peer);
        r->failed = true;
    }
    if (r->scheduling)
        return;  // the scheduling loop above us checks again
    if (r->rndv && r->cts_received && !r->failed)
        schedule_frags(r);
    check_send_done(r);
}

void resend_as_frags(SendRequest* r) noexcept {
    schedule_frags(r);
}

void fail_send(SendRequest* r) noexcept {
    r->failed = true;
    if (!r->scheduling)
        check_send_done(r);
}

int send_put_done_frame(SendRequest* r) noexcept {
    std::size_t len = 0;
    FrameOpts opts;
    // Without a CRC the send completes on this frame's ACK; with one, on the
    // receiver's verdict, a CTS that acknowledges this frame too.
    opts.ack_now = !r->put_verify;
    const std::uint64_t recv_id = r->peer_recv_id;
    const std::uint64_t end = r->bytes_target;
    const auto flags = static_cast<std::uint16_t>(
        core::kFlagPutDone | (r->put_verify ? std::uint16_t{core::kFlagPayloadCsum} : 0));
    const std::uint32_t crc = r->put_verify ? r->put_crc : 0;
    return send_data_frame(r, r->rdma_btl, core::kFragHeaderSize, end, len, opts,
                           [&](std::span<std::uint8_t> out, bool, std::uint32_t, std::size_t) {
                               core::FragHdr h;
                               h.common = make_common(r->peer, flags);
                               h.recv_req = recv_id;
                               h.offset = end;
                               h.payload_crc = crc;
                               (void)core::encode(h, out);
                           });
}

bool csum_wanted(const mca_btl_base_module_t* btl) noexcept {
    // Injected corruption would otherwise reach the application unnoticed
    // on BTLs that do not ask for checksums.
    if (state().config.fault_corrupt > 0.0)
        return true;
    switch (state().config.csum) {
        case core::CsumMode::Always:
            return true;
        case core::CsumMode::Never:
            return false;
        case core::CsumMode::Auto:
            return (btl->btl_flags & MCA_BTL_FLAGS_NEED_CSUM) != 0;
    }
    return true;
}

core::Common make_common(core::PeerId peer, std::uint16_t flags) noexcept {
    return common_acking(ack_seq_for(peer), flags);
}

core::Common common_acking(std::uint32_t ack_seq, std::uint16_t flags) noexcept {
    core::Common c;
    c.flags = flags;
    c.src_jobid = OMPI_PROC_MY_NAME->jobid;
    c.src_vpid = OMPI_PROC_MY_NAME->vpid;
    c.ack_seq = ack_seq;
    return c;
}

namespace {

// RGET: the RNDV carries our registration handle instead of data and goes
// out on the BTL the receiver will read through.
int send_rget_frame(SendRequest* r, std::uint16_t seq) noexcept {
    mca_bml_base_btl_t* bb = r->rdma_btl;
    // With checksums the data's CRC32C follows the handle (kFlagDataCsum):
    // the receiver checks what its gets brought.
    const bool data_csum = csum_wanted(bb->btl);
    const std::size_t hlen = bb->btl->btl_registration_handle_size;
    const std::size_t plen = hlen + (data_csum ? core::kDataCsumSize : 0);
    if (bb->btl->btl_eager_limit < core::kRndvHeaderSize + plen)
        return OMPI_ERR_NOT_AVAILABLE;
    mca_btl_base_descriptor_t* des = nullptr;
    mca_bml_base_alloc(bb, &des, MCA_BTL_NO_ORDER, core::kRndvHeaderSize + plen, kFrameDesFlags);
    if (des == nullptr)
        return OMPI_ERR_OUT_OF_RESOURCE;
    auto* base = static_cast<std::uint8_t*>(des->des_segments[0].seg_addr.pval);
    if (hlen > 0)
        std::memcpy(base + core::kRndvHeaderSize, r->rdma_handle, hlen);
    void* addr = buffer_start(&r->base.req_base.req_convertor);
    if (data_csum)
        plugin::common::ByteWriter(
            std::span(base + core::kRndvHeaderSize + hlen, core::kDataCsumSize))
            .u32(plugin::common::crc32c(addr, static_cast<std::size_t>(r->base.req_bytes_packed)));
    const bool sync = r->base.req_send_mode == MCA_PML_BASE_SEND_SYNCHRONOUS;
    // The receiver releases the handle's bytes like eager data: charge them.
    (void)engine().try_charge_eager(r->peer, plen, true);
    core::RndvHdr h;
    h.common =
        make_common(r->peer, static_cast<std::uint16_t>(core::kFlagPayloadCsum | core::kFlagRget |
                                                        (data_csum ? core::kFlagDataCsum : 0) |
                                                        (sync ? core::kFlagSync : 0)));
    h.match =
        match_fields(r, seq, plen, plugin::common::crc32c(base + core::kRndvHeaderSize, plen));
    h.msg_len = r->base.req_bytes_packed;
    h.send_req = r->wire_id;
    h.remote_addr = reinterpret_cast<std::uint64_t>(addr);
    (void)core::encode(h, std::span<std::uint8_t>(base, core::kRndvHeaderSize));
    FrameOpts opts;
    opts.copy = true;  // small, and the handle is not in the user's buffer
    // No ACK frame asked for: the CTS that ends the send carries its ack.
    const int rc = post_data_frame(r, bb, des, core::kRndvHeaderSize + plen, core::kRndvHeaderSize,
                                   0, plen, opts);
    if (rc != OMPI_SUCCESS)
        engine().uncharge_eager(r->peer, plen);
    return rc;
}

// Sends the first frame of a message: the whole of it (MATCH) or its head
// (RNDV). The msg_seq is already taken, so a failure for lack of resources
// must retry with the same seq rather than give up.
int send_first_frame(SendRequest* r, std::uint16_t seq) noexcept {
    State& s = state();
    mca_bml_base_btl_t* bb = next_usable(&r->endpoint->btl_eager, r->peer);
    const std::size_t size = r->base.req_bytes_packed;
    // Frames fit every path to the peer, so any of them can carry a resend.
    const std::size_t btl_eager = std::min(bb->btl->btl_eager_limit, eager_cap(r->peer));
    const bool sync = r->base.req_send_mode == MCA_PML_BASE_SEND_SYNCHRONOUS;

    core::Engine& eng = engine();
    const core::PeerId peer = r->peer;
    // A retry after running out of resources keeps the protocol chosen first
    // (an RNDV already has its wire id and expects a CTS).
    const bool eager_sized =
        !r->rndv && !sync && btl_eager > core::kMatchHeaderSize &&
        size <= std::min(s.config.eager_limit, btl_eager - core::kMatchHeaderSize);
    const core::EagerGrant grant =
        eager_sized ? s.reliable->grant_eager(peer, size) : core::EagerGrant::NoRoom;
    // Our credit question's answer is on its way in an ACK: retried from
    // progress until it came (or nothing is in flight any more).
    if (grant == core::EagerGrant::Wait)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (grant == core::EagerGrant::Send || grant == core::EagerGrant::SendAndAsk) {
        const std::uint16_t ask =
            grant == core::EagerGrant::SendAndAsk ? core::kFlagCreditStarved : 0;
        std::size_t len = size;
        FrameOpts opts;
        opts.copy = true;  // the send completes (MPI) before the peer acknowledges
        opts.mpi_on_handover = true;
        const int rc = send_data_frame(
            r, bb, core::kMatchHeaderSize, 0, len, opts,
            [&](std::span<std::uint8_t> out, bool csum, std::uint32_t crc, std::size_t sent) {
                core::MatchHdr h;
                h.common = make_common(r->peer, static_cast<std::uint16_t>(csum_flag(csum) | ask));
                h.match = match_fields(r, seq, sent, crc);
                (void)core::encode(h, out);
            });
        if (rc != OMPI_SUCCESS) {
            eng.uncharge_eager(peer, size);
            if (ask != 0)
                eng.end_wait(peer);
            return rc;
        }
        eng.uncharge_eager(peer, size - len);
        // The data sits in the reliability layer's copy, so the user's buffer
        // is free once a BTL has the frame (handed_over() completes it).
        return rc;
    }

    r->rndv = true;
    if (r->wire_id == 0)
        r->wire_id = engine().register_send(reinterpret_cast<core::Handle>(r), r->peer);
    // The RNDV frame may be larger than an eager frame: BTLs say how large
    // with btl_rndv_eager_limit (vader: 32 KiB against 4 KiB eager), as ob1
    // uses it. A message that fits goes whole; longer ones use RGET where
    // possible (a get costs a system call on CMA, worth it only past this).
    const std::size_t rndv_frame = std::min({std::max(bb->btl->btl_rndv_eager_limit, btl_eager),
                                             bb->btl->btl_max_send_size, frame_cap(r->peer)});
    const bool fits_rndv =
        rndv_frame > core::kRndvHeaderSize && size <= rndv_frame - core::kRndvHeaderSize;
    if (!fits_rndv && (r->rdma_btl != nullptr || rget_prepare(r))) {
        const int rc = send_rget_frame(r, seq);
        if (rc != OMPI_ERR_NOT_AVAILABLE)
            return rc;
        rget_release_send(r);
    }
    // A message the receiver will likely have put in place goes without
    // data in its RNDV, as with ob1; one whose rest after a full RNDV frame
    // is short carries its head (the receiver sends that rest as FRAGs, see
    // rput_request: three frames instead of RNDV, PUT, put, PUT-done).
    const std::size_t rndv_room =
        rndv_frame > core::kRndvHeaderSize ? rndv_frame - core::kRndvHeaderSize : 0;
    const bool short_rest = rndv_room > 0 && size - rndv_room < bb->btl->btl_max_send_size;
    std::size_t first = rndv_room > 0 && (fits_rndv || short_rest || !rput_expected(r, bb))
                            ? std::min({size, rndv_room, s.config.eager_limit})
                            : 0;
    // Without eager credit the RNDV goes without data and asks for credit.
    const bool starved = first > 0 && !eng.try_charge_eager(r->peer, first);
    if (starved)
        first = 0;
    const std::size_t charged = first;
    const std::uint64_t wire_id = r->wire_id;
    const std::uint16_t flags = static_cast<std::uint16_t>(
        (sync ? core::kFlagSync : 0) | (starved ? core::kFlagCreditStarved : 0));
    // No ACK frame asked for: the request waits for the CTS (or PUT), whose
    // ack_seq acknowledges the RNDV once matched; an unmatched RNDV is acked
    // after pml_dr_ack_delay.
    FrameOpts opts;
    const int rc = send_data_frame(
        r, bb, core::kRndvHeaderSize, 0, first, opts,
        [&](std::span<std::uint8_t> out, bool csum, std::uint32_t crc, std::size_t sent) {
            core::RndvHdr h;
            h.common = make_common(r->peer, static_cast<std::uint16_t>(csum_flag(csum) | flags));
            h.match = match_fields(r, seq, sent, crc);
            h.msg_len = size;
            h.send_req = wire_id;
            (void)core::encode(h, out);
        });
    eng.uncharge_eager(r->peer, rc == OMPI_SUCCESS ? charged - first : charged);
    return rc;
}

}  // namespace

int start_send(SendRequest* r) noexcept {
    mca_pml_base_request_t& b = r->base.req_base;
    r->cid = plugin::common::local_cid(b.req_comm);
    r->my_rank = b.req_comm->c_my_rank;
    ompi_proc_t* proc = b.req_proc;
    r->endpoint = mca_bml_base_get_endpoint(proc);
    if (r->endpoint == nullptr || mca_bml_base_btl_array_get_size(&r->endpoint->btl_eager) == 0)
        return OMPI_ERR_UNREACH;
    core::CommMatcher* matcher = engine().comm(plugin::common::local_cid(b.req_comm));
    if (matcher == nullptr)
        return OMPI_ERR_BAD_PARAM;
    r->peer = peer_for(proc);
    if (peer_is_dead(r->peer))
        return kPeerDeadError;  // as its receives and pending requests (not MPI_ERR_INTERN)
    if (r->base.req_send_mode == MCA_PML_BASE_SEND_BUFFERED && r->base.req_bytes_packed > 0) {
        const int rc = mca_pml_base_bsend_request_start(&b.req_ompi);
        if (rc != OMPI_SUCCESS)
            return rc;
        // Buffered: the user's data is in the attached buffer already.
        send_mpi_complete(r, OMPI_SUCCESS);
    }
    const std::uint16_t seq = matcher->next_send_seq(b.req_peer);
    const int rc = send_first_frame(r, seq);
    if (rc == OMPI_ERR_OUT_OF_RESOURCE) {
        defer(r, [r, seq] {
            const int again = send_first_frame(r, seq);
            if (again == OMPI_ERR_OUT_OF_RESOURCE)
                return false;
            if (again != OMPI_SUCCESS) {
                // The msg_seq is spent: later messages to this rank on this
                // communicator cannot match until the reliability layer can
                // resend on another path. Say so loudly.
                plugin::common::logf(*state().log, plugin::common::LogLevel::Error,
                                     "send to peer %u: cannot send the first frame (error %d)",
                                     r->peer, again);
                r->failed = true;
                check_send_done(r);
            }
            return true;
        });
        return OMPI_SUCCESS;
    }
    if (rc != OMPI_SUCCESS) {
        matcher->undo_send_seq(b.req_peer);
        if (r->wire_id != 0) {
            engine().release_send(r->wire_id);
            r->wire_id = 0;
        }
    }
    return rc;
}

void handle_cts(SendRequest* r, const core::CtsHdr& cts) noexcept {
    if (r->base.req_base.req_pml_complete || rput_verdict(r, cts))
        return;
    if (r->cts_received)
        return;
    r->cts_received = true;
    r->peer_recv_id = cts.recv_req;
    r->bytes_target = std::min<std::uint64_t>(cts.want_len, r->base.req_bytes_packed);
    r->bytes_scheduled = std::min(cts.offset, r->bytes_target);
    schedule_frags(r);
    check_send_done(r);
}

namespace {

// One attempt at a control frame; false: the window is full. It goes
// straight onto the peer's next usable eager BTL, as data frames do (the
// channel picks a path itself when there is none).
bool try_send_control(core::PeerId peer, std::span<const std::uint8_t> frame) noexcept {
    (void)use_peer(peer);  // its paths are asked about below
    mca_bml_base_endpoint_t* ep = endpoint_of(peer);
    StoredFrame* sf = new_frame(peer);
    sf->bytes.assign(frame.begin(), frame.end());
    const int rc = ep != nullptr && mca_bml_base_btl_array_get_size(&ep->btl_eager) > 0
                       ? submit_direct(sf, next_usable(&ep->btl_eager, peer))
                       : submit_frame(sf, nullptr);
    if (rc == OMPI_ERR_OUT_OF_RESOURCE)
        return false;
    if (rc != OMPI_SUCCESS)
        plugin::common::logf(*state().log, plugin::common::LogLevel::Debug,
                             "control frame to peer %u dropped: peer unreachable", peer);
    return true;
}

}  // namespace

void send_control(core::PeerId peer, std::span<const std::uint8_t> frame) noexcept {
    // A full window waits for progress, with a copy of the frame.
    if (!try_send_control(peer, frame))
        defer(nullptr, [peer, bytes = std::vector<std::uint8_t>(frame.begin(), frame.end())] {
            return try_send_control(peer, bytes);
        });
}

}  // namespace pml::dr::mca
