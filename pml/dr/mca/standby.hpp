// pml dr glue: standby paths, the BTLs that reach a peer but that the BML
// left out.
//
// bml r2 (Open MPI 4.1, mca_bml_r2_add_procs) asks every BTL module to add
// every new proc, then keeps a BTL for a proc's sends (btl_send, btl_eager)
// only if no BTL of higher exclusivity reaches it already
// (mca_bml_r2_endpoint_add_btl compares with the last one it kept; the
// modules are sorted by exclusivity). A BTL it leaves out keeps its
// endpoint only when it offers full RDMA with atomics (then it is in
// btl_rdma alone); otherwise the BML hands the endpoint back at once with
// the BTL's del_procs. So under self,drucx,drtcp a local peer has drucx
// alone, and the drtcp endpoint opened for it is gone: with drucx dead,
// nothing is left to fail over to.
//
// For each peer, as the PML adds it, every initialized BTL module that is
// not among its BML send BTLs gets an endpoint of ours: the one the BML kept in btl_rdma, or a new
// one from the BTL's add_procs (one proc and a one-bit reachability bitmap,
// as bml r2 does; not reachable: nothing kept). It is kept in an
// mca_bml_base_btl_t of ours (the BML's layout, so every mca_bml_base_*
// helper takes it) and offered to the channel as a standby path (on the
// peer's first use, Glue::offer_paths), best
// (highest exclusivity) first. The channel sends nothing on it until the
// last better path failed; then it promotes the first standby, find_bml()
// hands out our entry, and new frames pick it (standby_active()). The BTL's
// progress, registered at low priority by the BML for a BTL it did not use,
// is made high priority on the entry's first use. Endpoints we opened are
// given back with the BTL's del_procs in the PML's del_procs, before the
// BML's.
#pragma once
#include "ompi_prelude.hpp"

#include <vector>

#include "channel.hpp"

namespace pml::dr::mca {

// Opens the standby paths of `peer` (`proc`), at most `room` of them (the
// PML's add_procs, outside any BTL callback).
void standby_add_peer(core::PeerId peer, ompi_proc_t* proc, std::size_t room);
// The BTL modules of the peer's standby paths, best first: what the channel
// is offered as standby paths (a frame re-driven onto one must fit it, so
// their limits bound the peer's frames).
std::vector<const mca_btl_base_module_t*> standby_btls(core::PeerId peer);
// Our entry for the standby path over `btl` to `peer` (nullptr: none).
mca_bml_base_btl_t* standby_find(core::PeerId peer, const mca_btl_base_module_t* btl) noexcept;
// The peer's standby entry the channel has promoted (nullptr: none): where
// new frames go once every BML path to the peer failed.
mca_bml_base_btl_t* standby_active(core::PeerId peer) noexcept;
// Gives back the endpoints opened for these procs (PML del_procs).
void standby_del_procs(ompi_proc_t** procs, std::size_t nprocs) noexcept;
// Forgets everything (module finalize); progress callbacks made high
// priority are unregistered (the BML's finalize, later, ignores that).
void standby_fini() noexcept;

}  // namespace pml::dr::mca
