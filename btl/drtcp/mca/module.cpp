// btl drtcp module functions (BTL 3.1): add/del procs, descriptors, send,
// sendi, error registration, finalize.
#include "btl.hpp"
#include "btl_frag.hpp"

#include <cstdio>

extern "C" mca_btl_base_component_3_0_0_t mca_btl_drtcp_component;

namespace btl::drtcp::mca {

using plugin::common::logf;
using plugin::common::LogLevel;

namespace {

Module* as_module(mca_btl_base_module_t* b) noexcept {
    return reinterpret_cast<Module*>(b);
}

core::ProcName name_of(const opal_proc_t* p) noexcept {
    return {p->proc_name.jobid, p->proc_name.vpid};
}

// The peer's published addresses paired with our interfaces, once per proc.
// A peer whose put setting differs from ours is not paired at all: ob1
// would send it PUT requests its modules cannot serve (or the reverse).
std::vector<int> pairing_for(opal_proc_t* proc, std::vector<core::PublishedAddr>& remotes,
                             plugin::common::auth::Key& key) {
    State& s = state();
    std::uint8_t* blob = nullptr;
    std::size_t size = 0;
    int rc = OPAL_SUCCESS;
    OPAL_MODEX_RECV(rc, &mca_btl_drtcp_component.btl_version, &proc->proc_name,
                    reinterpret_cast<void**>(&blob), &size);
    if (rc != OPAL_SUCCESS || blob == nullptr)
        return {};
    auto decoded = core::decode_modex(std::span(blob, size));
    std::free(blob);
    if (!decoded) {
        logf(s.log, LogLevel::Warn, "unusable drtcp modex from %s: %s",
             OPAL_NAME_PRINT(proc->proc_name), decoded.error().message.data());
        return {};
    }
    if (((decoded->flags & core::kModexPut) != 0) != s.put) {
        logf(s.log, LogLevel::Warn,
             "%s %s put and this process does not (or the reverse): not reachable through drtcp; "
             "give every host the same number of drtcp modules or set btl_drtcp_flags alike",
             OPAL_NAME_PRINT(proc->proc_name), s.put ? "does not offer" : "offers");
        return {};
    }
    remotes = std::move(decoded->addrs);
    key = decoded->key;
    return core::pair_addresses(s.interfaces, remotes, OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags));
}

int drtcp_add_procs(mca_btl_base_module_t* btl, size_t nprocs, opal_proc_t** procs,
                    mca_btl_base_endpoint_t** peers, opal_bitmap_t* reachable) noexcept {
    State& s = state();
    Module* m = as_module(btl);
    const opal_proc_t* self = opal_proc_local_get();
    for (size_t i = 0; i < nprocs; ++i) {
        opal_proc_t* proc = procs[i];
        if (proc == self || peers[i] != nullptr)
            continue;
        std::vector<core::PublishedAddr> remotes;
        plugin::common::auth::Key key{};
        const std::vector<int> pairs = pairing_for(proc, remotes, key);
        if (pairs.empty() || pairs[static_cast<std::size_t>(m->interface)] < 0)
            continue;
        const core::PublishedAddr& addr =
            remotes[static_cast<std::size_t>(pairs[static_cast<std::size_t>(m->interface)])];
        const std::uint16_t link = static_cast<std::uint16_t>(m->index % s.config.links);
        if (link >= addr.links)
            continue;  // the peer opened fewer links
        if (adapter::Endpoint* known = s.transport->find_endpoint(m->index, name_of(proc))) {
            // Added already when the peer connected first (see add_unknown_peer).
            peers[i] = static_cast<mca_btl_base_endpoint_t*>(adapter::Transport::user_of(known));
            if (reachable != nullptr)
                opal_bitmap_set_bit(reachable, static_cast<int>(i));
            continue;
        }
        auto* ep = new (std::nothrow) mca_btl_base_endpoint_t;
        if (ep == nullptr)
            return OPAL_ERR_OUT_OF_RESOURCE;
        ep->proc = proc;
        ep->module = m;
        ep->ep = s.transport->add_endpoint(m->index, name_of(proc), addr, key, ep);
        peers[i] = ep;
        if (reachable != nullptr)
            opal_bitmap_set_bit(reachable, static_cast<int>(i));
        logf(s.log, LogLevel::Debug, "%s reachable through %s link %u at %s:%u",
             OPAL_NAME_PRINT(proc->proc_name),
             s.interfaces[static_cast<std::size_t>(m->interface)].name.c_str(), link,
             addr.addr.str().c_str(), addr.port);
    }
    return OPAL_SUCCESS;
}

int drtcp_del_procs(mca_btl_base_module_t*, size_t nprocs, opal_proc_t**,
                    mca_btl_base_endpoint_t** peers) noexcept {
    State& s = state();
    for (size_t i = 0; i < nprocs; ++i) {
        if (peers[i] == nullptr)
            continue;
        // Inline completions still queued for this endpoint go out first:
        // they point at it.
        complete_done(peers[i], /*call=*/true);
        s.transport->remove_endpoint(peers[i]->ep, events());
        delete peers[i];
    }
    return OPAL_SUCCESS;
}

Frag* new_frag(Module* m, mca_btl_base_endpoint_t* ep, std::size_t bytes, uint32_t flags) {
    Frag* f = state().frags.get(bytes);
    if (f == nullptr)
        return nullptr;
    f->module = m;
    f->endpoint = ep;
    f->is_put = false;
    plugin::common::reset_send_descriptor(f->base, f->segments, f->data, bytes, flags);
    return f;
}

mca_btl_base_descriptor_t* drtcp_alloc(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                                       uint8_t, size_t size, uint32_t flags) noexcept {
    if (ep == nullptr || !state().transport->accepting(ep->ep))
        return nullptr;
    Frag* f = new_frag(as_module(btl), ep, size, flags);
    return f != nullptr ? &f->base : nullptr;
}

int drtcp_free(mca_btl_base_module_t*, mca_btl_base_descriptor_t* des) noexcept {
    state().frags.put(reinterpret_cast<Frag*>(des));
    return OPAL_SUCCESS;
}

mca_btl_base_descriptor_t* drtcp_prepare_src(mca_btl_base_module_t* btl,
                                             mca_btl_base_endpoint_t* ep,
                                             opal_convertor_t* convertor, uint8_t, size_t reserve,
                                             size_t* size, uint32_t flags) noexcept {
    State& s = state();
    if (ep == nullptr || !s.transport->accepting(ep->ep))
        return nullptr;
    const std::size_t limit = s.frags.large();
    if (reserve > limit)
        return nullptr;
    if (*size > limit - reserve)
        *size = limit - reserve;
    // Contiguous data larger than a cache line goes from the user's buffer
    // in place (writev gathers it); the rest is packed after the header.
    const bool in_place = *size > 1024 && !opal_convertor_need_buffers(convertor);
    Frag* f = new_frag(as_module(btl), ep, in_place ? reserve : reserve + *size, flags);
    if (f == nullptr)
        return nullptr;
    iovec iov{};
    uint32_t count = 1;
    size_t max_data = *size;
    iov.iov_len = max_data;
    iov.iov_base = in_place ? nullptr : f->data + reserve;
    if (opal_convertor_pack(convertor, &iov, &count, &max_data) < 0) {
        s.frags.put(f);
        return nullptr;
    }
    *size = max_data;
    if (in_place) {
        f->segments[1].seg_addr.pval = iov.iov_base;
        f->segments[1].seg_len = max_data;
        f->base.des_segment_count = 2;
    } else {
        f->segments[0].seg_len = reserve + max_data;
    }
    return &f->base;
}

adapter::SendResult send_frag(Frag* f, mca_btl_base_endpoint_t* ep, mca_btl_base_tag_t tag) {
    std::size_t len = 0;
    plugin::common::SendQueue::Frame frame;
    frame.pieces[0] = {f->header, sizeof f->header};
    for (size_t i = 0; i < f->base.des_segment_count; ++i) {
        const auto& seg = f->segments[i];
        frame.pieces[i + 1] = {static_cast<const std::uint8_t*>(seg.seg_addr.pval), seg.seg_len};
        len += seg.seg_len;
    }
    frame.count = static_cast<std::uint8_t>(1 + f->base.des_segment_count);
    frame.cookie = f;
    (void)core::encode(core::FrameHeader{tag, 0, static_cast<std::uint32_t>(len)}, f->header);
    f->endpoint = ep;
    return state().transport->send(ep->ep, frame);
}

int drtcp_send(mca_btl_base_module_t*, mca_btl_base_endpoint_t* ep, mca_btl_base_descriptor_t* des,
               mca_btl_base_tag_t tag) noexcept {
    auto* f = reinterpret_cast<Frag*>(des);
    if (ep == nullptr || des->des_segment_count > 2)
        return OPAL_ERR_BAD_PARAM;
    switch (send_frag(f, ep, tag)) {
        case adapter::SendResult::Unreachable:
            return OPAL_ERR_UNREACH;
        case adapter::SendResult::Queued:
            return OPAL_SUCCESS;
        case adapter::SendResult::Done:
            break;
    }
    // Every byte is with the kernel. Like the stock BTLs, call back from
    // progress (ob1 relies on that), unless the PML said it does not need it.
    if ((des->des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) == 0) {
        if ((des->des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) != 0)
            state().frags.put(f);
        return 1;
    }
    State& s = state();
    std::lock_guard lock(s.done_lock);
    s.done.push_back(f);
    return OPAL_SUCCESS;
}

int drtcp_sendi(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                opal_convertor_t* convertor, void* header, size_t header_size, size_t payload_size,
                uint8_t, uint32_t flags, mca_btl_base_tag_t tag,
                mca_btl_base_descriptor_t** descriptor) noexcept {
    State& s = state();
    if (descriptor != nullptr)
        *descriptor = nullptr;
    if (ep == nullptr || header_size + payload_size > btl->btl_eager_limit ||
        !s.transport->accepting(ep->ep))
        return OPAL_ERR_RESOURCE_BUSY;
    Frag* f = new_frag(as_module(btl), ep, header_size + payload_size,
                       flags | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (f == nullptr)
        return OPAL_ERR_RESOURCE_BUSY;
    std::memcpy(f->data, header, header_size);
    if (std::size_t packed = payload_size;
        payload_size > 0 &&
        (!plugin::common::pack_into(convertor, f->data + header_size, &packed) ||
         packed != payload_size)) {
        s.frags.put(f);
        return OPAL_ERROR;
    }
    switch (send_frag(f, ep, tag)) {
        case adapter::SendResult::Unreachable:
            s.frags.put(f);
            return OPAL_ERR_UNREACH;
        case adapter::SendResult::Queued:
            return OPAL_SUCCESS;  // freed when it leaves (no callback)
        case adapter::SendResult::Done:
            s.frags.put(f);
            return OPAL_SUCCESS;
    }
    return OPAL_SUCCESS;
}

mca_btl_base_registration_handle_t* drtcp_register_mem(mca_btl_base_module_t*,
                                                       mca_btl_base_endpoint_t*, void* base,
                                                       size_t size, uint32_t) noexcept {
    auto* h = static_cast<mca_btl_base_registration_handle_t*>(
        std::malloc(sizeof(mca_btl_base_registration_handle_t)));
    if (h != nullptr)
        h->key = state().transport->register_region(base, size);
    return h;
}

int drtcp_deregister_mem(mca_btl_base_module_t*, mca_btl_base_registration_handle_t* h) noexcept {
    if (h != nullptr) {
        state().transport->deregister_region(h->key);
        std::free(h);
    }
    return OPAL_SUCCESS;
}

// A put is a PUT frame on the peer's connection: header, target key and
// address, then the bytes straight from `local_address`. The peer reads them
// straight into place (after checking the key's region). Complete when the
// kernel has them; the PML's FIN follows on the same connection, so it
// cannot overtake the data.
int drtcp_put(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, void* local_address,
              uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
              mca_btl_base_registration_handle_t* remote_handle, size_t size, int, int,
              mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) noexcept {
    State& s = state();
    if (ep == nullptr || remote_handle == nullptr || size > core::kMaxPutBytes)
        return OPAL_ERR_BAD_PARAM;
    if (!s.transport->reachable(ep->ep))
        return OPAL_ERR_UNREACH;  // dead or gone: retrying would never succeed
    if (!s.transport->accepting(ep->ep))
        return OPAL_ERR_OUT_OF_RESOURCE;
    Frag* f = new_frag(as_module(btl), ep, core::kFrameHeaderSize + core::kPutHeaderSize,
                       MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (f == nullptr)
        return OPAL_ERR_OUT_OF_RESOURCE;
    f->is_put = true;
    f->put = {cbfunc, local_address, local_handle, cbcontext, cbdata};
    if (size == 0) {  // nothing to move: complete without a frame (the peer refuses empty PUTs)
        std::lock_guard lock(s.done_lock);
        s.done.push_back(f);
        return OPAL_SUCCESS;
    }
    logf(s.log, LogLevel::Trace, "put of %zu bytes to %s", size,
         OPAL_NAME_PRINT(ep->proc->proc_name));
    (void)core::encode(core::FrameHeader{0, core::kFrameFlagPut, static_cast<std::uint32_t>(size)},
                       std::span(f->data, core::kFrameHeaderSize));
    (void)core::encode(core::PutHeader{remote_handle->key, remote_address},
                       std::span(f->data + core::kFrameHeaderSize, core::kPutHeaderSize));
    plugin::common::SendQueue::Frame frame;
    frame.pieces[0] = {f->data, core::kFrameHeaderSize + core::kPutHeaderSize};
    frame.pieces[1] = {static_cast<const std::uint8_t*>(local_address), size};
    frame.count = 2;
    frame.cookie = f;
    switch (s.transport->send(ep->ep, frame)) {
        case adapter::SendResult::Unreachable:
            s.frags.put(f);
            return OPAL_ERR_UNREACH;
        case adapter::SendResult::Queued:
            return OPAL_SUCCESS;
        case adapter::SendResult::Done:
            break;
    }
    std::lock_guard lock(s.done_lock);
    s.done.push_back(f);  // called back from progress, like every completion
    return OPAL_SUCCESS;
}

int drtcp_register_error(mca_btl_base_module_t* btl,
                         mca_btl_base_module_error_cb_fn_t cb) noexcept {
    as_module(btl)->error_cb = cb;
    return OPAL_SUCCESS;
}

int drtcp_finalize(mca_btl_base_module_t* btl) noexcept {
    State& s = state();
    (void)btl;
    if (++s.finalized < static_cast<int>(s.modules.size()))
        return OPAL_SUCCESS;  // the last module's finalize tears everything down
    // The PML is closed by now: what is still queued is freed, not called back.
    if (s.transport) {
        s.transport->shutdown(discard_events());
        logf(s.log, LogLevel::Info, "counters: %s", counters_line().c_str());
    }
    complete_done(nullptr, /*call=*/false);
    s.transport.reset();
    s.frags.clear();
    for (Module* m : s.modules)
        delete m;
    s.modules.clear();
    return OPAL_SUCCESS;
}

void drtcp_dump(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, int) noexcept {
    State& s = state();
    if (!s.transport)
        return;
    opal_output(0, "[btl:drtcp] module %d: %s; %s", as_module(btl)->index,
                ep != nullptr
                    ? plugin::common::net::to_string(adapter::Transport::state_of(ep->ep)).data()
                    : "-",
                counters_line().c_str());
}

#if OPAL_MAJOR_VERSION < 5
int drtcp_ft_event(int) noexcept {
    return OPAL_SUCCESS;
}
#endif

}  // namespace

std::string counters_line() {
    const auto& k = state().transport->counters();
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    char head[320];
    std::snprintf(head, sizeof head,
                  "frames sent %llu received %llu, connects %llu, accepts %llu, handshakes %llu, "
                  "bad replies %llu, protocol errors %llu, endpoint failures %llu, refused %llu",
                  u(k.frames_sent), u(k.frames_received), u(k.connects), u(k.accepts),
                  u(k.handshakes), u(k.reply_refused), u(k.protocol_errors), u(k.endpoint_failures),
                  u(k.refused));
    std::string line = head;
    line += " (";
    for (std::size_t i = 0; i < adapter::kRefusalCount; ++i) {
        if (i != 0)
            line += ' ';
        line += adapter::to_string(static_cast<adapter::Refusal>(i));
        line += '=';
        line += std::to_string(k.refusals[i]);
    }
    line += ')';
    return line;
}

adapter::PeerVerdict add_unknown_peer(core::ProcName name) noexcept {
    // Open MPI adds procs lazily (on first send): a peer may connect before
    // this process has added it. A rank of this job is added now on every
    // module, as add_procs would; the BML finds the same endpoints when it
    // adds the proc later. Nothing else is: another job's processes are
    // known only once the PML added them (connect/accept, spawn), and a rank
    // beyond the job's size must never reach opal_proc_for_name (which
    // indexes the world group by it).
    const opal_process_name_t me = opal_proc_local_get()->proc_name;
    if (name.jobid != me.jobid)
        return adapter::PeerVerdict::WrongJob;
    if (name.vpid >= state().job_size)
        return adapter::PeerVerdict::BeyondJob;
    if (name.vpid == me.vpid)
        return adapter::PeerVerdict::Unknown;  // drtcp never connects a process to itself
    opal_process_name_t pn{};
    pn.jobid = name.jobid;
    pn.vpid = name.vpid;
    opal_proc_t* proc = opal_proc_for_name != nullptr ? opal_proc_for_name(pn) : nullptr;
    if (proc == nullptr)
        return adapter::PeerVerdict::Unknown;
    bool added = false;
    for (Module* m : state().modules) {
        mca_btl_base_endpoint_t* ep = nullptr;
        if (m != nullptr)
            (void)drtcp_add_procs(&m->super, 1, &proc, &ep, nullptr);
        added = added || ep != nullptr;
    }
    return added ? adapter::PeerVerdict::Known : adapter::PeerVerdict::Unknown;
}

void fill_module_functions(mca_btl_base_module_t& m) noexcept {
    m.btl_add_procs = drtcp_add_procs;
    m.btl_del_procs = drtcp_del_procs;
    m.btl_finalize = drtcp_finalize;
    m.btl_alloc = drtcp_alloc;
    m.btl_free = drtcp_free;
    m.btl_prepare_src = drtcp_prepare_src;
    m.btl_send = drtcp_send;
    m.btl_sendi = drtcp_sendi;
    m.btl_put = drtcp_put;
    m.btl_register_mem = drtcp_register_mem;
    m.btl_deregister_mem = drtcp_deregister_mem;
    m.btl_dump = drtcp_dump;
    m.btl_register_error = drtcp_register_error;
#if OPAL_MAJOR_VERSION < 5
    m.btl_ft_event = drtcp_ft_event;  // 4.1 only (BTL interface 3.1.0)
#endif
}

}  // namespace btl::drtcp::mca
