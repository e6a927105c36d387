#include "uct_iface.hpp"

// UCX headers declare their C linkage themselves (BEGIN_C_DECLS).
#include <ucp/api/ucp.h>  // ucp_get_version: the one version query UCX exports
#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <unordered_map>

#if !defined(UCT_API) || UCT_API < UCT_VERSION(1, 11)
#error "btl drucx needs UCX 1.11 or newer (UCT's API is stable from 1.11)"
#endif

namespace btl::drucx::adapter {

using plugin::common::ErrorCode;
using plugin::common::fail;

namespace {

constexpr std::uint8_t kAmId = 5;  // one UCT AM id for every drucx message

// Calls fn(component, component_name, md_name) for every memory domain.
template <typename Fn>
void for_each_md(Fn&& fn) {
    uct_component_h* comps = nullptr;
    unsigned ncomp = 0;
    if (uct_query_components(&comps, &ncomp) != UCS_OK)
        return;
    for (unsigned c = 0; c < ncomp; ++c) {
        uct_component_attr_t ca{};
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(comps[c], &ca) != UCS_OK)
            continue;
        std::vector<uct_md_resource_desc_t> mds(ca.md_resource_count + 1);
        ca.md_resources = mds.data();
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        if (uct_component_query(comps[c], &ca) != UCS_OK)
            continue;
        for (unsigned m = 0; m < ca.md_resource_count; ++m)
            fn(comps[c], std::string(ca.name), std::string(mds[m].md_name));
    }
    uct_release_component_list(comps);
}

uct_md_h open_md(uct_component_h comp, const std::string& md_name) {
    uct_md_config_t* config = nullptr;
    if (uct_md_config_read(comp, nullptr, nullptr, &config) != UCS_OK)
        return nullptr;
    uct_md_h md = nullptr;
    if (uct_md_open(comp, md_name.c_str(), config, &md) != UCS_OK)
        md = nullptr;
    uct_config_release(config);
    return md;
}

}  // namespace

// An operation in flight: UCT hands back the address of `comp`.
struct PendingOp {
    uct_completion_t comp;  // first
    OpDone done;
    void* arg;
};

PendingOp* new_op(OpDone done, void* arg) {
    auto* op = new (std::nothrow) PendingOp{{}, done, arg};
    if (op == nullptr)
        return nullptr;
    op->comp.func = [](uct_completion_t* c) {
        auto* o = reinterpret_cast<PendingOp*>(c);
        o->done(o->arg, c->status == UCS_OK);
        delete o;
    };
    op->comp.count = 1;
    op->comp.status = UCS_OK;
    return op;
}

// What the call that started `op` returned, as the caller sees it; frees
// `op` unless UCT will complete it.
OpStart started(ucs_status_t st, PendingOp* op) {
    if (st == UCS_INPROGRESS)
        return OpStart::InProgress;  // op freed by its completion
    delete op;
    if (st == UCS_OK)
        return OpStart::Done;
    return st == UCS_ERR_NO_RESOURCE ? OpStart::WouldBlock : OpStart::Failed;
}

struct Iface::Handles {
    uct_component_h component = nullptr;
    uct_md_h md = nullptr;
    uct_md_attr_t md_attr{};
    ucs_async_context_t* async = nullptr;
    uct_worker_h worker = nullptr;
    uct_iface_h iface = nullptr;
    uct_iface_attr_t attr{};
    std::unordered_map<uct_ep_h, void*> eps;  // ep -> its user (for errors)
};

std::vector<TlResource> list_resources() {
    std::vector<TlResource> out;
    for_each_md(
        [&](uct_component_h comp, const std::string& comp_name, const std::string& md_name) {
            uct_md_h md = open_md(comp, md_name);
            if (md == nullptr)
                return;
            uct_tl_resource_desc_t* res = nullptr;
            unsigned n = 0;
            if (uct_md_query_tl_resources(md, &res, &n) == UCS_OK) {
                for (unsigned r = 0; r < n; ++r)
                    out.push_back({comp_name, md_name, res[r].tl_name, res[r].dev_name});
                uct_release_tl_resource_list(res);
            }
            uct_md_close(md);
        });
    return out;
}

Iface::Iface(TlResource res, IfaceEvents& events)
    : res_(std::move(res)), events_(&events), h_(std::make_unique<Handles>()) {}

Iface::~Iface() {
    for (auto& [ep, user] : h_->eps)
        uct_ep_destroy(ep);
    if (h_->iface != nullptr)
        uct_iface_close(h_->iface);
    if (h_->worker != nullptr)
        uct_worker_destroy(h_->worker);
    if (h_->async != nullptr)
        ucs_async_context_destroy(h_->async);
    if (h_->md != nullptr)
        uct_md_close(h_->md);
}

namespace {

ucs_status_t am_handler(void* arg, void* data, size_t length, unsigned /*flags*/) {
    static_cast<IfaceEvents*>(arg)->on_am({static_cast<const std::uint8_t*>(data), length});
    return UCS_OK;  // the data is consumed during the call
}

}  // namespace

Result<std::unique_ptr<Iface>> Iface::open(const TlResource& res, IfaceEvents& events) {
    std::unique_ptr<Iface> self(new Iface(res, events));
    Handles& h = *self->h_;
    for_each_md([&](uct_component_h comp, const std::string&, const std::string& md_name) {
        if (h.md == nullptr && md_name == res.md) {
            h.component = comp;
            h.md = open_md(comp, md_name);
        }
    });
    if (h.md == nullptr)
        return fail(ErrorCode::Unsupported, "UCT memory domain not available");
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &h.async) != UCS_OK ||
        uct_worker_create(h.async, UCS_THREAD_MODE_SINGLE, &h.worker) != UCS_OK)
        return fail(ErrorCode::NoResources, "UCT worker");
    uct_iface_config_t* config = nullptr;
    if (uct_md_iface_config_read(h.md, res.tl.c_str(), nullptr, nullptr, &config) != UCS_OK)
        return fail(ErrorCode::Unsupported, "UCT iface config");
    uct_iface_params_t params{};
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_STATS_ROOT | UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                        UCT_IFACE_PARAM_FIELD_CPU_MASK | UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name = res.tl.c_str();
    params.mode.device.dev_name = res.device.c_str();
    UCS_CPU_ZERO(&params.cpu_mask);
    params.err_handler_arg = self.get();
    params.err_handler_flags = 0;  // synchronous: from progress
    params.err_handler = [](void* arg, uct_ep_h ep, ucs_status_t) -> ucs_status_t {
        auto* me = static_cast<Iface*>(arg);
        const auto it = me->h_->eps.find(ep);
        if (it != me->h_->eps.end())
            me->events_->on_ep_error(it->second);
        return UCS_OK;  // we own the ep; it is destroyed later, outside this callback
    };
    const ucs_status_t st = uct_iface_open(h.md, h.worker, &params, config, &h.iface);
    uct_config_release(config);
    if (st != UCS_OK) {
        h.iface = nullptr;
        return fail(ErrorCode::Unsupported, "uct_iface_open failed");
    }
    if (uct_iface_query(h.iface, &h.attr) != UCS_OK || uct_md_query(h.md, &h.md_attr) != UCS_OK)
        return fail(ErrorCode::Internal, "uct_iface_query failed");
    const std::uint64_t f = h.attr.cap.flags;
    IfaceCaps& c = self->caps_;
    c.am_short = (f & UCT_IFACE_FLAG_AM_SHORT) != 0
                     ? std::min<std::size_t>(h.attr.cap.am.max_short, kAmShortMax)
                     : 0;
    c.am_bcopy = (f & UCT_IFACE_FLAG_AM_BCOPY) != 0 ? h.attr.cap.am.max_bcopy : 0;
    if ((f & UCT_IFACE_FLAG_AM_ZCOPY) != 0 && h.attr.cap.am.max_iov >= 2 &&
        (h.md_attr.cap.flags & UCT_MD_FLAG_NEED_MEMH) == 0) {
        c.am_zcopy = h.attr.cap.am.max_zcopy;
        c.am_zcopy_header = h.attr.cap.am.max_hdr;
    }
    c.connect_to_iface = (f & UCT_IFACE_FLAG_CONNECT_TO_IFACE) != 0;
    c.peer_failure = (f & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE) != 0;
    c.ep_check = (f & UCT_IFACE_FLAG_EP_CHECK) != 0;
    c.cb_sync = (f & UCT_IFACE_FLAG_CB_SYNC) != 0;
    // Zero-copy RMA on user buffers needs registration; posix/sysv offer RMA
    // only into memory their md allocated, which is of no use here.
    const bool reg = (h.md_attr.cap.flags & UCT_MD_FLAG_REG) != 0;
    c.get_zcopy = reg && (f & UCT_IFACE_FLAG_GET_ZCOPY) != 0;
    c.put_zcopy = reg && (f & UCT_IFACE_FLAG_PUT_ZCOPY) != 0;
    c.rkey_size = h.md_attr.rkey_packed_size;
    if (c.cb_sync && (c.am_short > 0 || c.am_bcopy > 0) &&
        uct_iface_set_am_handler(h.iface, kAmId, am_handler, &events, 0) != UCS_OK)
        return fail(ErrorCode::Internal, "uct_iface_set_am_handler failed");
    // Without this, uct_worker_progress does not poll the iface.
    uct_iface_progress_enable(h.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return self;
}

const char* const kBuiltUcx = UCT_VERNO_STRING;

bool runtime_version_matches(std::string& runtime) {
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    runtime = std::to_string(major) + "." + std::to_string(minor);
    return major == UCT_VERNO_MAJOR && minor == UCT_VERNO_MINOR;
}

std::vector<std::uint8_t> Iface::address() const {
    const std::size_t dl = h_->attr.device_addr_len;
    const std::size_t il = h_->attr.iface_addr_len;
    std::vector<std::uint8_t> out(dl + il);
    if (dl > 0 && uct_iface_get_device_address(
                      h_->iface, reinterpret_cast<uct_device_addr_t*>(out.data())) != UCS_OK)
        return {};
    if (il > 0 && uct_iface_get_address(
                      h_->iface, reinterpret_cast<uct_iface_addr_t*>(out.data() + dl)) != UCS_OK)
        return {};
    return out;
}

bool Iface::reachable(std::span<const std::uint8_t> peer) const {
    const std::size_t dl = h_->attr.device_addr_len;
    if (peer.size() != dl + h_->attr.iface_addr_len || !caps_.connect_to_iface)
        return false;
    return uct_iface_is_reachable(h_->iface,
                                  reinterpret_cast<const uct_device_addr_t*>(peer.data()),
                                  reinterpret_cast<const uct_iface_addr_t*>(peer.data() + dl)) != 0;
}

Result<void*> Iface::connect(std::span<const std::uint8_t> peer, void* user) {
    if (!reachable(peer))
        return fail(ErrorCode::Unreachable, "peer address not reachable through this iface");
    const std::size_t dl = h_->attr.device_addr_len;
    uct_ep_params_t p{};
    p.field_mask =
        UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface = h_->iface;
    p.dev_addr = reinterpret_cast<const uct_device_addr_t*>(peer.data());
    p.iface_addr = reinterpret_cast<const uct_iface_addr_t*>(peer.data() + dl);
    uct_ep_h ep = nullptr;
    if (uct_ep_create(&p, &ep) != UCS_OK)
        return fail(ErrorCode::Unreachable, "uct_ep_create failed");
    h_->eps.emplace(ep, user);
    return static_cast<void*>(ep);
}

void Iface::destroy_ep(void* ep) noexcept {
    auto* e = static_cast<uct_ep_h>(ep);
    if (h_->eps.erase(e) != 0)
        uct_ep_destroy(e);
}

namespace {
// The parts of one AM, gathered by the short path (iov) or the bcopy pack callback.
struct AmParts {
    std::array<std::span<const std::uint8_t>, 3> part;
    std::size_t count;
};
size_t pack_am(void* dest, void* arg) {
    const auto* a = static_cast<const AmParts*>(arg);
    auto* out = static_cast<std::uint8_t*>(dest);
    std::size_t n = 0;
    for (std::size_t i = 0; i < a->count; ++i) {
        std::memcpy(out + n, a->part[i].data(), a->part[i].size());
        n += a->part[i].size();
    }
    return n;
}
}  // namespace

Result<void> Iface::send_am(void* ep, std::span<const std::uint8_t> header,
                            std::span<const std::uint8_t> first,
                            std::span<const std::uint8_t> second) {
    const std::size_t total = header.size() + first.size() + second.size();
    AmParts parts{{header, first, second}, 1};
    if (!first.empty())
        parts.part[parts.count++] = first;
    if (!second.empty())
        parts.part[parts.count++] = second;
    if (total <= caps_.am_short && total >= sizeof(std::uint64_t)) {
        alignas(8) std::array<std::uint8_t, kAmShortMax> msg;
        (void)pack_am(msg.data(), &parts);
        return send_am_short(ep, msg.data(), total);
    }
    if (total > caps_.am_bcopy)
        return fail(ErrorCode::BadLength, "message longer than the transport's AM limit");
    const ssize_t n = uct_ep_am_bcopy(static_cast<uct_ep_h>(ep), kAmId, pack_am, &parts, 0);
    if (n >= 0)
        return {};
    if (static_cast<ucs_status_t>(n) == UCS_ERR_NO_RESOURCE)
        return fail(ErrorCode::WouldBlock, "UCT has no resources now");
    return fail(ErrorCode::Unreachable, "UCT send failed");
}

Result<void> Iface::send_am_short(void* ep, const std::uint8_t* msg, std::size_t len) noexcept {
    // am_short takes the first 8 bytes as a value and the rest as one buffer;
    // the receiver sees the same bytes as from any other path.
    std::uint64_t head = 0;
    std::memcpy(&head, msg, sizeof head);
    const ucs_status_t st =
        uct_ep_am_short(static_cast<uct_ep_h>(ep), kAmId, head, msg + sizeof head,
                        static_cast<unsigned>(len - sizeof head));
    if (st == UCS_OK || st == UCS_INPROGRESS) [[likely]]
        return {};
    if (st == UCS_ERR_NO_RESOURCE)
        return fail(ErrorCode::WouldBlock, "UCT has no resources now");
    return fail(ErrorCode::Unreachable, "UCT send failed");
}

Result<void*> Iface::register_memory(void* base, std::size_t len) {
    uct_mem_h memh = nullptr;
    if (uct_md_mem_reg(h_->md, base, len, UCT_MD_MEM_ACCESS_RMA, &memh) != UCS_OK)
        return fail(ErrorCode::NoResources, "uct_md_mem_reg failed");
    return static_cast<void*>(memh);
}

void Iface::deregister_memory(void* memh) noexcept {
    if (memh != nullptr)
        (void)uct_md_mem_dereg(h_->md, static_cast<uct_mem_h>(memh));
}

bool Iface::pack_rkey(void* memh, std::span<std::uint8_t> rkey) const {
    if (rkey.size() < caps_.rkey_size)
        return false;
    return caps_.rkey_size == 0 ||
           uct_md_mkey_pack(h_->md, static_cast<uct_mem_h>(memh), rkey.data()) == UCS_OK;
}

OpStart Iface::rma(bool get, void* ep, void* local, std::size_t len, void* local_memh,
                   std::uint64_t remote, std::span<const std::uint8_t> rkey, OpDone done,
                   void* arg) {
    if ((get ? !caps_.get_zcopy : !caps_.put_zcopy) || rkey.size() < caps_.rkey_size)
        return OpStart::Failed;
    uct_rkey_bundle_t bundle{};
    if (uct_rkey_unpack(h_->component, rkey.data(), &bundle) != UCS_OK)
        return OpStart::Failed;
    PendingOp* op = new_op(done, arg);
    if (op == nullptr) {
        (void)uct_rkey_release(h_->component, &bundle);
        return OpStart::WouldBlock;
    }
    uct_iov_t iov{};
    iov.buffer = local;
    iov.length = len;
    iov.memh = static_cast<uct_mem_h>(local_memh);
    iov.count = 1;
    auto* e = static_cast<uct_ep_h>(ep);
    const ucs_status_t st = get ? uct_ep_get_zcopy(e, &iov, 1, remote, bundle.rkey, &op->comp)
                                : uct_ep_put_zcopy(e, &iov, 1, remote, bundle.rkey, &op->comp);
    (void)uct_rkey_release(h_->component, &bundle);
    return started(st, op);
}

OpStart Iface::send_am_zcopy(void* ep, std::span<const std::uint8_t> header,
                             std::span<const std::uint8_t> first,
                             std::span<const std::uint8_t> second, OpDone done, void* arg) {
    if (header.size() > caps_.am_zcopy_header ||
        header.size() + first.size() + second.size() > caps_.am_zcopy)
        return OpStart::Failed;
    PendingOp* op = new_op(done, arg);
    if (op == nullptr)
        return OpStart::WouldBlock;
    std::array<uct_iov_t, 2> iov{};
    std::size_t n = 0;
    for (const auto part : {first, second}) {
        if (part.empty())
            continue;
        iov[n].buffer = const_cast<std::uint8_t*>(part.data());
        iov[n].length = part.size();
        iov[n].memh = UCT_MEM_HANDLE_NULL;  // caps: this md needs none
        iov[n].count = 1;
        ++n;
    }
    const ucs_status_t st =
        uct_ep_am_zcopy(static_cast<uct_ep_h>(ep), kAmId, header.data(),
                        static_cast<unsigned>(header.size()), iov.data(), n, 0, &op->comp);
    return started(st, op);
}

void Iface::check_ep(void* ep) noexcept {
    if (caps_.ep_check)
        (void)uct_ep_check(static_cast<uct_ep_h>(ep), 0, nullptr);
}

unsigned Iface::progress() noexcept {
    return uct_worker_progress(h_->worker);
}

}  // namespace btl::drucx::adapter
