// Receive side: posting, matching results, unpacking, probes.
#include <algorithm>
#include <cstring>
#include <utility>

#include "crc32c.hpp"
#include "pml.hpp"

namespace pml::dr::mca {
namespace {

core::Handle handle_of(RecvRequest* r) noexcept {
    return reinterpret_cast<core::Handle>(r);
}

void prepare_convertor(RecvRequest* r, ompi_proc_t* proc) noexcept {
    mca_pml_base_request_t& b = r->base.req_base;
    b.req_proc = proc;
    r->base.req_bytes_packed = 0;
    if (b.req_datatype->super.size != 0 && b.req_count != 0) {
        opal_convertor_copy_and_prepare_for_recv(proc->super.proc_convertor, &b.req_datatype->super,
                                                 b.req_count, b.req_addr, 0, &b.req_convertor);
        opal_convertor_get_packed_size(&b.req_convertor, &r->base.req_bytes_packed);
    }
}

// Unpacks bytes that belong at `offset` of the message; anything past the
// accepted length (a truncated receive) is dropped.
void unpack(RecvRequest* r, std::uint64_t offset, std::span<const std::uint8_t> data) noexcept {
    if (data.empty() || offset >= r->bytes_expected)
        return;
    const std::size_t len =
        static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), r->bytes_expected - offset));
    ConvertorAt at(&r->base.req_base.req_convertor, offset);
    iovec iov{const_cast<std::uint8_t*>(data.data()), len};
    uint32_t iov_count = 1;
    size_t max_data = len;
    opal_convertor_unpack(at.get(), &iov, &iov_count, &max_data);
    r->bytes_received += len;
}

// A probe's status. MPI_ERROR is left as the caller had it: single-completion
// calls do not set it (MPI 4.0 §3.2.5), as ob1 does not.
void fill_status(ompi_status_public_t* status, const core::MessageInfo& info) noexcept {
    if (status == nullptr)
        return;
    status->MPI_SOURCE = info.src;
    status->MPI_TAG = info.tag;
    status->_ucount = info.msg_len;
    status->_cancelled = 0;
}

core::CommMatcher* matcher_of(ompi_communicator_t* comm) noexcept {
    return engine().comm(plugin::common::local_cid(comm));
}

// The blocking forms: wait, copy the status out (its MPI_ERROR is returned)...
int wait_for(ompi_request_t* req, ompi_status_public_t* status) noexcept {
    ompi_request_wait_completion(req);
    if (status != nullptr)
        OMPI_COPY_STATUS(status, req->req_status, false);  // all but MPI_ERROR (fill_status)
    return req->req_status.MPI_ERROR;
}

// ... and release the request.
int wait_and_free(ompi_request_t* req, ompi_status_public_t* status) noexcept {
    const int rc = wait_for(req, status);
    ompi_request_free(&req);
    return rc;
}

// A whole message (MATCH) for a contiguous buffer of a same-architecture
// sender needs no convertor: its bytes go straight to their place. False:
// not that case, nothing done.
bool eager_to_contiguous(RecvRequest* r, ompi_proc_t* proc, const core::MessageInfo& info,
                         std::span<const std::uint8_t> eager) noexcept {
    mca_pml_base_request_t& b = r->base.req_base;
    if (proc->super.proc_arch != opal_local_arch ||
        !ompi_datatype_is_contiguous_memory_layout(b.req_datatype,
                                                   static_cast<int32_t>(b.req_count)))
        return false;
    b.req_proc = proc;
    r->base.req_bytes_packed = b.req_datatype->super.size * b.req_count;
    ompi_status_public_t& st = b.req_ompi.req_status;
    st.MPI_SOURCE = info.src;
    st.MPI_TAG = info.tag;
    r->msg_len = info.msg_len;
    r->bytes_expected = std::min<std::uint64_t>(info.msg_len, r->base.req_bytes_packed);
    const std::size_t len =
        static_cast<std::size_t>(std::min<std::uint64_t>(eager.size(), r->bytes_expected));
    if (len > 0)
        std::memcpy(static_cast<char*>(b.req_addr) + b.req_datatype->super.true_lb, eager.data(),
                    len);
    r->bytes_received = len;
    recv_complete(r, OMPI_SUCCESS);
    return true;
}

}  // namespace

void handle_match(RecvRequest* r, const core::MessageInfo& info,
                  std::span<const std::uint8_t> eager) noexcept {
    r->matched = true;
    r->peer = info.peer;
    ompi_proc_t* proc = proc_of(info.peer);
    if (proc == nullptr) {
        recv_complete(r, MPI_ERR_INTERN);
        return;
    }
    if (!info.rndv && !info.rget && eager_to_contiguous(r, proc, info, eager))
        return;
    prepare_convertor(r, proc);
    ompi_status_public_t& st = r->base.req_base.req_ompi.req_status;
    st.MPI_SOURCE = info.src;
    st.MPI_TAG = info.tag;
    r->msg_len = info.msg_len;
    r->bytes_expected = std::min<std::uint64_t>(info.msg_len, r->base.req_bytes_packed);
    if ((info.rndv || info.rget) && engine().peer_dead(info.peer)) {
        // A rendezvous that arrived before its sender died: the rest of its
        // data can never come (the sender's memory cannot be read either).
        if (!info.rget)
            unpack(r, 0, eager);
        recv_complete(r, r->bytes_received >= r->bytes_expected ? OMPI_SUCCESS : kPeerDeadError);
        return;
    }
    if (info.rget) {
        // The payload is the sender's registration handle, not data.
        if (rget_start(r, info, eager))
            return;
        if (r->bytes_expected == 0) {  // nothing wanted (e.g. a zero-byte buffer)
            send_cts(r, info.send_req, 0);
            recv_complete(r, OMPI_SUCCESS);
            return;
        }
        r->wire_id = engine().register_recv(handle_of(r), r->peer, r->bytes_expected);
        send_cts(r, info.send_req, 0);
        return;
    }
    unpack(r, 0, eager);
    if (!info.rndv) {
        recv_complete(r, OMPI_SUCCESS);
        return;
    }
    // RNDV: tell the sender where to resume (and, for Ssend, that we matched).
    const bool done = r->bytes_received >= r->bytes_expected;
    const std::uint64_t offset = std::min<std::uint64_t>(eager.size(), r->bytes_expected);
    if (!done) {
        r->wire_id = engine().register_recv(handle_of(r), r->peer, r->bytes_expected);
        // Synchronous sends complete on the CTS (matched), so they keep it.
        if (!info.sync && rput_request(r, info, offset))
            return;
    }
    send_cts(r, info.send_req, offset);
    if (done)
        recv_complete(r, OMPI_SUCCESS);
}

void send_cts(RecvRequest* r, std::uint64_t send_req, std::uint64_t offset) noexcept {
    core::CtsHdr cts;
    cts.common = make_common(r->peer, 0);
    cts.send_req = send_req;
    cts.recv_req = r->wire_id;
    cts.offset = offset;
    cts.want_len = r->bytes_expected;
    std::uint8_t buf[core::kCtsHeaderSize];
    if (core::encode(cts, buf))
        send_control(r->peer, buf);
}

void handle_frag(RecvRequest* r, std::uint64_t offset,
                 std::span<const std::uint8_t> payload) noexcept {
    if (r->base.req_base.req_pml_complete)
        return;
    unpack(r, offset, payload);
    if (r->bytes_received >= r->bytes_expected)
        recv_complete(r, OMPI_SUCCESS);
}

bool place_frag(RecvRequest* r, std::uint64_t offset, std::span<const std::uint8_t> payload,
                std::uint32_t& crc) noexcept {
    opal_convertor_t* conv = &r->base.req_base.req_convertor;
    if (r->base.req_base.req_pml_complete || opal_convertor_need_buffers(conv) ||
        offset >= r->bytes_expected)
        return false;
    const std::size_t len = static_cast<std::size_t>(
        std::min<std::uint64_t>(payload.size(), r->bytes_expected - offset));
    ConvertorAt at(conv, offset);
    void* dst = nullptr;
    opal_convertor_get_current_pointer(at.get(), &dst);
    crc = plugin::common::crc32c_copy(dst, payload.data(), len);
    if (len < payload.size())
        crc = plugin::common::crc32c(payload.data() + len, payload.size() - len, crc);
    return true;
}

void frag_placed(RecvRequest* r, std::uint64_t offset, std::size_t len) noexcept {
    if (r->base.req_base.req_pml_complete || offset >= r->bytes_expected)
        return;
    r->bytes_received += std::min<std::uint64_t>(len, r->bytes_expected - offset);
    if (r->bytes_received >= r->bytes_expected)
        recv_complete(r, OMPI_SUCCESS);
}

int start_recv(RecvRequest* r) noexcept {
    mca_pml_base_request_t& b = r->base.req_base;
    if (matcher_of(b.req_comm) == nullptr)
        return OMPI_ERR_BAD_PARAM;
    core::Engine& eng = engine();
    const std::uint32_t cid = plugin::common::local_cid(b.req_comm);
    // A receive from a dead peer takes what arrived before it died, or
    // fails now: queued, it would wait forever.
    const bool dead = eng.source_dead(cid, b.req_peer);
    core::UnexpectedPtr msg =
        dead ? eng.take_unexpected(cid, b.req_peer, b.req_tag, engine_sink())
             : eng.post_recv(cid, handle_of(r), b.req_peer, b.req_tag, engine_sink());
    if (msg) {
        r->matched_at_post = true;
        handle_match(r, msg->info, msg->data);
    } else if (dead) {
        recv_complete(r, kPeerDeadError);
    }
    return OMPI_SUCCESS;
}

namespace {

// Starts `r` (from alloc_recv() or the kept blocking one) as a receive.
int start_new_recv(RecvRequest* r, void* buf, size_t count, ompi_datatype_t* dt, int src, int tag,
                   ompi_communicator_t* comm, ompi_request_t** req) noexcept {
    MCA_PML_BASE_RECV_REQUEST_INIT(&r->base, buf, count, dt, src, tag, comm, false);
    MCA_PML_BASE_RECV_START(&r->base);
    *req = &r->base.req_base.req_ompi;
    const int rc = start_recv(r);
    if (rc != OMPI_SUCCESS) {
        r->base.req_base.req_pml_complete = true;
        ompi_request_t* tmp = *req;
        ompi_request_free(&tmp);  // the module lock is recursive
        *req = nullptr;
    }
    return rc;
}

}  // namespace

int irecv(void* buf, size_t count, ompi_datatype_t* dt, int src, int tag, ompi_communicator_t* comm,
          ompi_request_t** req) noexcept {
    Guard g;
    RecvRequest* r = alloc_recv();
    if (r == nullptr)
        return OMPI_ERR_OUT_OF_RESOURCE;
    return start_new_recv(r, buf, count, dt, src, tag, comm, req);
}

int recv(void* buf, size_t count, ompi_datatype_t* dt, int src, int tag, ompi_communicator_t* comm,
         ompi_status_public_t* status) noexcept {
    State& s = state();
    const bool keep = !ompi_mpi_thread_multiple;
    RecvRequest* r = nullptr;
    ompi_request_t* req = nullptr;
    {
        Guard g;
        r = keep ? std::exchange(s.blocking_recv, nullptr) : nullptr;
        if (r != nullptr)
            reset_recv_state(r);  // what alloc_recv() does
        else if ((r = alloc_recv()) == nullptr)
            return OMPI_ERR_OUT_OF_RESOURCE;
        if (const int rc = start_new_recv(r, buf, count, dt, src, tag, comm, &req);
            rc != OMPI_SUCCESS)
            return rc;
    }
    const int rc = wait_for(req, status);
    // A completed receive is PML-complete too (recv_complete): nothing refers
    // to it any more, and it can wait for the next MPI_Recv as it is.
    if (keep && s.blocking_recv == nullptr && r->base.req_base.req_pml_complete) {
        MCA_PML_BASE_RECV_REQUEST_FINI(&r->base);
        s.blocking_recv = r;
    } else {
        ompi_request_free(&req);
    }
    return rc;
}

int irecv_init(void* buf, size_t count, ompi_datatype_t* dt, int src, int tag,
               ompi_communicator_t* comm, ompi_request_t** req) noexcept {
    Guard g;
    RecvRequest* r = alloc_recv();
    if (r == nullptr)
        return OMPI_ERR_OUT_OF_RESOURCE;
    MCA_PML_BASE_RECV_REQUEST_INIT(&r->base, buf, count, dt, src, tag, comm, true);
    r->base.req_base.req_pml_complete = true;  // inactive until MPI_Start
    *req = &r->base.req_base.req_ompi;
    return OMPI_SUCCESS;
}

int iprobe(int src, int tag, ompi_communicator_t* comm, int* matched,
           ompi_status_public_t* status) noexcept {
    {
        Guard g;
        core::CommMatcher* m = matcher_of(comm);
        if (m == nullptr)
            return OMPI_ERR_BAD_PARAM;
        if (const core::Unexpected* u = m->peek(src, tag)) {
            fill_status(status, u->info);
            *matched = 1;
            return OMPI_SUCCESS;
        }
        *matched = 0;
        // Nothing will ever come from a dead source: MPI_Probe would spin forever.
        if (engine().source_dead(plugin::common::local_cid(comm), src))
            return kPeerDeadError;
    }
    opal_progress();
    return OMPI_SUCCESS;
}

int probe(int src, int tag, ompi_communicator_t* comm, ompi_status_public_t* status) noexcept {
    int matched = 0;
    for (;;) {
        const int rc = iprobe(src, tag, comm, &matched, status);
        if (rc != OMPI_SUCCESS || matched)
            return rc;
    }
}

int improbe(int src, int tag, ompi_communicator_t* comm, int* matched, ompi_message_t** message,
            ompi_status_public_t* status) noexcept {
    {
        Guard g;
        if (matcher_of(comm) == nullptr)
            return OMPI_ERR_BAD_PARAM;
        if (matcher_of(comm)->peek(src, tag) != nullptr) {
            // Allocate first: once taken, the message has nowhere to go back to.
            ompi_message_t* msg = ompi_message_alloc();
            if (msg == nullptr)
                return OMPI_ERR_OUT_OF_RESOURCE;
            core::UnexpectedPtr u =
                engine().take_unexpected(plugin::common::local_cid(comm), src, tag, engine_sink());
            fill_status(status, u->info);
            msg->comm = comm;
            msg->peer = u->info.src;
            msg->count = u->info.msg_len;
            msg->req_ptr = u.release();
            *message = msg;
            *matched = 1;
            return OMPI_SUCCESS;
        }
        *matched = 0;
        *message = &ompi_message_null.message;
        if (engine().source_dead(plugin::common::local_cid(comm), src))
            return kPeerDeadError;
    }
    opal_progress();
    return OMPI_SUCCESS;
}

int mprobe(int src, int tag, ompi_communicator_t* comm, ompi_message_t** message,
           ompi_status_public_t* status) noexcept {
    int matched = 0;
    for (;;) {
        const int rc = improbe(src, tag, comm, &matched, message, status);
        if (rc != OMPI_SUCCESS || matched)
            return rc;
    }
}

int imrecv(void* buf, size_t count, ompi_datatype_t* dt, ompi_message_t** message,
           ompi_request_t** req) noexcept {
    Guard g;
    ompi_message_t* msg = *message;
    std::unique_ptr<core::Unexpected> u(static_cast<core::Unexpected*>(msg->req_ptr));
    RecvRequest* r = alloc_recv();
    if (r == nullptr) {
        msg->req_ptr = u.release();
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    // The macro pastes its `comm` argument into a field name: pass a plain name.
    ompi_communicator_t* comm = msg->comm;
    MCA_PML_BASE_RECV_REQUEST_INIT(&r->base, buf, count, dt, u->info.src, u->info.tag, comm, false);
    MCA_PML_BASE_RECV_START(&r->base);
    *req = &r->base.req_base.req_ompi;
    ompi_message_return(msg);
    *message = &ompi_message_null.message;
    handle_match(r, u->info, u->data);
    return OMPI_SUCCESS;
}

int mrecv(void* buf, size_t count, ompi_datatype_t* dt, ompi_message_t** message,
          ompi_status_public_t* status) noexcept {
    ompi_request_t* req = nullptr;
    int rc = imrecv(buf, count, dt, message, &req);
    if (rc != OMPI_SUCCESS)
        return rc;
    return wait_and_free(req, status);
}

}  // namespace pml::dr::mca
