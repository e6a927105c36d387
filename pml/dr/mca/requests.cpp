// Request objects: allocation, the free/cancel hooks Open MPI calls, and the
// two completions (MPI-level for the application, PML-level for our
// resources).
#include "local_path.hpp"
#include "pml.hpp"
#include "reliability.hpp"

#include <algorithm>
#include <utility>

namespace pml::dr::mca {
namespace {

int send_free(ompi_request_t** request) noexcept;
int send_cancel(ompi_request_t*, int) noexcept {
    return OMPI_SUCCESS;
}  // sends are never cancelled
int recv_free(ompi_request_t** request) noexcept;
int recv_cancel(ompi_request_t* request, int complete) noexcept;

int start_cb(size_t count, ompi_request_t** requests) noexcept {
    return start(count, requests);
}

void send_construct(SendRequest* r) noexcept {
    r->base.req_base.req_ompi.req_start = start_cb;
    r->base.req_base.req_ompi.req_free = send_free;
    r->base.req_base.req_ompi.req_cancel = send_cancel;
}
void recv_construct(RecvRequest* r) noexcept {
    r->base.req_base.req_ompi.req_start = start_cb;
    r->base.req_base.req_ompi.req_free = recv_free;
    r->base.req_base.req_ompi.req_cancel = recv_cancel;
}

opal_class_t send_request_class = {"pml_dr_send_request_t",
                                   OBJ_CLASS(mca_pml_base_send_request_t),
                                   reinterpret_cast<opal_construct_t>(send_construct),
                                   nullptr,
                                   0,
                                   0,
                                   nullptr,
                                   nullptr,
                                   sizeof(SendRequest)};
opal_class_t recv_request_class = {"pml_dr_recv_request_t",
                                   OBJ_CLASS(mca_pml_base_recv_request_t),
                                   reinterpret_cast<opal_construct_t>(recv_construct),
                                   nullptr,
                                   0,
                                   0,
                                   nullptr,
                                   nullptr,
                                   sizeof(RecvRequest)};

void return_send(SendRequest* r) noexcept {
    mca_pml_base_request_t& b = r->base.req_base;
    if (b.req_comm != nullptr) {
        MCA_PML_BASE_SEND_REQUEST_FINI(&r->base);
    } else {
        // That macro but for the communicator, released already (send_free).
        OMPI_REQUEST_FINI(&b.req_ompi);
        if (b.req_count != 0)
            OMPI_DATATYPE_RELEASE(b.req_datatype);
        opal_convertor_cleanup(&b.req_convertor);
    }
    opal_free_list_return(&state().send_requests, reinterpret_cast<opal_free_list_item_t*>(r));
}
void return_recv(RecvRequest* r) noexcept {
    MCA_PML_BASE_RECV_REQUEST_FINI(&r->base);
    opal_free_list_return(&state().recv_requests, reinterpret_cast<opal_free_list_item_t*>(r));
}

int send_free(ompi_request_t** request) noexcept {
    Guard g;
    auto* r = reinterpret_cast<SendRequest*>(*request);
    mca_pml_base_request_t& b = r->base.req_base;
    if (!b.req_free_called) {
        b.req_free_called = true;
        if (b.req_pml_complete) {
            return_send(r);
        } else if (b.req_comm != nullptr) {
            // The application is done with it, but its frames wait for the
            // peer's ACKs. Open MPI may destroy a communicator that requests
            // still hold (ompi_comm_free of an intercommunicator dup marked
            // OMPI_COMM_EXTRA_RETAIN releases it until it is gone;
            // ompi_comm_finalize runs before del_procs drains the last
            // ACKs): let go of it now. Nothing reads it from here on
            // (start_send kept the context id and rank).
            OBJ_RELEASE(b.req_comm);
            b.req_comm = nullptr;
        }
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

int recv_free(ompi_request_t** request) noexcept {
    Guard g;
    auto* r = reinterpret_cast<RecvRequest*>(*request);
    if (!r->base.req_base.req_free_called) {
        r->base.req_base.req_free_called = true;
        if (r->base.req_base.req_pml_complete)
            return_recv(r);
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

int recv_cancel(ompi_request_t* request, int) noexcept {
    Guard g;
    auto* r = reinterpret_cast<RecvRequest*>(request);
    if (r->matched || r->base.req_base.req_pml_complete)
        return OMPI_SUCCESS;  // too late
    core::CommMatcher* m = engine().comm(plugin::common::local_cid(r->base.req_base.req_comm));
    if (m == nullptr || !m->cancel(reinterpret_cast<core::Handle>(r), r->base.req_base.req_peer))
        return OMPI_SUCCESS;
    request->req_status._cancelled = true;
    r->base.req_base.req_pml_complete = true;
    ompi_request_complete(request, true);
    return OMPI_SUCCESS;
}

}  // namespace

int requests_init() noexcept {
    State& s = state();
    OBJ_CONSTRUCT(&s.send_requests, opal_free_list_t);
    OBJ_CONSTRUCT(&s.recv_requests, opal_free_list_t);
    int rc = opal_free_list_init(&s.send_requests, sizeof(SendRequest), opal_cache_line_size,
                                 &send_request_class, 0, opal_cache_line_size, 16, -1, 64, nullptr,
                                 0, nullptr, nullptr, nullptr);
    if (rc != OPAL_SUCCESS)
        return rc;
    return opal_free_list_init(&s.recv_requests, sizeof(RecvRequest), opal_cache_line_size,
                               &recv_request_class, 0, opal_cache_line_size, 16, -1, 64, nullptr, 0,
                               nullptr, nullptr, nullptr);
}

void requests_fini() noexcept {
    if (RecvRequest* r = std::exchange(state().blocking_recv, nullptr))
        opal_free_list_return(&state().recv_requests, reinterpret_cast<opal_free_list_item_t*>(r));
    OBJ_DESTRUCT(&state().send_requests);
    OBJ_DESTRUCT(&state().recv_requests);
}

void reset_send_state(SendRequest* r) noexcept {
    r->cid = 0;
    r->my_rank = 0;
    r->peer = 0;
    r->endpoint = nullptr;
    r->wire_id = 0;
    r->peer_recv_id = 0;
    r->bytes_scheduled = 0;
    r->bytes_target = 0;
    r->frames_inflight = 0;
    r->rndv = false;
    r->cts_received = false;
    r->failed = false;
    r->scheduling = false;
    r->frags_deferred = false;
    r->rdma_btl = nullptr;
    r->rdma_handle = nullptr;
    r->puts_outstanding = 0;
    r->put_started = false;
    r->put_failed = false;
    r->put_verify = false;
    r->put_verdict_wait = false;
    r->put_crc = 0;
    r->put_from = 0;
    r->put_next = 0;
    r->put_remote = 0;
    std::fill(std::begin(r->path_bytes), std::end(r->path_bytes), 0);
}

SendRequest* alloc_send() noexcept {
    auto* r = reinterpret_cast<SendRequest*>(opal_free_list_get(&state().send_requests));
    if (r == nullptr)
        return nullptr;
    r->base.req_base.req_type = MCA_PML_REQUEST_SEND;
    reset_send_state(r);
    return r;
}

void reset_recv_state(RecvRequest* r) noexcept {
    r->peer = 0;
    r->wire_id = 0;
    r->bytes_expected = 0;
    r->bytes_received = 0;
    r->msg_len = 0;
    r->matched = false;
    r->gets_outstanding = 0;
    r->get_failed = false;
    r->get_verify = false;
    r->get_crc = 0;
    r->send_req = 0;
    r->remote_handle = nullptr;
    r->local_handle = nullptr;
    r->rdma_btl = nullptr;
    r->put_wait = false;
    r->put_from = 0;
    r->matched_at_post = false;
}

RecvRequest* alloc_recv() noexcept {
    auto* r = reinterpret_cast<RecvRequest*>(opal_free_list_get(&state().recv_requests));
    if (r == nullptr)
        return nullptr;
    r->base.req_base.req_type = MCA_PML_REQUEST_RECV;
    reset_recv_state(r);
    return r;
}

void mark_send_started(SendRequest* r) noexcept {
    mca_pml_base_request_t& b = r->base.req_base;
    b.req_pml_complete = false;
    b.req_ompi.req_complete = REQUEST_PENDING;
    b.req_ompi.req_state = OMPI_REQUEST_ACTIVE;
    b.req_ompi.req_status._cancelled = 0;
    if (r->base.req_bytes_packed == 0)
        return;
    if (r->base.req_send_mode == MCA_PML_BASE_SEND_BUFFERED) {
        // The previous round pointed the convertor at its (freed) copy in
        // the attached buffer: start again from the user's data.
        r->base.req_addr = b.req_addr;
        opal_convertor_copy_and_prepare_for_send(b.req_proc->super.proc_convertor,
                                                 &b.req_datatype->super, b.req_count, b.req_addr, 0,
                                                 &b.req_convertor);
        return;
    }
    size_t zero = 0;
    opal_convertor_set_position(&b.req_convertor, &zero);
}

void send_mpi_complete(SendRequest* r, int error) noexcept {
    ompi_request_t* req = &r->base.req_base.req_ompi;
    if (REQUEST_COMPLETE(req))
        return;
    req->req_status.MPI_SOURCE = r->my_rank;
    req->req_status.MPI_TAG = r->base.req_base.req_tag;
    req->req_status.MPI_ERROR = error;
    req->req_status._ucount = r->base.req_bytes_packed;
    ompi_request_complete(req, true);
}

void send_pml_complete(SendRequest* r) noexcept {
    if (r->base.req_base.req_pml_complete)
        return;
    release_send_resources(r);
    // PML-complete before MPI-complete: a completion callback may restart a
    // persistent request (MPI_Start), which must then see it idle.
    r->base.req_base.req_pml_complete = true;
    if (r->base.req_base.req_free_called) {
        return_send(r);
        return;
    }
    send_mpi_complete(r, r->failed ? kPeerDeadError : OMPI_SUCCESS);
}

void release_send_resources(SendRequest* r) noexcept {
    cancel_deferred(r);
    if (r->wire_id != 0) {
        engine().release_send(r->wire_id);
        r->wire_id = 0;
    }
    rget_release_send(r);
    if (r->base.req_send_mode == MCA_PML_BASE_SEND_BUFFERED &&
        r->base.req_addr != r->base.req_base.req_addr) {
        mca_pml_base_bsend_request_fini(reinterpret_cast<ompi_request_t*>(r));
    }
}

void recv_complete(RecvRequest* r, int error) noexcept {
    if (r->base.req_base.req_pml_complete)
        return;
    if (r->wire_id != 0) {
        engine().release_recv(r->wire_id);
        r->wire_id = 0;
    }
    rget_release_recv(r);
    cancel_deferred(r);
    ompi_request_t* req = &r->base.req_base.req_ompi;
    req->req_status._ucount = r->bytes_received;
    if (error == OMPI_SUCCESS && r->msg_len > r->base.req_bytes_packed) {
        // As ob1: a truncated receive reports the sender's full length.
        error = MPI_ERR_TRUNCATE;
        req->req_status._ucount = r->msg_len;
    }
    req->req_status.MPI_ERROR = error;
    r->base.req_base.req_pml_complete = true;
    if (r->base.req_base.req_free_called) {
        return_recv(r);  // nobody waits on a freed request
        return;
    }
    ompi_request_complete(req, true);
}

ConvertorAt::ConvertorAt(opal_convertor_t* conv, std::uint64_t offset) noexcept : use_(conv) {
    size_t pos = offset;
    if (offset != conv->bConverted && opal_convertor_need_buffers(conv)) {
        OBJ_CONSTRUCT(&clone_, opal_convertor_t);
        opal_convertor_clone(conv, &clone_, 0);
        cloned_ = true;
        use_ = &clone_;
    }
    opal_convertor_set_position(use_, &pos);
}

ConvertorAt::~ConvertorAt() {
    if (cloned_)
        OBJ_DESTRUCT(&clone_);
}

// The proc's PML endpoint slot caches our peer id (+1, so null means unset).
bool known_peer(const ompi_proc_t* proc, core::PeerId& out) noexcept {
    void* cached = proc != nullptr ? proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] : nullptr;
    if (cached == nullptr)
        return false;
    out = static_cast<core::PeerId>(reinterpret_cast<std::uintptr_t>(cached) - 1);
    return true;
}

core::PeerId peer_for(ompi_proc_t* proc) {
    if (core::PeerId known = 0; known_peer(proc, known))
        return known;
    State& s = state();
    const core::PeerId id =
        engine().add_peer(core::PeerName{proc->super.proc_name.jobid, proc->super.proc_name.vpid});
    // The peer id + 1 (0 means none), kept in the pointer-sized slot.
    proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] =
        reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr)
            static_cast<std::uintptr_t>(id) + 1);
    if (s.proc_of_peer.size() <= id)
        s.proc_of_peer.resize(id + 1, nullptr);
    s.proc_of_peer[id] = proc;
    reliability_add_peer(id, proc);
    local_add_peer(id, proc);
    return id;
}

}  // namespace pml::dr::mca
