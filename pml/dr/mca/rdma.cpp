// RGET: for a long message whose send and receive buffers are both
// contiguous, the receiver reads the data straight out of the sender's
// buffer with a BTL get (single copy: CMA on shared memory, RDMA on fabrics)
// instead of the sender pushing FRAGs through bounce buffers.
//
// With checksums (pml_dr_csum, per BTL) the data is covered too: the sender
// puts the CRC32C of the whole message after its handle (kFlagDataCsum), and
// the receiver, once its gets are done, computes it over its buffer (one read
// pass, warm from the copy) and accepts; or it counts a checksum error and
// answers with a CTS at offset 0, and the sender sends the message as FRAGs,
// each with its own CRC. No byte reaches the application unverified.
#include <algorithm>

#include "crc32c.hpp"
#include "fault.hpp"
#include "pml.hpp"
#include "wire_io.hpp"

namespace pml::dr::mca {
namespace {

RgetStats g_stats;

// Get data flipped where it landed (pml_dr_fault_corrupt), to test the
// check; made on first use, from the configuration.
plugin::common::FaultInjector& data_faults() noexcept {
    static plugin::common::FaultInjector f(0.0, state().config.fault_corrupt, 0.0,
                                           state().config.fault_seed ^ 0x4745'5444u);
    return f;
}

bool get_capable(const mca_bml_base_btl_t* bb) noexcept {
    const mca_btl_base_module_t* btl = bb->btl;
    return (btl->btl_flags & MCA_BTL_FLAGS_GET) != 0 && btl->btl_get != nullptr &&
           btl->btl_get_limit > 0;
}

// The gets are done: the data matches the sender's CRC (or none is asked).
bool get_data_intact(RecvRequest* r) noexcept {
    if (!r->get_verify)
        return true;
    auto* data = static_cast<std::uint8_t*>(buffer_start(&r->base.req_base.req_convertor));
    const auto len = static_cast<std::size_t>(r->bytes_expected);
    if (data_faults().enabled() && len > 0) {
        const plugin::common::FaultPlan plan = data_faults().next(len);
        if (plan.corrupt) {
            data[plan.byte] ^= plan.mask;
            ++g_stats.injected;
        }
    }
    if (plugin::common::crc32c(data, len) == r->get_crc) {
        ++g_stats.verified;
        return true;
    }
    ++g_stats.csum_errors;
    plugin::common::logf(*state().log, plugin::common::LogLevel::Debug,
                         "get data from peer %u failed its checksum: asked for FRAGs", r->peer);
    return false;
}

void get_done(mca_btl_base_module_t*, mca_btl_base_endpoint_t*, void*,
              mca_btl_base_registration_handle_t*, void*, void* cbdata, int status) noexcept;
void get_finished(RecvRequest* r, int status) noexcept;

// Issues gets for [from, to) of the message in btl_get_limit pieces. Sets
// `from` to where it stopped when the BTL runs out of resources.
int issue_gets(RecvRequest* r, std::uint64_t remote_addr, std::uint64_t& from,
               std::uint64_t to) noexcept {
    mca_bml_base_btl_t* bb = r->rdma_btl;
    void* local = buffer_start(&r->base.req_base.req_convertor);
    const std::uint64_t limit = bb->btl->btl_get_limit;
    while (from < to) {
        const std::uint64_t len = std::min(limit, to - from);
        ++r->gets_outstanding;
        const int rc = mca_bml_base_get(
            bb, static_cast<char*>(local) + from, remote_addr + from, r->local_handle,
            static_cast<mca_btl_base_registration_handle_t*>(r->remote_handle),
            static_cast<size_t>(len), 0, MCA_BTL_NO_ORDER, get_done, r);
        if (rc < 0) {
            --r->gets_outstanding;
            return rc;
        }
        from += len;
    }
    return OMPI_SUCCESS;
}

// The issuing side holds one count on gets_outstanding until every get is
// issued, so completions cannot finish the request early. Issues what is
// left from `from` (advancing it) and drops that hold; false when the BTL
// ran out of resources first, to be retried from progress.
bool issue_rest(RecvRequest* r, std::uint64_t remote_addr, std::uint64_t& from) noexcept {
    const int rc = issue_gets(r, remote_addr, from, r->bytes_expected);
    if (rc == OMPI_ERR_OUT_OF_RESOURCE)
        return false;
    get_finished(r, rc);
    return true;
}

void issue_all_then_release(RecvRequest* r, std::uint64_t remote_addr,
                            std::uint64_t from) noexcept {
    if (!issue_rest(r, remote_addr, from))
        defer(r, [r, remote_addr, from]() mutable { return issue_rest(r, remote_addr, from); });
}

void get_done(mca_btl_base_module_t*, mca_btl_base_endpoint_t*, void*,
              mca_btl_base_registration_handle_t*, void*, void* cbdata, int status) noexcept {
    Guard g;
    get_finished(static_cast<RecvRequest*>(cbdata), status);
}

// One get (or the issuing hold) is over; the last one ends the receive or,
// if any failed, falls back to having the sender push FRAGs.
void get_finished(RecvRequest* r, int status) noexcept {
    --r->gets_outstanding;
    if (status != OMPI_SUCCESS)
        r->get_failed = true;
    if (r->gets_outstanding != 0)
        return;
    if (r->get_failed || !get_data_intact(r)) {
        ++g_stats.fallbacks;
        r->bytes_received = 0;
        r->wire_id =
            engine().register_recv(reinterpret_cast<core::Handle>(r), r->peer, r->bytes_expected);
        send_cts(r, r->send_req, 0);
        return;
    }
    ++g_stats.receives;
    r->bytes_received = r->bytes_expected;
    send_cts(r, r->send_req, r->bytes_expected);
    recv_complete(r, OMPI_SUCCESS);
}

}  // namespace

RgetStats rget_stats() noexcept {
    return g_stats;
}

bool rget_prepare(SendRequest* r) noexcept {
    opal_convertor_t* conv = &r->base.req_base.req_convertor;
    if (opal_convertor_need_buffers(conv))
        return false;
    mca_bml_base_endpoint_t* ep = r->endpoint;
    const size_t n = mca_bml_base_btl_array_get_size(&ep->btl_rdma);
    for (size_t i = 0; i < n; ++i) {
        mca_bml_base_btl_t* bb = mca_bml_base_btl_array_get_index(&ep->btl_rdma, i);
        if (!get_capable(bb))
            continue;
        if (bb->btl->btl_registration_handle_size > 4096)
            continue;
        void* addr = buffer_start(conv);
        mca_btl_base_registration_handle_t* handle = nullptr;
        if (bb->btl->btl_register_mem != nullptr) {
            mca_bml_base_register_mem(bb, addr, r->base.req_bytes_packed,
                                      MCA_BTL_REG_FLAG_REMOTE_READ, &handle);
            if (handle == nullptr)
                continue;
        }
        r->rdma_btl = bb;
        r->rdma_handle = handle;
        return true;
    }
    return false;
}

void rget_release_send(SendRequest* r) noexcept {
    if (r->rdma_handle != nullptr)
        mca_bml_base_deregister_mem(r->rdma_btl, r->rdma_handle);
    r->rdma_handle = nullptr;
    r->rdma_btl = nullptr;
}

bool rget_start(RecvRequest* r, const core::MessageInfo& info,
                std::span<const std::uint8_t> handle) noexcept {
    opal_convertor_t* conv = &r->base.req_base.req_convertor;
    if (r->bytes_expected == 0 || opal_convertor_need_buffers(conv))
        return false;
    mca_bml_base_endpoint_t* ep = endpoint_of(info.peer);
    if (ep == nullptr)
        return false;
    // The handle belongs to the BTL the RNDV came on: get through that one.
    const auto* arrived = btl_of(info.path);
    mca_bml_base_btl_t* bb = nullptr;
    const size_t n = mca_bml_base_btl_array_get_size(&ep->btl_rdma);
    for (size_t i = 0; i < n && bb == nullptr; ++i) {
        mca_bml_base_btl_t* cand = mca_bml_base_btl_array_get_index(&ep->btl_rdma, i);
        if (cand->btl == arrived && get_capable(cand))
            bb = cand;
    }
    if (bb == nullptr)
        return false;
    // The data's CRC follows the handle; a BTL that wants checksums gets no
    // unchecked data (then FRAGs, each with its CRC).
    if (info.rget_data_csum) {
        if (handle.size() < core::kDataCsumSize)
            return false;
        r->get_crc = plugin::common::ByteReader(handle.last(core::kDataCsumSize)).u32();
        handle = handle.first(handle.size() - core::kDataCsumSize);
    } else if (csum_wanted(bb->btl)) {
        return false;
    }
    if (handle.size() != bb->btl->btl_registration_handle_size)
        return false;
    r->get_verify = info.rget_data_csum;
    r->rdma_btl = bb;
    r->send_req = info.send_req;
    if (!handle.empty()) {
        r->remote_handle = std::malloc(handle.size());
        if (r->remote_handle == nullptr)
            return false;
        std::memcpy(r->remote_handle, handle.data(), handle.size());
    }
    if (bb->btl->btl_register_mem != nullptr &&
        r->bytes_expected > bb->btl->btl_get_local_registration_threshold) {
        void* local = nullptr;
        opal_convertor_get_current_pointer(conv, &local);
        mca_bml_base_register_mem(bb, local, r->bytes_expected, MCA_BTL_REG_FLAG_LOCAL_WRITE,
                                  &r->local_handle);
        if (r->local_handle == nullptr) {
            rget_release_recv(r);
            return false;
        }
    }
    ++r->gets_outstanding;  // the issuing hold, see issue_all_then_release
    const std::uint64_t remote_addr = info.remote_addr;
    if (r->matched_at_post) {
        // Matched inside MPI_Irecv/MPI_Recv: a get may copy megabytes, so it
        // waits for progress rather than delaying the caller's next sends
        // (which the peer may be waiting for).
        defer(r, [r, remote_addr] {
            issue_all_then_release(r, remote_addr, 0);
            return true;
        });
        return true;
    }
    issue_all_then_release(r, remote_addr, 0);
    return true;
}

void rget_release_recv(RecvRequest* r) noexcept {
    if (r->local_handle != nullptr)
        mca_bml_base_deregister_mem(r->rdma_btl, r->local_handle);
    r->local_handle = nullptr;
    if (r->remote_handle != nullptr) {  // every receive completes through here
        std::free(r->remote_handle);
        r->remote_handle = nullptr;
    }
}

}  // namespace pml::dr::mca
