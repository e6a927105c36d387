// btl drucx module functions (BTL 3.1): add/del procs through the modex,
// descriptors, send and sendi over UCT active messages, error registration,
// put/get over the RMA iface, finalize.
#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>

#include "btl.hpp"
#include "btl_frag.hpp"

extern "C" mca_btl_base_component_3_0_0_t mca_btl_drucx_component;

namespace btl::drucx::mca {

using plugin::common::logf;
using plugin::common::LogLevel;

namespace {

// The peer's UCT addresses (AM first, then RMA), or empty (bad blob).
struct PeerAddresses {
    std::vector<std::uint8_t> am;   // empty: not on our AM transport
    std::vector<std::uint8_t> rma;  // empty: no RMA pairing
};

PeerAddresses peer_addresses(opal_proc_t* proc) {
    State& s = state();
    std::uint8_t* blob = nullptr;
    std::size_t size = 0;
    int rc = OPAL_SUCCESS;
    OPAL_MODEX_RECV(rc, &mca_btl_drucx_component.btl_version, &proc->proc_name,
                    reinterpret_cast<void**>(&blob), &size);
    if (rc != OPAL_SUCCESS || blob == nullptr)
        return {};
    PeerAddresses out;
    auto inner = core::decode_modex(std::span(blob, size));
    auto entries = core::decode_addresses(inner ? *inner : std::span<const std::uint8_t>{});
    if (!entries) {
        logf(s.log, LogLevel::Warn, "unusable drucx modex from %s: %s",
             OPAL_NAME_PRINT(proc->proc_name), entries.error().message.data());
    } else {
        // Only a peer on the same transports pairs.
        const auto& e = *entries;
        if (e[0].tl == s.iface->resource().tl)
            out.am.assign(e[0].address.begin(), e[0].address.end());
        if (e.size() > 1 && s.rma && e[1].tl == s.rma->resource().tl)
            out.rma.assign(e[1].address.begin(), e[1].address.end());
    }
    std::free(blob);
    return out;
}

int drucx_add_procs(mca_btl_base_module_t*, size_t nprocs, opal_proc_t** procs,
                    mca_btl_base_endpoint_t** peers, opal_bitmap_t* reachable) noexcept {
    State& s = state();
    Guard g;
    const opal_proc_t* self = opal_proc_local_get();
    for (size_t i = 0; i < nprocs; ++i) {
        opal_proc_t* proc = procs[i];
        if (proc == self || peers[i] != nullptr)
            continue;
        const bool shm = s.iface->resource().device == "memory";
        if (shm && !OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags))
            continue;  // shared memory reaches this node only
        const PeerAddresses addr = peer_addresses(proc);
        if (addr.am.empty() || !s.iface->reachable(addr.am))
            continue;
        auto* ep = new (std::nothrow) mca_btl_base_endpoint_t;
        if (ep == nullptr)
            return OPAL_ERR_OUT_OF_RESOURCE;
        ep->proc = proc;
        ep->id = s.next_ep_id++;
        auto uct_ep = s.iface->connect(addr.am, ep);
        if (!uct_ep) {
            delete ep;
            continue;
        }
        ep->uct_ep = *uct_ep;
        if (!addr.rma.empty() && s.rma->reachable(addr.rma)) {
            auto rma_ep = s.rma->connect(addr.rma, ep);
            if (rma_ep)
                ep->rma_ep = *rma_ep;
        }
        s.endpoints.push_back(ep);
        peers[i] = ep;
        if (reachable != nullptr)
            opal_bitmap_set_bit(reachable, static_cast<int>(i));
    }
    return OPAL_SUCCESS;
}

int drucx_del_procs(mca_btl_base_module_t*, size_t nprocs, opal_proc_t**,
                    mca_btl_base_endpoint_t** peers) noexcept {
    State& s = state();
    Guard g;
    for (size_t i = 0; i < nprocs; ++i) {
        mca_btl_base_endpoint_t* ep = peers[i];
        if (ep == nullptr)
            continue;
        // Tell the peer we are leaving (best effort: a BYE that finds no
        // resources is not sent; the peer then reports our going away).
        if (!ep->failed) {
            const opal_process_name_t me = opal_proc_local_get()->proc_name;
            const auto bye = core::encode_bye(core::ProcName{me.jobid, me.vpid});
            (void)s.iface->send_am(ep->uct_ep, bye, {});
        }
        // Let what is queued or in flight leave while the peer still listens (bounded).
        const auto busy = [&] {
            return !ep->failed &&
                   (!ep->waiting.empty() || (s.in_flight && s.in_flight->of_peer(ep->id) > 0));
        };
        for (int round = 0; round < 100000 && busy(); ++round)
            (void)progress();
        std::vector<std::pair<Frag*, int>> left;
        while (!ep->waiting.empty()) {
            left.emplace_back(ep->waiting.front(), OPAL_ERR_UNREACH);
            ep->waiting.pop_front();
            --s.waiting_total;
        }
        if (s.in_flight) {
            std::vector<core::PendingOp> lost;
            s.in_flight->fail_peer(ep->id, lost);
            for (const core::PendingOp& op : lost)
                left.emplace_back(static_cast<Frag*>(op.cookie), OPAL_ERR_UNREACH);
        }
        std::erase_if(s.owed.completions, [&](std::pair<Frag*, int> c) {
            if (c.first->endpoint != ep)
                return false;
            left.push_back(c);
            return true;
        });
        for (auto [f, status] : left)
            complete(f, status);
        std::erase(s.owed.failed, ep);
        std::erase(s.newly_failed, ep);
        std::erase(s.endpoints, ep);
        s.iface->destroy_ep(ep->uct_ep);
        if (ep->rma_ep != nullptr)
            s.rma->destroy_ep(ep->rma_ep);
        delete ep;
    }
    return OPAL_SUCCESS;
}

mca_btl_base_descriptor_t* drucx_alloc(mca_btl_base_module_t*, mca_btl_base_endpoint_t* ep, uint8_t,
                                       size_t size, uint32_t flags) noexcept {
    Guard g;
    if (ep == nullptr || !has_room(ep))
        return nullptr;
    Frag* f = new_frag(ep, size, flags);
    return f != nullptr ? &f->base : nullptr;
}

int drucx_free(mca_btl_base_module_t*, mca_btl_base_descriptor_t* des) noexcept {
    Guard g;
    free_frag(reinterpret_cast<Frag*>(des));
    return OPAL_SUCCESS;
}

// Contiguous data from this size up is sent from the user's buffer in place.
constexpr std::size_t kInplaceMin = 1024;

mca_btl_base_descriptor_t* drucx_prepare_src(mca_btl_base_module_t* btl,
                                             mca_btl_base_endpoint_t* ep,
                                             opal_convertor_t* convertor, uint8_t, size_t reserve,
                                             size_t* size, uint32_t flags) noexcept {
    Guard g;
    const std::size_t limit = btl->btl_max_send_size;
    if (ep == nullptr || reserve > limit || !has_room(ep))
        return nullptr;
    if (*size > limit - reserve)
        *size = limit - reserve;
    if ((btl->btl_flags & MCA_BTL_FLAGS_SEND_INPLACE) != 0 && *size >= kInplaceMin &&
        !opal_convertor_need_buffers(convertor)) {
        // Contiguous data stays where it is: segment 1 points into the
        // user's buffer, UCT gathers it (bcopy) or reads it in place (zcopy).
        Frag* f = new_frag(ep, reserve, flags);
        if (f == nullptr)
            return nullptr;
        iovec iov{nullptr, *size};
        uint32_t count = 1;
        if (opal_convertor_pack(convertor, &iov, &count, size) < 0) {
            free_frag(f);
            return nullptr;
        }
        f->segment[1].seg_addr.pval = iov.iov_base;
        f->segment[1].seg_len = *size;
        f->base.des_segment_count = 2;
        return &f->base;
    }
    Frag* f = new_frag(ep, reserve + *size, flags);
    if (f == nullptr)
        return nullptr;
    if (!plugin::common::pack_into(convertor, f->data + reserve, size)) {
        free_frag(f);
        return nullptr;
    }
    f->segment[0].seg_len = reserve + *size;
    return &f->base;
}

// fault_fail_after reached: the transport dies now, as if unplugged.
int die() {
    State& s = state();
    logf(s.log, LogLevel::Warn, "fault injection: drucx dies after %llu messages",
         static_cast<unsigned long long>(s.config.faults.fail_after));
    s.dead = true;
    for (mca_btl_base_endpoint_t* e : s.endpoints)
        if (!e->failed)
            s.newly_failed.push_back(e);
    return OPAL_ERR_UNREACH;
}

// Whether a send to `ep` may go: OPAL_SUCCESS, or OPAL_ERR_UNREACH (the
// peer failed, or fault_fail_after just killed the transport).
inline int may_send(const mca_btl_base_endpoint_t* ep) {
    State& s = state();
    if (ep->failed || s.dead)
        return OPAL_ERR_UNREACH;
    ++s.sent;
    if (s.config.faults.fail_after != 0 && s.sent > s.config.faults.fail_after) [[unlikely]]
        return die();
    return OPAL_SUCCESS;
}

// 1: gone to UCT; 2: in flight (completed from progress); 0: waiting for
// resources; <0: error.
int post(Frag* f, mca_btl_base_endpoint_t* ep, mca_btl_base_tag_t tag) {
    State& s = state();
    if (const int rc = may_send(ep); rc != OPAL_SUCCESS)
        return rc;
    (void)core::encode(core::AmHeader{tag, core::AmKind::Data}, f->header);
    f->endpoint = ep;
    if (!ep->waiting.empty()) {
        ep->waiting.push_back(f);  // keep the order
        ++s.waiting_total;
        return 0;
    }
    switch (send_now(ep, f)) {
        case SendOutcome::Sent:
            return 1;
        case SendOutcome::InFlight:
            return 2;
        case SendOutcome::WouldBlock:
            ep->waiting.push_back(f);
            ++s.waiting_total;
            return 0;
        case SendOutcome::Failed:
            break;
    }
    return OPAL_ERR_UNREACH;
}

// sendi of contiguous data: the PML's header and the user's bytes go to UCT
// as they are (UCT gathers them), without a descriptor or a copy of ours.
// OPAL_ERR_RESOURCE_BUSY: not done, the caller takes the descriptor path.
int sendi_direct(mca_btl_base_endpoint_t* ep, opal_convertor_t* convertor, void* header,
                 size_t header_size, size_t payload_size, mca_btl_base_tag_t tag) {
    State& s = state();
    const std::uint8_t* data = nullptr;
    if (payload_size > 0) {
        if (opal_convertor_need_buffers(convertor))
            return OPAL_ERR_RESOURCE_BUSY;
        void* p = nullptr;
        opal_convertor_get_current_pointer(convertor, &p);
        data = static_cast<const std::uint8_t*>(p);
    }
    if (const int rc = may_send(ep); rc != OPAL_SUCCESS)
        return rc;
    const std::size_t total = core::kAmHeaderSize + header_size + payload_size;
    plugin::common::Result<void> r;
    if (total <= s.iface->caps().am_short && total >= sizeof(std::uint64_t)) {
        // Small sendi (the latency path): one message on the stack, one UCT call.
        alignas(8) std::array<std::uint8_t, adapter::kAmShortMax> msg;
        (void)core::encode(core::AmHeader{tag, core::AmKind::Data}, msg);
        std::memcpy(msg.data() + core::kAmHeaderSize, header, header_size);
        if (payload_size > 0)
            std::memcpy(msg.data() + core::kAmHeaderSize + header_size, data, payload_size);
        r = s.iface->send_am_short(ep->uct_ep, msg.data(), total);
    } else {
        std::uint8_t am[core::kAmHeaderSize];
        (void)core::encode(core::AmHeader{tag, core::AmKind::Data}, am);
        r = s.iface->send_am(ep->uct_ep, am,
                             {static_cast<const std::uint8_t*>(header), header_size},
                             {data, payload_size});
    }
    if (!r) {
        if (r.error().code != plugin::common::ErrorCode::WouldBlock)
            return OPAL_ERR_UNREACH;
        --s.sent;  // not sent after all
        return OPAL_ERR_RESOURCE_BUSY;
    }
    if (payload_size > 0) {
        std::size_t pos = convertor->bConverted + payload_size;
        opal_convertor_set_position(convertor, &pos);
    }
    return OPAL_SUCCESS;
}

int drucx_send(mca_btl_base_module_t*, mca_btl_base_endpoint_t* ep, mca_btl_base_descriptor_t* des,
               mca_btl_base_tag_t tag) noexcept {
    State& s = state();
    Guard g;
    auto* f = reinterpret_cast<Frag*>(des);
    const int rc = post(f, ep, tag);
    if (rc <= 0)
        return rc;  // queued (0 = OPAL_SUCCESS) or an error
    if (rc == 2)
        return OPAL_SUCCESS;  // in flight: completed from progress
    if ((des->des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) == 0) {
        if ((des->des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) != 0)
            free_frag(f);
        return 1;
    }
    // Called back from progress, like the stock BTLs.
    s.owed.completions.emplace_back(f, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

int drucx_sendi(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                opal_convertor_t* convertor, void* header, size_t header_size, size_t payload_size,
                uint8_t, uint32_t flags, mca_btl_base_tag_t tag,
                mca_btl_base_descriptor_t** descriptor) noexcept {
    Guard g;
    if (descriptor != nullptr)
        *descriptor = nullptr;
    if (ep == nullptr || header_size + payload_size > btl->btl_eager_limit || !ep->waiting.empty())
        return OPAL_ERR_RESOURCE_BUSY;
    if (const int rc = sendi_direct(ep, convertor, header, header_size, payload_size, tag);
        rc != OPAL_ERR_RESOURCE_BUSY)
        return rc;
    Frag* f = new_frag(ep, header_size + payload_size, flags | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (f == nullptr)
        return OPAL_ERR_RESOURCE_BUSY;
    std::memcpy(f->data, header, header_size);
    if (std::size_t packed = payload_size;
        payload_size > 0 &&
        (!plugin::common::pack_into(convertor, f->data + header_size, &packed) ||
         packed != payload_size)) {
        free_frag(f);
        return OPAL_ERROR;
    }
    const int rc = post(f, ep, tag);
    if (rc < 0) {
        free_frag(f);
        return rc;
    }
    if (rc == 1)
        free_frag(f);
    return OPAL_SUCCESS;  // sent, in flight or waiting (freed when it leaves)
}

mca_btl_base_registration_handle_t* drucx_register_mem(mca_btl_base_module_t* btl,
                                                       mca_btl_base_endpoint_t*, void* base,
                                                       size_t size, uint32_t) noexcept {
    State& s = state();
    Guard g;
    if (!s.rma)
        return nullptr;
    auto memh = s.rma->register_memory(base, size);
    if (!memh)
        return nullptr;
    auto* h = static_cast<mca_btl_base_registration_handle_t*>(std::calloc(
        1,
        std::max(btl->btl_registration_handle_size, sizeof(mca_btl_base_registration_handle_t))));
    if (h == nullptr || !s.rma->pack_rkey(*memh, std::span(h->rkey, s.rma->caps().rkey_size + 1))) {
        s.rma->deregister_memory(*memh);
        std::free(h);
        return nullptr;
    }
    h->memh = *memh;
    return h;
}

int drucx_deregister_mem(mca_btl_base_module_t*, mca_btl_base_registration_handle_t* h) noexcept {
    State& s = state();
    Guard g;
    if (h != nullptr && s.rma)
        s.rma->deregister_memory(h->memh);
    std::free(h);
    return OPAL_SUCCESS;
}

// A get copies the peer's registered memory straight into ours, a put ours
// into the peer's (cma: one copy by the kernel). Completion comes from progress.
int rdma(bool get, mca_btl_base_endpoint_t* ep, void* local_address, uint64_t remote_address,
         mca_btl_base_registration_handle_t* local_handle,
         mca_btl_base_registration_handle_t* remote_handle, size_t size,
         mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) noexcept {
    State& s = state();
    Guard g;
    if (ep == nullptr || local_handle == nullptr || remote_handle == nullptr)
        return OPAL_ERR_BAD_PARAM;
    if (ep->failed || s.dead || ep->rma_ep == nullptr)
        return OPAL_ERR_UNREACH;
    auto* op =
        new (std::nothrow) RdmaOp{cbfunc, ep, local_address, local_handle, cbcontext, cbdata, true};
    if (op == nullptr)
        return OPAL_ERR_OUT_OF_RESOURCE;
    ++(get ? s.gets : s.puts);
    const auto done = [](void* arg, bool ok) {
        auto* o = static_cast<RdmaOp*>(arg);
        o->ok = ok;
        --state().rdma_inflight;
        state().owed.rdma.push_back(o);  // called back from progress
    };
    switch (s.rma->rma(get, ep->rma_ep, local_address, size, local_handle->memh, remote_address,
                       std::span<const std::uint8_t>(remote_handle->rkey, s.rma->caps().rkey_size),
                       done, op)) {
        case adapter::OpStart::Done:
            s.owed.rdma.push_back(op);
            return OPAL_SUCCESS;
        case adapter::OpStart::InProgress:
            ++s.rdma_inflight;
            return OPAL_SUCCESS;
        case adapter::OpStart::WouldBlock:
            delete op;
            return OPAL_ERR_OUT_OF_RESOURCE;
        case adapter::OpStart::Failed:
            break;
    }
    delete op;
    return OPAL_ERROR;
}

int drucx_get(mca_btl_base_module_t*, mca_btl_base_endpoint_t* ep, void* local_address,
              uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
              mca_btl_base_registration_handle_t* remote_handle, size_t size, int, int,
              mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) noexcept {
    return rdma(true, ep, local_address, remote_address, local_handle, remote_handle, size, cbfunc,
                cbcontext, cbdata);
}

int drucx_put(mca_btl_base_module_t*, mca_btl_base_endpoint_t* ep, void* local_address,
              uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
              mca_btl_base_registration_handle_t* remote_handle, size_t size, int, int,
              mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) noexcept {
    return rdma(false, ep, local_address, remote_address, local_handle, remote_handle, size, cbfunc,
                cbcontext, cbdata);
}

int drucx_register_error(mca_btl_base_module_t* btl,
                         mca_btl_base_module_error_cb_fn_t cb) noexcept {
    reinterpret_cast<Module*>(btl)->error_cb = cb;
    return OPAL_SUCCESS;
}

int drucx_finalize(mca_btl_base_module_t* btl) noexcept {
    State& s = state();
    {
        Guard g;
        logf(s.log, LogLevel::Info, "%llu messages (%llu by zcopy), %llu gets, %llu puts",
             static_cast<unsigned long long>(s.sent), static_cast<unsigned long long>(s.zcopy),
             static_cast<unsigned long long>(s.gets), static_cast<unsigned long long>(s.puts));
        // The PML is closed: free what is left without calling anybody
        // (after the endpoints, whose end may still complete operations).
        std::vector<core::PendingOp> in_flight;
        for (mca_btl_base_endpoint_t* ep : s.endpoints) {
            for (Frag* f : ep->waiting)
                free_frag(f);
            s.iface->destroy_ep(ep->uct_ep);
            if (ep->rma_ep != nullptr)
                s.rma->destroy_ep(ep->rma_ep);
            if (s.in_flight)
                s.in_flight->fail_peer(ep->id, in_flight);
            delete ep;
        }
        s.endpoints.clear();
        for (const core::PendingOp& op : in_flight)
            free_frag(static_cast<Frag*>(op.cookie));
        for (auto [f, status] : s.owed.completions)
            free_frag(f);
        s.in_flight.reset();
        for (RdmaOp* op : s.owed.rdma)
            delete op;
        s.owed = Upcalls{};
        s.rma.reset();
        s.waiting_total = 0;
        s.newly_failed.clear();
        s.iface.reset();
        for (Frag* f : s.free_frags) {
            OBJ_DESTRUCT(&f->base);
            f->~Frag();
            std::free(f);
        }
        s.free_frags.clear();
        s.module = nullptr;
    }
    delete reinterpret_cast<Module*>(btl);
    return OPAL_SUCCESS;
}

void drucx_dump(mca_btl_base_module_t*, mca_btl_base_endpoint_t* ep, int) noexcept {
    opal_output(0, "[btl:drucx] %s endpoint %s, %zu sends waiting",
                state().iface ? state().iface->resource().tl.c_str() : "-",
                ep != nullptr && ep->failed ? "failed" : "alive",
                ep != nullptr ? ep->waiting.size() : 0);
}

#if OPAL_MAJOR_VERSION < 5
int drucx_ft_event(int) noexcept {
    return OPAL_SUCCESS;
}
#endif

}  // namespace

void fill_module_functions(mca_btl_base_module_t& m) noexcept {
    m.btl_add_procs = drucx_add_procs;
    m.btl_del_procs = drucx_del_procs;
    m.btl_finalize = drucx_finalize;
    m.btl_alloc = drucx_alloc;
    m.btl_free = drucx_free;
    m.btl_prepare_src = drucx_prepare_src;
    m.btl_send = drucx_send;
    m.btl_sendi = drucx_sendi;
    m.btl_get = drucx_get;
    m.btl_put = drucx_put;
    m.btl_register_mem = drucx_register_mem;
    m.btl_deregister_mem = drucx_deregister_mem;
    m.btl_dump = drucx_dump;
    m.btl_register_error = drucx_register_error;
#if OPAL_MAJOR_VERSION < 5
    m.btl_ft_event = drucx_ft_event;  // 4.1 only (BTL interface 3.1.0)
#endif
}

}  // namespace btl::drucx::mca
