// The MPI send entry points: isend/send/isend_init, and the inline path that
// sends small standard-mode messages without a request.
#include <cstring>

#include "crc32c.hpp"
#include "local_path.hpp"
#include "pml.hpp"
#include "reliability.hpp"

namespace pml::dr::mca {
namespace {

// Eager standard sends go out without a request: header and payload are
// built straight into the copy the reliability layer keeps, which goes to
// the BTL's sendi (a request, a descriptor and a completion callback less
// than the request path; the same two copies), or, on a BTL without one
// (tcp), into a descriptor the BTL usually sends whole inside its call
// (then owing no callback). Up to the largest frame of the small pool of
// kept copies.
constexpr std::size_t kInlineMax = 4096 - core::kMatchHeaderSize;

// A started, non-persistent send request (nullptr: none free).
SendRequest* new_send(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
                      mca_pml_base_send_mode_t mode, ompi_communicator_t* comm,
                      ompi_proc_t* proc) noexcept {
    SendRequest* r = alloc_send();
    if (r == nullptr)
        return nullptr;
    r->base.req_base.req_proc = proc;
    MCA_PML_BASE_SEND_REQUEST_INIT(&r->base, buf, count, dt, dst, tag, comm, mode, false, 0);
    mark_send_started(r);
    return r;
}

// A frame the BTL did not take at once (it queued the descriptor: tcp before
// its connection is up, a full fifo) gets a request that MPI-completes once
// the BTL has it (handed_over) and PML-completes on the ACK, as a request
// send would; nullptr if none is free (the frame still goes).
SendRequest* wait_for_handover(StoredFrame* sf, const void* buf, size_t count, ompi_datatype_t* dt,
                               int dst, int tag, ompi_communicator_t* comm,
                               ompi_proc_t* proc) noexcept {
    SendRequest* r = new_send(buf, count, dt, dst, tag, MCA_PML_BASE_SEND_STANDARD, comm, proc);
    if (r == nullptr)
        return nullptr;
    // What start_send() sets; its frame is sent already.
    r->cid = plugin::common::local_cid(comm);
    r->my_rank = comm->c_my_rank;
    r->endpoint = mca_bml_base_get_endpoint(proc);
    r->peer = sf->peer;
    r->frames_inflight = 1;
    sf->owner = r;
    sf->mpi_waiter = r;
    return r;
}

// pending: set when the send is not complete yet (wait_for_handover).
int send_inline(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
                ompi_communicator_t* comm, ompi_proc_t* proc, SendRequest*& pending) noexcept {
    const size_t type_size = dt->super.size;  // ompi_datatype_type_size(), without the call
    if (type_size * count > kInlineMax)
        return OMPI_ERR_NOT_AVAILABLE;
    mca_bml_base_endpoint_t* ep = mca_bml_base_get_endpoint(proc);
    if (ep == nullptr || mca_bml_base_btl_array_get_size(&ep->btl_eager) == 0)
        return OMPI_ERR_NOT_AVAILABLE;
    mca_bml_base_btl_t* bb = mca_bml_base_btl_array_get_next(&ep->btl_eager);
    core::CommMatcher* matcher = engine().comm(plugin::common::local_cid(comm));
    if (matcher == nullptr)
        return OMPI_ERR_NOT_AVAILABLE;
    const core::PeerId peer = peer_for(proc);
    if (type_size * count > state().config.eager_limit)
        return OMPI_ERR_NOT_AVAILABLE;
    if (engine().sends_local(peer) &&
        local_send(buf, count, dt, dst, tag, comm, proc, peer, *matcher, bb) == OMPI_SUCCESS)
        return OMPI_SUCCESS;
    // The full protocol from here, with the channel's state for the peer
    // (made on its first use) and its word on a frame over bb: the seq and
    // ack to encode (when it says no, submit_direct finds the way). The
    // frame must fit every path to the peer: a resend may take another.
    const core::SubmitCheck check = check_submit(peer, bb->btl);
    if (check.status == core::SubmitStatus::UnknownPeer ||
        core::kMatchHeaderSize + type_size * count > eager_cap(peer))
        return OMPI_ERR_NOT_AVAILABLE;

    // Packed straight into the copy the reliability layer keeps: a plain
    // copy for contiguous data between same-architecture processes, the
    // convertor otherwise.
    size_t size = type_size * count;
    StoredFrame* sf = new_frame(peer, core::kMatchHeaderSize + size);
    const bool csum = csum_wanted(bb->btl);
    std::uint32_t crc = 0;
    bool crc_done = false;
    if (size > 0 && proc->super.proc_arch == opal_local_arch &&
        ompi_datatype_is_contiguous_memory_layout(dt, static_cast<int32_t>(count))) {
        sf->bytes.resize(core::kMatchHeaderSize + size);
        const char* src = static_cast<const char*>(buf) + dt->super.true_lb;
        if (csum)
            crc = plugin::common::crc32c_copy(sf->bytes.data() + core::kMatchHeaderSize, src, size);
        else
            std::memcpy(sf->bytes.data() + core::kMatchHeaderSize, src, size);
        crc_done = true;
    } else if (size > 0) {
        opal_convertor_t conv;
        OBJ_CONSTRUCT(&conv, opal_convertor_t);
        opal_convertor_copy_and_prepare_for_send(proc->super.proc_convertor, &dt->super, count, buf,
                                                 0, &conv);
        opal_convertor_get_packed_size(&conv, &size);
        int prc = OMPI_ERR_NOT_AVAILABLE;
        size_t max_data = size;
        if (size <= kInlineMax && core::kMatchHeaderSize + size <= eager_cap(peer)) {
            sf->bytes.resize(core::kMatchHeaderSize + size);
            iovec iov{sf->bytes.data() + core::kMatchHeaderSize, size};
            uint32_t iov_count = 1;
            prc = opal_convertor_pack(&conv, &iov, &iov_count, &max_data);
        }
        OBJ_DESTRUCT(&conv);
        if (prc < 0 || max_data != size) {
            discard_frame(sf);
            return OMPI_ERR_NOT_AVAILABLE;
        }
    } else {
        sf->bytes.resize(core::kMatchHeaderSize);
    }
    // Past the eager window the request path decides (wait for the
    // answer to our credit question, or RNDV).
    const core::EagerGrant grant = state().reliable->grant_eager(peer, size);
    if (grant != core::EagerGrant::Send && grant != core::EagerGrant::SendAndAsk) {
        discard_frame(sf);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    const bool ask = grant == core::EagerGrant::SendAndAsk;
    std::uint8_t* frame = sf->bytes.data();
    if (csum && !crc_done)
        crc = plugin::common::crc32c(frame + core::kMatchHeaderSize, size);
    core::MatchHdr h;
    const auto flags =
        static_cast<std::uint16_t>(csum_flag(csum) | (ask ? core::kFlagCreditStarved : 0));
    h.common = check.ok() ? common_acking(check.ack, flags) : make_common(peer, flags);
    h.common.frame_seq = sf->encoded_seq = check.ok() ? check.seq : next_seq(peer);
    h.match.cid = plugin::common::local_cid(comm);
    h.match.src_rank = comm->c_my_rank;
    h.match.tag = tag;
    h.match.msg_seq = matcher->next_send_seq(dst);
    h.match.payload_len = static_cast<std::uint32_t>(size);
    h.match.payload_crc = csum ? crc : 0;
    (void)core::encode(h, std::span<std::uint8_t>(frame, core::kMatchHeaderSize));
    bool handed = false;
    const int rc = submit_direct(sf, bb, &handed, check.ok() ? &check : nullptr);
    if (rc != OMPI_SUCCESS) {
        matcher->undo_send_seq(dst);
        engine().uncharge_eager(peer, size);
        if (ask)
            engine().end_wait(peer);
        return OMPI_ERR_NOT_AVAILABLE;  // the request path tries again (or reports the error)
    }
    if (!handed)  // not released either: sf is alive
        pending = wait_for_handover(sf, buf, count, dt, dst, tag, comm, proc);
    return OMPI_SUCCESS;
}

}  // namespace

int isend(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
          mca_pml_base_send_mode_t mode, ompi_communicator_t* comm, ompi_request_t** req) noexcept {
    Guard g;
    ompi_proc_t* proc = ompi_comm_peer_lookup(comm, dst);
    SendRequest* pending = nullptr;
    if ((mode == MCA_PML_BASE_SEND_STANDARD || mode == MCA_PML_BASE_SEND_READY) &&
        send_inline(buf, count, dt, dst, tag, comm, proc, pending) == OMPI_SUCCESS) {
        if (pending != nullptr) {
            *req = &pending->base.req_base.req_ompi;
            return OMPI_SUCCESS;
        }
        // Nothing left to complete: the status of a send carries nothing else.
        *req = &ompi_request_empty;
        return OMPI_SUCCESS;
    }
    SendRequest* r = new_send(buf, count, dt, dst, tag, mode, comm, proc);
    if (r == nullptr)
        return OMPI_ERR_OUT_OF_RESOURCE;
    const int rc = start_send(r);
    if (rc != OMPI_SUCCESS) {
        plugin::common::logf(*state().log, plugin::common::LogLevel::Debug,
                             "send to rank %d failed to start: %d", dst, rc);
        release_send_resources(r);
        r->base.req_base.req_pml_complete = true;
        r->base.req_base.req_free_called = true;
        MCA_PML_BASE_SEND_REQUEST_FINI(&r->base);
        opal_free_list_return(&state().send_requests, reinterpret_cast<opal_free_list_item_t*>(r));
        return rc;
    }
    *req = &r->base.req_base.req_ompi;
    return OMPI_SUCCESS;
}

int send(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
         mca_pml_base_send_mode_t mode, ompi_communicator_t* comm) noexcept {
    ompi_request_t* req = nullptr;
    int rc = isend(buf, count, dt, dst, tag, mode, comm, &req);
    if (rc != OMPI_SUCCESS || req == &ompi_request_empty)
        return rc;  // sent inline
    ompi_request_wait_completion(req);
    rc = req->req_status.MPI_ERROR;
    ompi_request_free(&req);
    return rc;
}

int isend_init(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
               mca_pml_base_send_mode_t mode, ompi_communicator_t* comm,
               ompi_request_t** req) noexcept {
    Guard g;
    SendRequest* r = alloc_send();
    if (r == nullptr)
        return OMPI_ERR_OUT_OF_RESOURCE;
    r->base.req_base.req_proc = ompi_comm_peer_lookup(comm, dst);
    MCA_PML_BASE_SEND_REQUEST_INIT(&r->base, buf, count, dt, dst, tag, comm, mode, true, 0);
    // An inactive persistent request: complete from the PML's point of view
    // until MPI_Start.
    r->base.req_base.req_pml_complete = true;
    *req = &r->base.req_base.req_ompi;
    return OMPI_SUCCESS;
}

}  // namespace pml::dr::mca
