// mca_btl_drtcp_component: parameters, interface discovery, module
// creation, the modex, progress and the transport's events.
#include <algorithm>

#include "btl.hpp"
#include "mca_params.hpp"

namespace {

int drtcp_register() noexcept;
int drtcp_open() noexcept;
int drtcp_close() noexcept;
mca_btl_base_module_t** drtcp_init(int* num_btls, bool enable_progress_threads,
                                   bool enable_mpi_threads) noexcept;
int drtcp_progress() noexcept {
    return btl::drtcp::mca::progress();
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) mca_btl_base_component_3_0_0_t mca_btl_drtcp_component = {
    .btl_version =
        {
            MCA_BTL_DEFAULT_VERSION("drtcp"),
            .mca_open_component = drtcp_open,
            .mca_close_component = drtcp_close,
            .mca_query_component = nullptr,
            .mca_register_component_params = drtcp_register,
        },
    .btl_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .btl_init = drtcp_init,
    .btl_progress = drtcp_progress,
};
}

namespace btl::drtcp::mca {

using plugin::common::logf;
using plugin::common::LogLevel;

State& state() noexcept {
    static State s;
    return s;
}

Module& template_module() noexcept {
    static Module m = [] {
        Module t{};
        t.super.btl_component = &mca_btl_drtcp_component;
        // Below the stock tcp BTL (MCA_BTL_EXCLUSIVITY_LOW + 100): where both
        // reach a peer, a stock run keeps using tcp.
        t.super.btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW + 99;
        t.super.btl_eager_limit = 64 * 1024;
        t.super.btl_rndv_eager_limit = 64 * 1024;
        t.super.btl_max_send_size = 128 * 1024;
        t.super.btl_rdma_pipeline_send_length = 128 * 1024;
        t.super.btl_rdma_pipeline_frag_size = core::kMaxPutBytes;
        t.super.btl_min_rdma_pipeline_size = 0;
        t.super.btl_latency = 100;
        t.super.btl_bandwidth = 1000;
        t.super.btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_SEND_INPLACE | MCA_BTL_FLAGS_PUT |
                            MCA_BTL_FLAGS_NEED_CSUM | MCA_BTL_FLAGS_NEED_ACK;
        // Puts go in one piece up to the wire's limit (the peer reads them
        // straight into place); no local registration is needed.
        t.super.btl_put_limit = core::kMaxPutBytes;
        t.super.btl_put_alignment = 0;
        t.super.btl_put_local_registration_threshold = SIZE_MAX;
        t.super.btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t);
        fill_module_functions(t.super);
        return t;
    }();
    return m;
}

namespace {

class Events final : public adapter::TransportEvents {
  public:
    void on_frame(void* module_user, std::uint8_t tag, std::span<std::uint8_t> payload) override {
        auto* m = static_cast<Module*>(module_user);
        if (tag >= MCA_BTL_TAG_MAX) {  // the trigger table has MCA_BTL_TAG_MAX entries
            logf(state().log, LogLevel::Warn, "frame with out-of-range tag %u dropped", tag);
            return;
        }
        mca_btl_base_segment_t seg{};
        seg.seg_addr.pval = payload.data();
        seg.seg_len = payload.size();
        if (!plugin::common::deliver_received(&m->super, nullptr, tag, &seg, 1))
            logf(state().log, LogLevel::Warn, "frame with unregistered tag %u dropped", tag);
    }
    void on_sent(void* cookie, bool ok) override {
        auto* f = static_cast<Frag*>(cookie);
        if (f->is_put) {
            const PutInfo p = f->put;
            Module* m = f->module;
            mca_btl_base_endpoint_t* ep = f->endpoint;
            state().frags.put(f);
            if (p.cbfunc != nullptr)
                p.cbfunc(&m->super, ep, p.local_address, p.local_handle, p.context, p.cbdata,
                         ok ? OPAL_SUCCESS : OPAL_ERR_UNREACH);
            return;
        }
        if (f->base.des_cbfunc != nullptr)
            f->base.des_cbfunc(&f->module->super, f->endpoint, &f->base,
                               ok ? OPAL_SUCCESS : OPAL_ERR_UNREACH);
        if ((f->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) != 0)
            state().frags.put(f);
    }
    void on_endpoint_failed(void* endpoint_user, void* module_user) override {
        auto* ep = static_cast<mca_btl_base_endpoint_t*>(endpoint_user);
        auto* m = static_cast<Module*>(module_user);
        logf(state().log, LogLevel::Warn, "connection to %s lost",
             OPAL_NAME_PRINT(ep->proc->proc_name));
        if (m->error_cb != nullptr)
            m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc,
                        const_cast<char*>("btl drtcp: connection lost"));
    }
};

// After the PML is gone (finalize): descriptors are freed, nobody is called.
class Discard final : public adapter::TransportEvents {
  public:
    void on_frame(void*, std::uint8_t, std::span<std::uint8_t>) override {}
    void on_sent(void* cookie, bool) override { state().frags.put(static_cast<Frag*>(cookie)); }
    void on_endpoint_failed(void*, void*) override {}
};

}  // namespace

adapter::TransportEvents& events() noexcept {
    static Events e;
    return e;
}

adapter::TransportEvents& discard_events() noexcept {
    static Discard d;
    return d;
}

void complete_done(const mca_btl_base_endpoint_t* only, bool call) noexcept {
    State& s = state();
    std::vector<Frag*> mine;
    {
        std::lock_guard lock(s.done_lock);
        auto keep = std::partition(s.done.begin(), s.done.end(),
                                   [&](Frag* f) { return only != nullptr && f->endpoint != only; });
        mine.assign(keep, s.done.end());
        s.done.erase(keep, s.done.end());
    }
    for (Frag* f : mine)
        (call ? events() : discard_events()).on_sent(f, true);
}

int progress() noexcept {
    State& s = state();
    if (!s.transport)
        return 0;
    const int n = s.transport->progress(events());
    std::vector<Frag*> done;
    {
        std::lock_guard lock(s.done_lock);
        if (s.done.empty())
            return n;
        done.swap(s.done);
    }
    for (Frag* f : done)
        events().on_sent(f, true);
    return n + static_cast<int>(done.size());
}

}  // namespace btl::drtcp::mca

namespace {

using namespace btl::drtcp;
using plugin::common::logf;
using plugin::common::LogLevel;

int drtcp_register() noexcept {
    mca_base_component_t* self = &mca_btl_drtcp_component.btl_version;
    if (mca::register_params(self) != 0 || mca::register_topology_params(self) != 0)
        return OPAL_ERROR;
    // eager_limit, max_send_size, exclusivity, flags, bandwidth, latency ...
    return mca_btl_base_param_register(self, &mca::template_module().super);
}

int drtcp_open() noexcept {
    mca::state().log.open("btl:drtcp", mca::raw_params().verbose);
    return OPAL_SUCCESS;
}

int drtcp_close() noexcept {
    mca::State& s = mca::state();
    s.transport.reset();
    s.frags.clear();
    s.log.close();
    return OPAL_SUCCESS;
}

std::vector<core::LocalIf> usable_interfaces(const core::Config& c) {
    const std::vector<core::LocalIf> all = adapter::list_interfaces();
    auto chosen = core::select_interfaces(all, c.include, c.exclude, c.families);
    if (!chosen)
        return {};
    if (chosen->empty() && !c.include_set) {
        // Nothing but loopback is up: a single-host job still runs.
        chosen = core::select_interfaces(all, {}, {}, c.families);
        if (chosen)
            std::erase_if(*chosen, [](const core::LocalIf& i) { return !i.addr.loopback(); });
    }
    return chosen ? *chosen : std::vector<core::LocalIf>{};
}

void publish(const std::vector<core::PublishedAddr>& addrs, bool put,
             const plugin::common::auth::Key& key) {
    std::vector<std::uint8_t> blob = core::encode_modex(addrs, put ? core::kModexPut : 0, key);
    int rc = OPAL_SUCCESS;
    const auto size = static_cast<int32_t>(blob.size());
    OPAL_MODEX_SEND(rc, plugin::common::kModexGlobal, &mca_btl_drtcp_component.btl_version,
                    blob.data(), size);
    if (rc != OPAL_SUCCESS)
        logf(mca::state().log, LogLevel::Warn, "modex send failed (%d)", rc);
}

// The number of ranks in this process's job, from the job data the launcher
// gave PMIx (the value the runtime sized MPI_COMM_WORLD by); 0 when absent,
// and then no unknown peer is admitted before the PML adds it.
std::uint32_t job_size(const opal_process_name_t& me) noexcept {
    opal_process_name_t job{};
    job.jobid = me.jobid;
    job.vpid = OPAL_VPID_WILDCARD;
    std::uint32_t size = 0;
    std::uint32_t* ptr = &size;
    int rc = OPAL_SUCCESS;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, plugin::common::kModexJobSize, &job, &ptr,
                                   plugin::common::kModexUint32);
    if (rc != OPAL_SUCCESS) {
        logf(mca::state().log, LogLevel::Warn,
             "job size unknown (%d): a peer that connects before it was added is refused", rc);
        return 0;
    }
    return size;
}

mca_btl_base_module_t** drtcp_init(int* num_btls, bool, bool) noexcept {
    *num_btls = 0;
    mca::State& s = mca::state();
    // Set wrong: say so once and end the job (mca_params.hpp).
    plugin::common::exit_on_bad_params(&mca_btl_drtcp_component.btl_version,
                                       core::validate(mca::raw_params(), s.config));
    s.interfaces = usable_interfaces(s.config);
    if (s.interfaces.empty()) {
        logf(s.log, LogLevel::Info, "no usable interface; drtcp disabled");
        return nullptr;
    }
    const mca::Module& tmpl = mca::template_module();
    const auto max_frame = static_cast<std::uint32_t>(
        std::max(tmpl.super.btl_eager_limit, tmpl.super.btl_max_send_size) + 64 * 1024);
    const opal_process_name_t me = opal_proc_local_get()->proc_name;
    // A fresh key per process and run; it travels only through the modex.
    auto key = plugin::common::auth::random_key();
    if (!key) {
        logf(s.log, LogLevel::Error, "no random key (%s); drtcp disabled",
             key.error().message.data());
        return nullptr;
    }
    s.key = *key;
    s.job_size = job_size(me);
    if (!s.config.auth)
        logf(s.log, LogLevel::Warn,
             "btl_drtcp_auth is off: connections are not authenticated (debugging only)");
    s.transport = std::make_unique<adapter::Transport>(s.config, core::ProcName{me.jobid, me.vpid},
                                                       s.key, max_frame, s.log);
    s.transport->set_unknown_peer_hook(mca::add_unknown_peer);
    s.frags.init(tmpl.super.btl_eager_limit,
                 std::max(tmpl.super.btl_eager_limit, tmpl.super.btl_max_send_size), 64);
    s.modules.clear();
    s.finalized = 0;
    for (std::size_t i = 0; i < s.interfaces.size(); ++i) {
        for (unsigned link = 0; link < s.config.links; ++link) {
            auto* m = new (std::nothrow) mca::Module(tmpl);
            if (m == nullptr)
                break;
            auto idx =
                s.transport->add_module(s.interfaces[i], static_cast<std::uint16_t>(link), m);
            if (!idx) {
                logf(s.log, LogLevel::Warn, "no listener for %s: %s", s.interfaces[i].name.c_str(),
                     idx.error().message.data());
                delete m;
                continue;
            }
            m->index = *idx;
            m->interface = static_cast<int>(i);
            s.modules.push_back(m);
        }
    }
    if (s.modules.empty()) {
        s.transport.reset();
        return nullptr;
    }
    // Put needs exactly one module per peer: ob1's RDMA pipeline stalls when
    // several put-capable modules reach one peer (stock tcp with
    // btl_tcp_links 2 hangs the same way). The choice is published so that
    // two processes that disagree do not pair (see pairing_for).
    s.put = (tmpl.super.btl_flags & MCA_BTL_FLAGS_PUT) != 0 && s.modules.size() == 1;
    if (!s.put) {
        for (mca::Module* m : s.modules)
            m->super.btl_flags &= ~static_cast<uint32_t>(MCA_BTL_FLAGS_PUT);
    }
    mca::apply_topology_weights();  // btl_latency/btl_bandwidth by NUMA distance
    publish(s.transport->published(), s.put, s.key);
    auto** out = static_cast<mca_btl_base_module_t**>(
        std::malloc(s.modules.size() * sizeof(mca_btl_base_module_t*)));
    if (out == nullptr)
        return nullptr;
    for (std::size_t i = 0; i < s.modules.size(); ++i)
        out[i] = &s.modules[i]->super;
    *num_btls = static_cast<int>(s.modules.size());
    for (const auto& i : s.interfaces)
        logf(s.log, LogLevel::Info, "module on %s %s/%u x %u links", i.name.c_str(),
             i.addr.str().c_str(), i.prefix, s.config.links);
    return out;
}

}  // namespace
