// pml dr glue of the reliability channel (core/channel.hpp): every frame but
// ACK goes through it. This layer keeps what it takes to resend a frame,
// turns the channel's decisions into BTL sends, feeds BTL completions, errors
// and arriving frames back, drives the channel's timers from progress and an
// opal timer, and applies receive-side fault injection (pml_dr_fault_*).
#pragma once
#include "ompi_prelude.hpp"

#include <cstdint>
#include <span>
#include <vector>

#include "channel.hpp"
#include "config.hpp"
#include "frame_copy.hpp"
#include "fault.hpp"
#include "opal_log.hpp"

namespace pml::dr::mca {

struct SendRequest;

// A frame handed to the channel. It lives until the channel released it
// (acked or abandoned) and no BTL or queued retry still refers to it
// (`life`, core/frame_copy.hpp). Heap-allocated; its address is the
// channel's FrameToken.
struct StoredFrame {
    core::PeerId peer = 0;
    std::uint32_t seq = 0;         // the channel's, once transmitted
    SendRequest* owner = nullptr;  // its frames_inflight counts this frame
    // The whole frame, or only its header (repack). new_frame() hands out a
    // pooled frame with stale bytes: every user sets them.
    std::vector<std::uint8_t> bytes;
    // repack: the payload is packed again from owner's convertor at
    // [offset, offset + len) for every resend (the request keeps the user's
    // buffer until it completes, which waits for this frame).
    bool repack = false;
    std::uint64_t offset = 0;
    std::size_t len = 0;
    std::uint16_t flags = 0;  // stamped into every transmission (kFlagAckNow)
    // bytes' header already carries this seq and flags (encoded with
    // next_seq()): a first transmission needs no restamping.
    std::uint32_t encoded_seq = 0;
    // The sender's own descriptor for the first transmission, on the BTL of
    // prebuilt_bb; used if the channel picks that path, freed otherwise.
    mca_btl_base_descriptor_t* prebuilt = nullptr;
    mca_bml_base_btl_t* prebuilt_bb = nullptr;
    // Built -> InChannel -> Handed -> Acked | Abandoned, and the BTL
    // descriptors and queued retries holding it. Handed: a BTL has taken a
    // transmission of it (sendi took it, or a descriptor's completion came
    // back): only then is an eager send MPI-complete, as with ob1. Before,
    // its data may sit in the BTL's queue (tcp before a connection is up),
    // which moves only while this process calls MPI.
    core::CopyLife life;
    SendRequest* mpi_waiter = nullptr;  // MPI-completed once handed
};

// A cleared frame from a pool (its byte buffer keeps its capacity, so the
// hot path does not allocate; `bytes`: how many it will hold, to pick a
// buffer of that size), and its return when the sender never submitted it.
// Submitted frames come back to the pool by themselves.
StoredFrame* new_frame(core::PeerId peer, std::size_t bytes = 0) noexcept;
void discard_frame(StoredFrame* sf) noexcept;

// Lifecycle (module.cpp).
void reliability_init(const core::Config& config, plugin::common::OpalLogSink& log);
// MPI_Finalize (every proc leaves): waits (bounded) for the peers' ACKs of
// what is still unacknowledged, so the last messages survive a loss, and
// exchanges BYEs so that nothing is written to a peer that left.
void reliability_drain() noexcept;
void reliability_fini() noexcept;
// A process the PML now knows (peer_for): its standby endpoints are opened,
// nothing of the channel yet, which makes the peer's state on its first use
// from the paths the glue offers then (its BML paths, then standby paths).
void reliability_add_peer(core::PeerId peer, ompi_proc_t* proc);
int reliability_progress() noexcept;

// Sending. Takes ownership of `sf` (and its prebuilt descriptor) in every
// case: OMPI_SUCCESS (the channel has it), OMPI_ERR_OUT_OF_RESOURCE (window
// full: sf was discarded, try again later), OMPI_ERR_UNREACH (no path / dead
// peer: discarded). `hint`: the BTL the caller prefers (nullptr: any).
int submit_frame(StoredFrame* sf, const mca_btl_base_module_t* hint) noexcept;
// submit_frame() on the BML entry `bb` for that peer, which the frame goes
// out on at once (no round trip through the channel's output), unless the
// channel declared that path failed: then it picks another.
// handed (optional): whether a BTL took the frame before this returned.
// checked (optional): check_submit_on() for this peer and path, made by the
// caller to encode the frame with its seq and ack (nothing submitted since).
int submit_direct(StoredFrame* sf, mca_bml_base_btl_t* bb, bool* handed = nullptr,
                  const core::SubmitCheck* checked = nullptr) noexcept;
// The channel's check_submit_on() for a frame to `peer` over `btl`; the
// peer's state is made on its first use (as use_peer()).
core::SubmitCheck check_submit(core::PeerId peer, const mca_btl_base_module_t* btl) noexcept;
// The channel's state for `peer`, made on its first use from the paths the
// glue offers (false: it has none, the peer is unreachable). Every way into
// the full protocol calls it (the inline send, start_send through
// peer_is_dead(), control frames) before asking about the peer's paths,
// frame limits or sequence numbers, which read no state that is not there.
bool use_peer(core::PeerId peer) noexcept;
// Whether new traffic to `peer` should use this BTL (the channel's
// path_preferred(): not failed, not a standby, and not suspect while
// another path is alive).
bool path_usable(core::PeerId peer, const mca_btl_base_module_t* btl) noexcept;
bool peer_is_dead(core::PeerId peer) noexcept;
// The usable BML path to `peer` with the lowest latency (then the highest
// bandwidth) among its eager and send BTLs: where an eager frame goes when
// the path it was meant for failed (nullptr: none usable).
mca_bml_base_btl_t* nearest_usable(core::PeerId peer) noexcept;
// The BML's entry for `btl` towards `peer`, or our own for a standby path
// (nullptr: none).
mca_bml_base_btl_t* find_bml(core::PeerId peer, const mca_btl_base_module_t* btl) noexcept;
// The BTL modules of a BML endpoint's send paths (btl_eager, then
// btl_send), each once, in that order.
std::vector<const mca_btl_base_module_t*> bml_send_btls(mca_bml_base_endpoint_t* ep);
// Paths to the peer the channel has not declared failed.
std::size_t live_paths(core::PeerId peer) noexcept;
// The frame_seq the next frame submitted to `peer` will carry.
std::uint32_t next_seq(core::PeerId peer) noexcept;
// The ack_seq a frame to `peer` carries now.
std::uint32_t ack_seq_for(core::PeerId peer) noexcept;
// Releases now the frames the peer's carried acks acknowledged (normally
// batched), before a request checks whether it waits on them.
void settle_carried_acks(core::PeerId peer) noexcept;
// Largest frame / eager frame every path to `peer` can carry, so that a frame
// built for one BTL can be resent on any other.
std::size_t frame_cap(core::PeerId peer) noexcept;
std::size_t eager_cap(core::PeerId peer) noexcept;

// Receiving (module.cpp's BTL callbacks, module lock held).
void reliability_on_frame(mca_btl_base_module_t* btl, std::span<const std::uint8_t> frame) noexcept;
void reliability_btl_error(mca_btl_base_module_t* btl, opal_proc_t* errproc) noexcept;
// The runtime reported the peer dead (runtime_events.cpp, module lock held).
void reliability_declare_dead(core::PeerId peer, const char* reason) noexcept;

// The channel and counters, for statistics and MPI_T (nullptr before init).
const core::ReliableChannel* channel() noexcept;
struct ReliabilityStats {
    plugin::common::FaultCounters faults;
    std::uint64_t acks_dropped = 0;      // ACK/NACK frames that found no path or descriptor
    std::uint64_t frames_killed_rx = 0;  // arrived on a BTL pml_dr_fault_fail_btl killed
    std::uint64_t descriptor_waits = 0;  // frames that waited in progress for a BTL descriptor
};
ReliabilityStats reliability_stats() noexcept;

}  // namespace pml::dr::mca
