// Who may talk on the pmix dr socket: the policy applied to the peer's
// credentials (SO_PEERCRED, read by the glue) on both ends of a connection,
// before a single byte of it is read. Sans I/O.
//
// Policy: a peer must run under the same effective uid as we do. Nothing
// else is heard: root is accepted only by a server that itself runs as root
// (a root-run tool has no business in a user's job, and a user's job gains
// nothing by trusting it); the gid is not checked (the same user in another
// group is still the same user, and the socket's file mode already shuts
// everyone else out); the pid only goes into the log (0 when the peer lives
// in a pid namespace we cannot see). Missing credentials are a refusal.
// The check can be turned off for debugging (pmix_dr_check_peer_uid).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "peer_cred.hpp"

namespace plugin::pmix::core {

using plugin::common::PeerCred;

enum class PeerVerdict : std::uint8_t {
    Accepted,       // same uid
    Unchecked,      // the check is turned off: accepted unseen
    NoCredentials,  // the kernel gave none: refused
    OtherUser,      // another uid (root included, unless we are root): refused
};

// Whether `peer` (nullopt: its credentials could not be read) may talk to a
// process running as `own_uid`.
PeerVerdict check_peer(const std::optional<PeerCred>& peer, std::uint32_t own_uid,
                       bool enforce) noexcept;

inline bool accepted(PeerVerdict v) noexcept {
    return v == PeerVerdict::Accepted || v == PeerVerdict::Unchecked;
}

// For the log: "same user", "another user", ...
const char* verdict_name(PeerVerdict v) noexcept;

// Until its Hello is accepted a connection is held to one small message:
// a header announcing more than this is refused at once (a Hello's payload
// is 16 bytes), so a stranger cannot make the server buffer max_msg_size.
inline constexpr std::size_t kMaxHelloPayload = 64;

}  // namespace plugin::pmix::core
