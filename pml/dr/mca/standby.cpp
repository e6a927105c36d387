// pml dr glue: standby paths (see standby.hpp).
#include "standby.hpp"

#include <algorithm>
#include <memory>

#include "pml.hpp"
#include "reliability.hpp"

namespace pml::dr::mca {
namespace {

using plugin::common::logf;
using plugin::common::LogLevel;

struct Entry {
    // Its address is kept by frames and requests like a BML entry's: stable.
    std::unique_ptr<mca_bml_base_btl_t> bb;
    opal_proc_t* proc = nullptr;
    bool opened = false;  // the endpoint is from our add_procs: ours to give back
    bool used = false;    // handed out once (its BTL's progress is high priority)
};

struct Standby {
    std::vector<std::vector<Entry>> by_peer;  // indexed by PeerId, best first
    // BTL progress functions this layer made high priority.
    std::vector<mca_btl_base_component_progress_fn_t> progress;
};
Standby g_sb;

bool in_array(mca_bml_base_btl_array_t* arr, const mca_btl_base_module_t* btl) noexcept {
    const std::size_t n = mca_bml_base_btl_array_get_size(arr);
    for (std::size_t i = 0; i < n; ++i)
        if (mca_bml_base_btl_array_get_index(arr, i)->btl == btl)
            return true;
    return false;
}

// The endpoint the BML kept for `btl` in btl_rdma alone (full RDMA with
// atomics), nullptr if none.
mca_btl_base_endpoint_t* rdma_endpoint(mca_bml_base_endpoint_t* ep,
                                       const mca_btl_base_module_t* btl) noexcept {
    const std::size_t n = mca_bml_base_btl_array_get_size(&ep->btl_rdma);
    for (std::size_t i = 0; i < n; ++i) {
        mca_bml_base_btl_t* bb = mca_bml_base_btl_array_get_index(&ep->btl_rdma, i);
        if (bb->btl == btl)
            return bb->btl_endpoint;
    }
    return nullptr;
}

// The initialized BTL modules, highest exclusivity first (bml r2's order;
// among equals, the order they were initialized in).
std::vector<mca_btl_base_module_t*> modules_by_exclusivity() {
    std::vector<mca_btl_base_module_t*> mods;
    mca_btl_base_selected_module_t* sm = nullptr;
    OPAL_LIST_FOREACH(sm, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t) {
        mods.push_back(sm->btl_module);
    }
    std::stable_sort(mods.begin(), mods.end(),
                     [](const mca_btl_base_module_t* a, const mca_btl_base_module_t* b) {
                         return a->btl_exclusivity > b->btl_exclusivity;
                     });
    return mods;
}

// A new endpoint of `btl` for `proc` (nullptr: it does not reach it). An
// endpoint without the reachability bit (vader hands one out for its own
// process) is no path; bml r2 leaves those alone too.
mca_btl_base_endpoint_t* open_endpoint(mca_btl_base_module_t* btl, opal_proc_t* proc,
                                       opal_bitmap_t* reach) noexcept {
    opal_bitmap_clear_all_bits(reach);
    mca_btl_base_endpoint_t* ep = nullptr;
    const int rc = btl->btl_add_procs(btl, 1, &proc, &ep, reach);
    if (rc != OPAL_SUCCESS || ep == nullptr || !opal_bitmap_is_set_bit(reach, 0))
        return nullptr;
    return ep;
}

// The BML registered the progress of a BTL it gave no proc at low priority
// (every 8th opal_progress call): too slow for one that carries traffic.
void make_high_priority(mca_btl_base_module_t* btl) noexcept {
    const mca_btl_base_component_progress_fn_t fn = btl->btl_component->btl_progress;
    if (fn == nullptr ||
        std::find(g_sb.progress.begin(), g_sb.progress.end(), fn) != g_sb.progress.end())
        return;
    if (opal_progress_register(fn) == OPAL_SUCCESS)
        g_sb.progress.push_back(fn);
}

}  // namespace

void standby_add_peer(core::PeerId peer, ompi_proc_t* proc, std::size_t room) {
    mca_bml_base_endpoint_t* ep = mca_bml_base_get_endpoint(proc);
    // This process reaches itself through self alone (and vader's add_procs
    // must not see its own process twice).
    if (ep == nullptr || proc == ompi_proc_local_proc)
        return;
    if (g_sb.by_peer.size() <= peer)
        g_sb.by_peer.resize(peer + 1);
    std::vector<Entry>& entries = g_sb.by_peer[peer];
    opal_bitmap_t reach;
    OBJ_CONSTRUCT(&reach, opal_bitmap_t);
    if (opal_bitmap_init(&reach, 1) != OPAL_SUCCESS) {
        OBJ_DESTRUCT(&reach);
        return;
    }
    opal_proc_t* oproc = &proc->super;
    for (mca_btl_base_module_t* btl : modules_by_exclusivity()) {
        // The channel takes max_paths per peer: no endpoint opened for nothing.
        if (entries.size() >= room)
            break;
        if ((btl->btl_flags & MCA_BTL_FLAGS_SEND) == 0 || btl->btl_send == nullptr ||
            btl->btl_alloc == nullptr || in_array(&ep->btl_eager, btl) ||
            in_array(&ep->btl_send, btl) ||
            std::any_of(entries.begin(), entries.end(),
                        [btl](const Entry& e) { return e.bb->btl == btl; }))
            continue;
        mca_btl_base_endpoint_t* bep = rdma_endpoint(ep, btl);
        const bool opened = bep == nullptr;
        if (opened && (bep = open_endpoint(btl, oproc, &reach)) == nullptr)
            continue;
        auto bb = std::make_unique<mca_bml_base_btl_t>();
        bb->btl_flags = btl->btl_flags;
        bb->btl_weight = 0;
        bb->btl = btl;
        bb->btl_endpoint = bep;
        entries.push_back(Entry{std::move(bb), oproc, opened, false});
        logf(*state().log, LogLevel::Debug, "peer %s: standby path over BTL %s",
             OMPI_NAME_PRINT(&proc->super.proc_name), btl_name(btl));
    }
    OBJ_DESTRUCT(&reach);
}

std::vector<const mca_btl_base_module_t*> standby_btls(core::PeerId peer) {
    std::vector<const mca_btl_base_module_t*> btls;
    if (peer < g_sb.by_peer.size())
        for (const Entry& e : g_sb.by_peer[peer])
            btls.push_back(e.bb->btl);
    return btls;
}

mca_bml_base_btl_t* standby_find(core::PeerId peer, const mca_btl_base_module_t* btl) noexcept {
    if (peer >= g_sb.by_peer.size())
        return nullptr;
    for (Entry& e : g_sb.by_peer[peer]) {
        if (e.bb->btl != btl)
            continue;
        if (!e.used) {
            e.used = true;
            make_high_priority(e.bb->btl);
        }
        return e.bb.get();
    }
    return nullptr;
}

mca_bml_base_btl_t* standby_active(core::PeerId peer) noexcept {
    const core::ReliableChannel* ch = channel();
    if (ch == nullptr || peer >= g_sb.by_peer.size())
        return nullptr;
    for (const Entry& e : g_sb.by_peer[peer])
        if (core::carries_traffic(ch->path_state(peer, path_of(e.bb->btl))))
            return standby_find(peer, e.bb->btl);
    return nullptr;
}

void standby_del_procs(ompi_proc_t** procs, std::size_t nprocs) noexcept {
    for (std::size_t i = 0; i < nprocs; ++i) {
        core::PeerId peer = 0;
        if (procs[i] == nullptr || !known_peer(procs[i], peer) || peer >= g_sb.by_peer.size())
            continue;
        for (Entry& e : g_sb.by_peer[peer]) {
            if (!e.opened)
                continue;  // the BML's (btl_rdma): its del_procs gives it back
            mca_btl_base_endpoint_t* bep = e.bb->btl_endpoint;
            (void)e.bb->btl->btl_del_procs(e.bb->btl, 1, &e.proc, &bep);
        }
        g_sb.by_peer[peer].clear();
    }
}

void standby_fini() noexcept {
    for (const mca_btl_base_component_progress_fn_t fn : g_sb.progress)
        (void)opal_progress_unregister(fn);
    g_sb.progress.clear();
    g_sb.by_peer.clear();
}

}  // namespace pml::dr::mca
