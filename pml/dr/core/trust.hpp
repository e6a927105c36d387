// Which paths pml dr trusts to deliver every frame intact, once and in
// order, and so which peers get the compact protocol of trusted local paths
// (wire_local.hpp; README "Trusted local paths").
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "config.hpp"

namespace pml::dr::core {

// What carries a path's frames.
enum class PathMedium {
    Process,  // a copy inside this process (the self BTL)
    Memory,   // shared memory between processes of this node (vader, sm)
    Network,  // anything else: a NIC, a socket, an unknown BTL
};

// The medium of a BTL, by its component name. Unknown BTLs are a network.
PathMedium medium_of_btl(std::string_view component) noexcept;

// What a peer's paths allow (its BML send paths, decided once when the peer
// is added; standby paths carry nothing unless these failed).
enum class LocalTrust : std::uint8_t {
    None,           // a path goes over the network: the full protocol only
    Accept,         // every path moves frames through memory: its
                    // LOCAL_MATCH frames are taken, whatever our parameters
                    // say (the sender decides by its own)
    AcceptAndSend,  // and ours go as LOCAL_MATCH too
};
// Send as well as accept when trust is on (pml_dr_trust_local) and nothing
// asks for the full protocol on those paths: no fault is injected into them
// (in-process copies get none), no payload checksum is forced
// (pml_dr_csum=always: the user distrusts even memory).
LocalTrust local_trust(const Config& config, std::span<const PathMedium> paths) noexcept;

}  // namespace pml::dr::core
