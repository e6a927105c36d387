// mca_btl_drucx_component: parameters, transport choice, the module, the
// modex, progress (UCT worker, waiting sends, peer checks) and the UCT
// events (active messages to the tag's callback, peer failures to the PML).
#include <algorithm>
#include <ctime>

#include "btl.hpp"
#include "mca_params.hpp"
#include "btl_frag.hpp"

namespace {

int drucx_register() noexcept;
int drucx_open() noexcept;
int drucx_close() noexcept;
mca_btl_base_module_t** drucx_init(int* num_btls, bool enable_progress_threads,
                                   bool enable_mpi_threads) noexcept;
int drucx_progress() noexcept {
    return btl::drucx::mca::progress();
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) mca_btl_base_component_3_0_0_t mca_btl_drucx_component = {
    .btl_version =
        {
            MCA_BTL_DEFAULT_VERSION("drucx"),
            .mca_open_component = drucx_open,
            .mca_close_component = drucx_close,
            .mca_query_component = nullptr,
            .mca_register_component_params = drucx_register,
        },
    .btl_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .btl_init = drucx_init,
    .btl_progress = drucx_progress,
};
}

namespace btl::drucx::mca {

using plugin::common::logf;
using plugin::common::LogLevel;

State g_state;

Module& template_module() noexcept {
    static Module m = [] {
        Module t{};
        t.super.btl_component = &mca_btl_drucx_component;
        t.super.btl_exclusivity = MCA_BTL_EXCLUSIVITY_HIGH - 1;  // below vader
        t.super.btl_eager_limit = 4096;
        t.super.btl_rndv_eager_limit = 4096;
        t.super.btl_max_send_size = 65536;
        t.super.btl_latency = 1;
        t.super.btl_bandwidth = 10000;
        // What the module may offer; btl_drucx_flags can take some away, and
        // init drops put/get where there is no RMA transport.
        t.super.btl_flags =
            MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_SEND_INPLACE | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET;
        fill_module_functions(t.super);
        return t;
    }();
    return m;
}

Frag* new_frag(mca_btl_base_endpoint_t* ep, std::size_t bytes, uint32_t flags) noexcept {
    State& s = state();
    // Every frag holds the largest message the module sends (fixed at init).
    const std::size_t cap = s.module->super.btl_max_send_size;
    if (bytes > cap)
        return nullptr;
    Frag* f = nullptr;
    if (!s.free_frags.empty()) {
        f = s.free_frags.back();
        s.free_frags.pop_back();
    } else {
        void* mem = std::malloc(sizeof(Frag) + cap);
        if (mem == nullptr)
            return nullptr;
        f = new (mem) Frag;
        OBJ_CONSTRUCT(&f->base, mca_btl_base_descriptor_t);
        f->capacity = cap;
        f->data = reinterpret_cast<std::uint8_t*>(f + 1);
    }
    f->endpoint = ep;
    plugin::common::reset_send_descriptor(f->base, f->segment, f->data, bytes, flags);
    return f;
}

namespace {

using plugin::common::bytes_of;

// A zcopy send finished (from UCT's progress, lock held).
void zcopy_done(void* arg, bool ok) {
    State& s = state();
    const auto ticket = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(arg));
    if (auto op = s.in_flight->complete(ticket))  // stale: completed in error when its peer failed
        s.owed.completions.emplace_back(static_cast<Frag*>(op->cookie),
                                        ok ? OPAL_SUCCESS : OPAL_ERR_UNREACH);
}

SendOutcome zcopy(State& s, mca_btl_base_endpoint_t* ep, Frag* f,
                  std::span<const std::uint8_t> first, std::span<const std::uint8_t> second) {
    core::PendingTable& table = *s.in_flight;
    const auto ticket = table.add({f, core::OpKind::Send, ep->id});
    if (!ticket)
        return SendOutcome::WouldBlock;  // bounded: wait for completions
    // UCT hands back a void*; the ticket is a number (never dereferenced).
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    void* arg = reinterpret_cast<void*>(static_cast<std::uintptr_t>(*ticket));
    const adapter::OpStart st =
        s.iface->send_am_zcopy(ep->uct_ep, f->header, first, second, zcopy_done, arg);
    if (st == adapter::OpStart::InProgress) {
        ++s.zcopy;
        return SendOutcome::InFlight;
    }
    (void)table.complete(*ticket);
    if (st == adapter::OpStart::Done) {
        ++s.zcopy;
        return SendOutcome::Sent;
    }
    return st == adapter::OpStart::WouldBlock ? SendOutcome::WouldBlock : SendOutcome::Failed;
}

}  // namespace

SendOutcome send_now(mca_btl_base_endpoint_t* ep, Frag* f) noexcept {
    State& s = state();
    const std::span<const std::uint8_t> first = bytes_of(f->segment[0]);
    const std::span<const std::uint8_t> second =
        f->base.des_segment_count > 1 ? bytes_of(f->segment[1]) : std::span<const std::uint8_t>{};
    const std::size_t total = core::kAmHeaderSize + first.size() + second.size();
    if (total > s.iface->caps().am_bcopy && s.in_flight)
        return zcopy(s, ep, f, first, second);
    auto r = s.iface->send_am(ep->uct_ep, f->header, first, second);
    if (r)
        return SendOutcome::Sent;
    return r.error().code == plugin::common::ErrorCode::WouldBlock ? SendOutcome::WouldBlock
                                                                   : SendOutcome::Failed;
}

void free_frag(Frag* f) noexcept {
    if (f != nullptr)
        state().free_frags.push_back(f);  // bounded by the descriptors ever in use at once
}

void complete(Frag* f, int status) noexcept {
    if (f->base.des_cbfunc != nullptr)
        f->base.des_cbfunc(&state().module->super, f->endpoint, &f->base, status);
    if ((f->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) != 0) {
        Guard g;
        free_frag(f);
    }
}

void fail_endpoint(mca_btl_base_endpoint_t* ep) noexcept {
    State& s = state();
    if (ep->failed)
        return;
    ep->failed = true;
    if (s.in_flight) {
        // UCT may still complete these; their tickets are stale from now on.
        std::vector<core::PendingOp> lost;
        s.in_flight->fail_peer(ep->id, lost);
        for (const core::PendingOp& op : lost)
            s.owed.completions.emplace_back(static_cast<Frag*>(op.cookie), OPAL_ERR_UNREACH);
    }
    while (!ep->waiting.empty()) {
        s.owed.completions.emplace_back(ep->waiting.front(), OPAL_ERR_UNREACH);
        ep->waiting.pop_front();
        --s.waiting_total;
    }
    if (ep->leaving) {
        logf(s.log, LogLevel::Debug, "peer %s left", OPAL_NAME_PRINT(ep->proc->proc_name));
        return;
    }
    logf(s.log, LogLevel::Warn, "peer %s unreachable through %s",
         OPAL_NAME_PRINT(ep->proc->proc_name), s.iface ? s.iface->resource().tl.c_str() : "-");
    s.owed.failed.push_back(ep);
}

namespace {

// Hands one message to the PML's callback for its tag.
void deliver(mca_btl_base_tag_t tag, std::uint8_t* payload, std::size_t len) noexcept {
    mca_btl_base_segment_t seg{};
    seg.seg_addr.pval = payload;
    seg.seg_len = len;
    (void)plugin::common::deliver_received(&state().module->super, nullptr, tag, &seg, 1);
}

// A peer said BYE: from now on its endpoint failing is its leaving.
void peer_leaves(State& s, std::span<const std::uint8_t> message) {
    auto name = core::decode_bye(message);
    if (!name)
        return;
    for (mca_btl_base_endpoint_t* ep : s.endpoints)
        if (ep->proc->proc_name.jobid == name->jobid && ep->proc->proc_name.vpid == name->vpid)
            ep->leaving = true;
}

class Events final : public adapter::IfaceEvents {
  public:
    void on_am(std::span<const std::uint8_t> bytes) override {
        State& s = state();
        auto h = core::decode_am_header(bytes);
        if (!h) {
            logf(s.log, LogLevel::Warn, "malformed drucx message dropped: %s",
                 h.error().message.data());
            return;
        }
        if (h->kind == core::AmKind::Bye) {
            peer_leaves(s, bytes);
            return;
        }
        if (h->tag >= MCA_BTL_TAG_MAX || s.module == nullptr)
            return;
        auto* payload = const_cast<std::uint8_t*>(bytes.data() + core::kAmHeaderSize);
        const std::size_t len = bytes.size() - core::kAmHeaderSize;
        if (s.faults.enabled()) {
            const plugin::common::FaultPlan plan = s.faults.next(len);
            if (plan.drop)
                return;
            if (plan.corrupt)
                payload[plan.byte] ^= plan.mask;  // UCT's receive buffer, ours until we return
        }
        if (!s.defer_rx) {
            deliver(h->tag, payload, len);
            return;
        }
        Inbox& in = s.owed.inbox;
        in.entries.push_back({h->tag, in.bytes.size(), len});
        in.bytes.insert(in.bytes.end(), payload, payload + len);
    }
    void on_ep_error(void* ep_user) override {
        // From inside UCT's progress: only note it; progress() handles it after.
        state().newly_failed.push_back(static_cast<mca_btl_base_endpoint_t*>(ep_user));
    }
};

}  // namespace

adapter::IfaceEvents& events() noexcept {
    static Events e;
    return e;
}

namespace {

std::uint64_t now_ms() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

// Sends that waited for resources, in order per peer.
int send_waiting(State& s) {
    int n = 0;
    for (mca_btl_base_endpoint_t* ep : s.endpoints) {
        while (!ep->waiting.empty() && !ep->failed) {
            Frag* f = ep->waiting.front();
            const SendOutcome r = send_now(ep, f);
            if (r == SendOutcome::WouldBlock)
                break;
            ep->waiting.pop_front();
            --s.waiting_total;
            if (r != SendOutcome::InFlight)
                s.owed.completions.emplace_back(
                    f, r == SendOutcome::Sent ? OPAL_SUCCESS : OPAL_ERR_UNREACH);
            ++n;
        }
    }
    return n;
}

// Shared memory reports a dead peer only when asked: every 200 ms.
void check_peers(State& s) {
    if (s.iface->caps().peer_failure || !s.iface->caps().ep_check)
        return;
    const std::uint64_t t = now_ms();
    if (t - s.last_check < 200)
        return;
    s.last_check = t;
    for (mca_btl_base_endpoint_t* ep : s.endpoints)
        if (!ep->failed)
            s.iface->check_ep(ep->uct_ep);
}

// UCT's progress and what follows from it, lock held: the PML is not called
// from here except for arriving messages when no lock is in use. The rest
// runs only when there is something to do, and the clock is read on every
// 64th turn only: the loop around it stays tight.
int poll(State& s) {
    int n = static_cast<int>(s.iface->progress());
    if (s.rdma_inflight > 0)
        n += static_cast<int>(s.rma->progress());
    if (s.waiting_total > 0)
        n += send_waiting(s);
    if ((++s.turn & 63u) == 0)
        check_peers(s);
    if (!s.newly_failed.empty()) {
        std::vector<mca_btl_base_endpoint_t*> failed;
        failed.swap(s.newly_failed);
        for (mca_btl_base_endpoint_t* ep : failed)
            fail_endpoint(ep);
    }
    return n;
}

int run(State& s, Upcalls& up) {
    const Inbox& in = up.inbox;
    for (const Inbox::Entry& e : in.entries)
        deliver(e.tag, const_cast<std::uint8_t*>(in.bytes.data()) + e.offset, e.len);
    for (auto [f, status] : up.completions)
        complete(f, status);
    for (RdmaOp* op : up.rdma) {
        if (op->cbfunc != nullptr)
            op->cbfunc(&s.module->super, op->endpoint, op->local_address, op->local_handle,
                       op->context, op->cbdata, op->ok ? OPAL_SUCCESS : OPAL_ERROR);
        delete op;
    }
    for (mca_btl_base_endpoint_t* ep : up.failed)
        if (s.module != nullptr && s.module->error_cb != nullptr)
            s.module->error_cb(&s.module->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc,
                               const_cast<char*>("btl drucx: peer unreachable"));
    return static_cast<int>(in.entries.size() + up.completions.size() + up.rdma.size());
}

}  // namespace

// One thread at a time polls UCT (lock held when threads are in use), and
// one thread at a time runs the upcalls, in the order they were owed, with
// the lock released; a thread that finds another delivering leaves its
// upcalls to it.
int progress() noexcept {
    State& s = state();
    const bool threads = opal_using_threads();
    if (threads && !s.lock.try_lock())
        return 0;  // another thread is polling
    if (s.in_progress || !s.iface) {
        if (threads)
            s.lock.unlock();
        return 0;
    }
    s.in_progress = true;
    s.defer_rx = threads;
    int n = poll(s);
    s.in_progress = false;
    if (s.owed.empty() || s.delivering) {
        if (threads)
            s.lock.unlock();
        return n;
    }
    s.delivering = true;
    while (!s.owed.empty()) {
        Upcalls up = std::move(s.owed);
        s.owed = Upcalls{};
        if (threads)
            s.lock.unlock();
        n += run(s, up);
        if (threads)
            s.lock.lock();
    }
    s.delivering = false;
    if (threads)
        s.lock.unlock();
    return n;
}

}  // namespace btl::drucx::mca

namespace {

using namespace btl::drucx;
using plugin::common::logf;
using plugin::common::LogLevel;

int drucx_register() noexcept {
    mca_base_component_t* self = &mca_btl_drucx_component.btl_version;
    if (mca::register_params(self) != 0 || mca::register_topology_params(self) != 0)
        return OPAL_ERROR;
    return mca_btl_base_param_register(self, &mca::template_module().super);
}

int drucx_open() noexcept {
    mca::state().log.open("btl:drucx", mca::raw_params().verbose);
    return OPAL_SUCCESS;
}

int drucx_close() noexcept {
    mca::state().iface.reset();
    mca::state().log.close();
    return OPAL_SUCCESS;
}

// The first AM-capable transport in order of preference that the user allows.
const adapter::TlResource* choose(const std::vector<adapter::TlResource>& all,
                                  const core::Config& c) {
    static const std::vector<std::string> kDefaultOrder = {"sysv", "posix", "tcp"};
    const std::vector<std::string>& order = c.tls.empty() ? kDefaultOrder : c.tls;
    for (const std::string& tl : order) {
        for (const adapter::TlResource& r : all) {
            const bool dev_ok = c.devices.empty() || std::find(c.devices.begin(), c.devices.end(),
                                                               r.device) != c.devices.end();
            if (r.tl == tl && dev_ok && (tl != "tcp" || r.device != "lo"))
                return &r;
        }
    }
    return nullptr;
}

mca_btl_base_module_t** drucx_init(int* num_btls, bool, bool) noexcept {
    *num_btls = 0;
    mca::State& s = mca::state();
    // Set wrong: say so once and end the job (mca_params.hpp).
    plugin::common::exit_on_bad_params(&mca_btl_drucx_component.btl_version,
                                       core::validate(mca::raw_params(), s.config));
    if (std::string runtime; !adapter::runtime_version_matches(runtime)) {
        logf(s.log, LogLevel::Info, "UCX %s at run time, built against %s; drucx disabled",
             runtime.c_str(), adapter::kBuiltUcx);
        return nullptr;
    }
    const std::vector<adapter::TlResource> all = adapter::list_resources();
    const adapter::TlResource* res = choose(all, s.config);
    if (res == nullptr) {
        logf(s.log, LogLevel::Info, "no usable UCX transport; drucx disabled");
        return nullptr;
    }
    auto iface = adapter::Iface::open(*res, mca::events());
    if (!iface || !(*iface)->caps().connect_to_iface || !(*iface)->caps().cb_sync ||
        (*iface)->caps().am_bcopy <= core::kAmHeaderSize + 64) {
        logf(s.log, LogLevel::Info, "UCX %s/%s unusable for drucx", res->tl.c_str(),
             res->device.c_str());
        return nullptr;
    }
    s.iface = std::move(*iface);
    auto* m = new (std::nothrow) mca::Module(mca::template_module());
    if (m == nullptr)
        return nullptr;
    // Eager messages fit one AM bcopy; longer frags go by AM zcopy where the
    // transport has it (tcp). Over the network stay below the stock tcp BTL.
    const adapter::IfaceCaps& caps = s.iface->caps();
    const std::size_t bcopy = caps.am_bcopy - core::kAmHeaderSize;
    const std::size_t frag = std::max(
        bcopy, caps.am_zcopy > core::kAmHeaderSize ? caps.am_zcopy - core::kAmHeaderSize : 0);
    m->super.btl_max_send_size = std::min(m->super.btl_max_send_size, frag);
    m->super.btl_eager_limit = std::min(m->super.btl_eager_limit, bcopy);
    m->super.btl_rndv_eager_limit = std::min(m->super.btl_rndv_eager_limit, bcopy);
    if (frag > bcopy)
        s.in_flight.emplace(s.config.max_pending, s.config.max_pending_peer);
    if (res->device != "memory")
        m->super.btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW + 98;
    s.module = m;
    s.faults = plugin::common::FaultInjector(s.config.faults);
    // Shared memory loses, damages, duplicates and reorders nothing, unless
    // we inject faults into it.
    m->medium.medium =
        res->device == "memory" && !s.faults.enabled() && s.config.faults.fail_after == 0
            ? plugin::common::BtlMedium::Memory
            : plugin::common::BtlMedium::Network;
    // Beside shared memory, cma gives single-copy gets for large messages.
    const std::vector<std::uint8_t> am_addr = s.iface->address();
    std::vector<std::uint8_t> rma_addr;
    if (res->device == "memory") {
        const auto cma = std::find_if(all.begin(), all.end(),
                                      [](const adapter::TlResource& r) { return r.tl == "cma"; });
        if (cma != all.end()) {
            auto rma = adapter::Iface::open(*cma, mca::events());
            if (rma && (*rma)->caps().get_zcopy && (*rma)->caps().put_zcopy &&
                (*rma)->caps().connect_to_iface) {
                s.rma = std::move(*rma);
                rma_addr = s.rma->address();
                m->super.btl_get_limit = m->super.btl_put_limit = std::size_t{1} << 30;
                m->super.btl_get_alignment = m->super.btl_put_alignment = 0;
                m->super.btl_get_local_registration_threshold = 0;
                m->super.btl_put_local_registration_threshold = 0;
                m->super.btl_registration_handle_size =
                    sizeof(void*) + std::max<std::size_t>(s.rma->caps().rkey_size, 1);
            }
        }
    }
    if (!s.rma)
        m->super.btl_flags &= ~(MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET);
    mca::apply_topology_weights(*m, *res);  // btl_latency/btl_bandwidth by NUMA distance
    // Publish each transport's address: a peer pairs only on the same ones.
    std::vector<core::TlAddress> entries = {{res->tl, am_addr}};
    if (s.rma)
        entries.push_back({s.rma->resource().tl, rma_addr});
    std::vector<std::uint8_t> blob = core::encode_modex(core::encode_addresses(entries));
    int rc = OPAL_SUCCESS;
    const auto size = static_cast<int32_t>(blob.size());
    OPAL_MODEX_SEND(rc, plugin::common::kModexLocal, &mca_btl_drucx_component.btl_version,
                    blob.data(), size);
    if (rc != OPAL_SUCCESS)
        logf(s.log, LogLevel::Warn, "modex send failed (%d)", rc);
    auto** out = static_cast<mca_btl_base_module_t**>(std::malloc(sizeof(mca_btl_base_module_t*)));
    if (out == nullptr)
        return nullptr;
    out[0] = &m->super;
    *num_btls = 1;
    logf(s.log, LogLevel::Info, "module on UCX %s/%s (AM short %zu, bcopy %zu)%s", res->tl.c_str(),
         res->device.c_str(), s.iface->caps().am_short, s.iface->caps().am_bcopy,
         s.rma ? ", put/get over cma" : "");
    return out;
}

}  // namespace
