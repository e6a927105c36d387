// The PML module: the function table Open MPI calls, process and
// communicator bookkeeping, progress.
#include "local_path.hpp"
#include "pml.hpp"
#include "reliability.hpp"
#include "standby.hpp"

namespace pml::dr::mca {

State g_state;

namespace {

// Frames arrive from every BTL through one tag; the engine decodes and
// validates them and calls back into the sink below.
class Sink final : public core::EngineSink {
  public:
    void on_match(core::Handle recv, const core::MessageInfo& info,
                  std::span<const std::uint8_t> eager) override {
        handle_match(from_handle<RecvRequest>(recv), info, eager);
    }
    void on_cts(core::Handle send, core::PeerId peer, const core::CtsHdr& cts) override {
        // The CTS acknowledged the RNDV (its ack_seq), which was sent without
        // asking for an ACK frame of its own: the request may wait only on that.
        settle_carried_acks(peer);
        handle_cts(from_handle<SendRequest>(send), cts);
    }
    void on_put(core::Handle send, core::PeerId, const core::PutHdr& put,
                std::uint64_t path) override {
        handle_put(from_handle<SendRequest>(send), put, path);
    }
    void on_put_done(core::Handle recv, core::PeerId, std::uint64_t,
                     std::optional<std::uint32_t> data_crc) override {
        rput_done(from_handle<RecvRequest>(recv), data_crc);
    }
    void on_frag(core::Handle recv, core::PeerId, std::uint64_t offset,
                 std::span<const std::uint8_t> payload) override {
        handle_frag(from_handle<RecvRequest>(recv), offset, payload);
    }
    bool place_frag(core::Handle recv, std::uint64_t offset, std::span<const std::uint8_t> payload,
                    std::uint32_t& crc) override {
        return mca::place_frag(from_handle<RecvRequest>(recv), offset, payload, crc);
    }
    void on_frag_placed(core::Handle recv, core::PeerId, std::uint64_t offset,
                        std::size_t len) override {
        frag_placed(from_handle<RecvRequest>(recv), offset, len);
    }
    void on_credit(core::PeerId peer, std::uint64_t released_total) override {
        core::CreditHdr h;
        h.common = make_common(peer, 0);
        h.released_total = released_total;
        std::uint8_t buf[core::kCreditHeaderSize];
        if (core::encode(h, buf))
            send_control(peer, buf);
    }
};
Sink g_sink;

void btl_recv(mca_btl_base_module_t* btl, plugin::common::RecvSegments seg) noexcept {
    if (seg.size() == 1) {
        // The frame was just written by another core: ask for the header's
        // last cache line now, so that its miss overlaps the first one
        // instead of following it.
        const auto* frame = static_cast<const std::uint8_t*>(seg[0].seg_addr.pval);
        if (seg[0].seg_len >= core::kMatchHeaderSize)
            __builtin_prefetch(frame + core::kMatchHeaderSize - 1);
        Guard g;
        reliability_on_frame(btl, {frame, seg[0].seg_len});
        return;
    }
    Guard g;
    // Rare: a BTL that hands us several segments.
    reliability_on_frame(btl, plugin::common::gathered(seg));
}

// A BTL lost its connection to a peer (or, errproc null, everything): the
// channel fails that path and re-drives its frames on the others.
void btl_error(mca_btl_base_module_t* btl, int32_t, opal_proc_t* errproc, char* info) noexcept {
    Guard g;
    plugin::common::logf(*state().log, plugin::common::LogLevel::Warn,
                         "BTL %s reported an error%s%s (peer %s)", btl_name(btl), info ? ": " : "",
                         info ? info : "",
                         errproc != nullptr ? OPAL_NAME_PRINT(errproc->proc_name) : "all");
    reliability_btl_error(btl, errproc);
}

int add_procs(ompi_proc_t** procs, size_t nprocs) noexcept {
    if (nprocs == 0)
        return OMPI_SUCCESS;
    int rc = mca_pml_base_pml_check_selected("dr", procs, nprocs);
    if (rc != OMPI_SUCCESS)
        return rc;
    opal_bitmap_t reachable;
    OBJ_CONSTRUCT(&reachable, opal_bitmap_t);
    rc = opal_bitmap_init(&reachable, static_cast<int>(nprocs));
    if (rc == OMPI_SUCCESS)
        rc = mca_bml.bml_add_procs(nprocs, procs, &reachable);
    OBJ_DESTRUCT(&reachable);
    if (rc != OMPI_SUCCESS)
        return rc;
    Guard g;
    State& s = state();
    if (!s.callbacks_registered) {
        rc = mca_bml.bml_register(kBtlTag, plugin::common::recv_callback<btl_recv>, nullptr);
        if (rc != OMPI_SUCCESS)
            return rc;
        rc = mca_bml.bml_register(kLocalTag, plugin::common::recv_callback<local_recv>, nullptr);
        if (rc != OMPI_SUCCESS)
            return rc;
        rc = mca_bml.bml_register_error(btl_error);
        if (rc != OMPI_SUCCESS)
            return rc;
        s.callbacks_registered = true;
    }
    for (size_t i = 0; i < nprocs; ++i)
        (void)peer_for(procs[i]);
    return OMPI_SUCCESS;
}

int del_procs(ompi_proc_t** procs, size_t nprocs) noexcept {
    // MPI_Finalize: frames still unacknowledged get their chance to arrive
    // before the BTLs go away.
    reliability_drain();
    standby_del_procs(procs, nprocs);
    // The BML releases these procs (they may be freed by its del_procs): drop
    // our pointers to them and their cached peer id first (a proc added again
    // gets a fresh one).
    State& s = state();
    for (size_t i = 0; i < nprocs; ++i) {
        core::PeerId peer = 0;
        if (procs[i] == nullptr || !known_peer(procs[i], peer))
            continue;
        if (peer < s.proc_of_peer.size())
            s.proc_of_peer[peer] = nullptr;
        procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = nullptr;
    }
    return mca_bml.bml_del_procs(nprocs, procs);
}

// Our progress function (timers, deferred retries) needs no turn of its own
// in every progress loop: it is registered as a low-priority callback
// (every 8th opal_progress call), which keeps the receive poll loop as
// tight as ob1's. Not through pml_progress, which Open MPI would register
// as a high-priority one.
int enable(bool on) noexcept {
    if (on && !g_state.progress_registered) {
        const int rc = opal_progress_register_lp(progress);
        if (rc != OPAL_SUCCESS)
            return rc;
        g_state.progress_registered = true;
        runtime_events_init();
    }
    return OMPI_SUCCESS;
}

int add_comm(ompi_communicator_t* comm) noexcept {
    const std::uint32_t cid = plugin::common::local_cid(comm);
    if (cid > state().module.pml_max_contextid)
        return OMPI_ERR_OUT_OF_RESOURCE;
    Guard g;
    // ompi_comm_remote_size() is 0 for intracommunicators; the remote group is
    // what messages come from in both kinds.
    const int n = comm->c_remote_group->grp_proc_count;
    std::vector<core::PeerId> remote(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        remote[static_cast<std::size_t>(i)] = peer_for(ompi_comm_peer_lookup(comm, i));
    engine().add_comm(cid, std::move(remote), g_sink);
    return OMPI_SUCCESS;
}

int del_comm(ompi_communicator_t* comm) noexcept {
    Guard g;
    engine().del_comm(plugin::common::local_cid(comm), g_sink);
    return OMPI_SUCCESS;
}

int dump(ompi_communicator_t* comm, int) noexcept {
    Guard g;
    const std::uint32_t cid = plugin::common::local_cid(comm);
    const core::CommMatcher* m = engine().comm(cid);
    if (m == nullptr)
        return OMPI_SUCCESS;
    opal_output(0, "[pml:dr] communicator %u: %zu posted receives, %zu unexpected messages", cid,
                m->posted_count(), m->unexpected_count());
    return OMPI_SUCCESS;
}

#if OMPI_MAJOR_VERSION < 5
int ft_event(int) noexcept {
    return OMPI_ERR_NOT_SUPPORTED;
}
#endif

// A persistent send can be MPI-complete while its frames are still in
// flight (Bsend, eager data): MPI_Start then continues with a fresh request
// and the old one is freed when the PML is done with it, as ob1 does.
SendRequest* fresh_copy(SendRequest* old) noexcept {
    SendRequest* r = alloc_send();
    if (r == nullptr)
        return nullptr;
    mca_pml_base_request_t& ob = old->base.req_base;
    r->base.req_base.req_proc = ob.req_proc;
    ompi_communicator_t* comm = ob.req_comm;  // the macro pastes `comm` into a field name
    MCA_PML_BASE_SEND_REQUEST_INIT(&r->base, ob.req_addr, ob.req_count, ob.req_datatype,
                                   ob.req_peer, ob.req_tag, comm, old->base.req_send_mode, true, 0);
    r->base.req_base.req_ompi.req_complete_cb = ob.req_ompi.req_complete_cb;
    r->base.req_base.req_ompi.req_complete_cb_data = ob.req_ompi.req_complete_cb_data;
    ob.req_free_called = true;
    return r;
}

int start_request(ompi_request_t** slot) noexcept {
    auto* base = reinterpret_cast<mca_pml_base_request_t*>(*slot);
    switch (base->req_type) {
        case MCA_PML_REQUEST_SEND: {
            auto* r = reinterpret_cast<SendRequest*>(*slot);
            if (!base->req_pml_complete) {
                r = fresh_copy(r);
                if (r == nullptr)
                    return OMPI_ERR_OUT_OF_RESOURCE;
                *slot = &r->base.req_base.req_ompi;
            }
            mark_send_started(r);
            reset_send_state(r);
            const int rc = start_send(r);
            if (rc != OMPI_SUCCESS) {
                r->failed = true;
                send_pml_complete(r);
            }
            return rc;
        }
        case MCA_PML_REQUEST_RECV: {
            // Receives complete at both levels at once: an inactive one is idle.
            auto* r = reinterpret_cast<RecvRequest*>(*slot);
            reset_recv_state(r);  // what the previous round left
            MCA_PML_BASE_RECV_START(&r->base);
            const int rc = start_recv(r);
            if (rc != OMPI_SUCCESS)
                recv_complete(r, rc);
            return rc;
        }
        default:
            return OMPI_ERR_REQUEST;
    }
}

mca_pml_base_module_t make_module() noexcept {
    mca_pml_base_module_t m{};
    m.pml_add_procs = add_procs;
    m.pml_del_procs = del_procs;
    m.pml_enable = enable;
    m.pml_progress = nullptr;  // registered by enable() (see there)
    m.pml_add_comm = add_comm;
    m.pml_del_comm = del_comm;
    m.pml_irecv_init = irecv_init;
    m.pml_irecv = irecv;
    m.pml_recv = recv;
    m.pml_isend_init = isend_init;
    m.pml_isend = isend;
    m.pml_send = send;
    m.pml_iprobe = iprobe;
    m.pml_probe = probe;
    m.pml_start = start;
    m.pml_improbe = improbe;
    m.pml_mprobe = mprobe;
    m.pml_imrecv = imrecv;
    m.pml_mrecv = mrecv;
    m.pml_dump = dump;
#if OMPI_MAJOR_VERSION < 5
    m.pml_ft_event = ft_event;  // 4.1 only; 5.0's pml_revoke_comm and
                                // pml_get_transports stay null (optional)
#endif
    // Tags travel as 32-bit fields. Context ids do too, but are capped as
    // ob1 caps them (its header has 16 bits): past 65535 live communicators
    // MPI_Comm_dup fails cleanly, as applications written against ob1 (and
    // MPICH's tests) expect, and the engine's communicator table stays
    // bounded instead of growing until memory runs out.
    m.pml_max_contextid = 65535;
    m.pml_max_tag = 0x7fffffff;
    // 5.0: no MCA_PML_BASE_FLAG_SUPPORTS_EXT_CID, so communicators get a
    // local index all members agree on (series.hpp, local_cid).
    m.pml_flags = 0;
    return m;
}

}  // namespace

core::EngineSink& engine_sink() noexcept {
    return g_sink;
}

int start(size_t count, ompi_request_t** requests) noexcept {
    Guard g;
    int rc = OMPI_SUCCESS;
    for (size_t i = 0; i < count; ++i) {
        if (requests[i] == nullptr || requests[i]->req_type != OMPI_REQUEST_PML)
            continue;
        const int r = start_request(&requests[i]);
        if (r != OMPI_SUCCESS)
            rc = r;
    }
    return rc;
}

int progress() noexcept {
    State& s = state();
    // The channel's deadlines are looked at on every call (every 8th turn of
    // a progress loop, see enable()): a probe timeout is a few round trips,
    // tens of microseconds on shared memory. Nothing armed costs one
    // comparison; an armed deadline one clock read.
    int done = reliability_progress();
    if (s.pending_count.load(std::memory_order_relaxed) == 0)
        return done;
    Guard g;
    // One pass over what is queued now, oldest first; work that still cannot
    // go keeps its relative order at the back. Work queued by a retry waits
    // for the next pass.
    for (std::size_t n = s.pending.size(); n > 0 && !s.pending.empty(); --n) {
        Deferred work = std::move(s.pending.front());
        s.pending.pop_front();
        if (work.retry())
            ++done;
        else
            s.pending.push_back(std::move(work));
    }
    s.pending_count.store(s.pending.size(), std::memory_order_relaxed);
    return done;
}

void defer(const void* owner, std::function<bool()> retry) {
    State& s = state();
    s.pending.push_back(Deferred{owner, std::move(retry)});
    s.pending_count.store(s.pending.size(), std::memory_order_relaxed);
}

void cancel_deferred(const void* owner) noexcept {
    State& s = state();
    if (s.pending.empty())
        return;
    std::erase_if(s.pending, [owner](const Deferred& d) { return d.owner == owner; });
    s.pending_count.store(s.pending.size(), std::memory_order_relaxed);
}

mca_pml_base_module_t* module_init(const core::Config& config,
                                   plugin::common::OpalLogSink& log) noexcept {
    State& s = g_state;
    s.config = config;
    s.log = &log;
    OBJ_CONSTRUCT(&s.lock, opal_recursive_mutex_t);
    reliability_init(config, log);
    engine().set_local(core::PeerName{OMPI_PROC_MY_NAME->jobid, OMPI_PROC_MY_NAME->vpid});
    if (requests_init() != OMPI_SUCCESS)
        return nullptr;
    s.module = make_module();
    return &s.module;
}

int module_fini() noexcept {
    State& s = g_state;
    if (s.progress_registered) {
        opal_progress_unregister(progress);
        s.progress_registered = false;
    }
    runtime_events_fini();
    print_stats();
    reliability_fini();
    standby_fini();
    s.pending.clear();
    s.pending_count.store(0);
    requests_fini();
    OBJ_DESTRUCT(&s.lock);
    s.reliable.reset();
    // The procs are gone by now (ompi_proc_finalize runs before the PML
    // framework closes): forget them, touch none of them.
    s.proc_of_peer.clear();
    return OMPI_SUCCESS;
}

}  // namespace pml::dr::mca
