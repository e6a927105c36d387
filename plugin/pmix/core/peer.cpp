#include "peer.hpp"

namespace plugin::pmix::core {

PeerVerdict check_peer(const std::optional<PeerCred>& peer, std::uint32_t own_uid,
                       bool enforce) noexcept {
    if (!enforce)
        return PeerVerdict::Unchecked;
    if (!peer)
        return PeerVerdict::NoCredentials;
    // One rule, no exception for root: uid 0 passes only when we are uid 0.
    return peer->uid == own_uid ? PeerVerdict::Accepted : PeerVerdict::OtherUser;
}

const char* verdict_name(PeerVerdict v) noexcept {
    switch (v) {
        case PeerVerdict::Accepted:
            return "same user";
        case PeerVerdict::Unchecked:
            return "not checked (pmix_dr_check_peer_uid is off)";
        case PeerVerdict::NoCredentials:
            return "no peer credentials";
        case PeerVerdict::OtherUser:
            return "another user";
    }
    return "?";
}

}  // namespace plugin::pmix::core
