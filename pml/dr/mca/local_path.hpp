// pml dr glue: trusted local paths (core/trust.hpp, core/wire_local.hpp).
// A small standard message to a peer reached only through memory goes as
// a LOCAL_MATCH, straight from MPI_Isend into the BTL's sendi and from the
// BTL's callback into matching: no sequence, ACK, checksum or kept copy.
// Everything else to that peer (long, synchronous or buffered messages,
// control frames) keeps the full protocol on the same BTL.
#pragma once
#include "ompi_prelude.hpp"

#include <cstdint>

#include "engine.hpp"

namespace pml::dr::mca {

// The BTL tag of LOCAL_MATCH frames (the full protocol's is kBtlTag).
inline constexpr mca_btl_base_tag_t kLocalTag = MCA_BTL_TAG_PML + 2;

// Tells the other processes of the node whether this one sends LOCAL_MATCH
// (core::local_trust for a memory path under our parameters), through the
// modex: a peer sends them to us only if we would to it. Parameters that
// differ between ranks (a fault injected on one side only, trust off on one
// side) then give both directions the full protocol.
void local_publish(const core::Config& config, const mca_base_component_t* component) noexcept;

// Judges the peer's BML paths (core::local_trust) and what the peer
// published, and tells the engine.
void local_add_peer(core::PeerId peer, ompi_proc_t* proc) noexcept;

// Sends a standard-mode message to a peer the engine sends_local() to, as
// one LOCAL_MATCH through `bb`'s sendi. OMPI_SUCCESS: the BTL has it, the
// send is complete. Anything else: nothing was sent, sequenced or charged,
// and the caller uses the full protocol.
int local_send(const void* buf, std::size_t count, ompi_datatype_t* dt, int dst, int tag,
               ompi_communicator_t* comm, ompi_proc_t* proc, core::PeerId peer,
               core::CommMatcher& matcher, mca_bml_base_btl_t* bb) noexcept;

// The BTL callback of kLocalTag (registered with the full protocol's,
// through plugin::common::recv_callback).
void local_recv(mca_btl_base_module_t* btl, plugin::common::RecvSegments seg) noexcept;

// LOCAL_MATCH frames this process handed to a BTL.
std::uint64_t local_frames_sent() noexcept;

}  // namespace pml::dr::mca
