// Unix-domain stream sockets for the server's listener and the client's
// connection, and the peer credentials (SO_PEERCRED) the policy in
// core/peer.hpp judges.
#pragma once
#include <optional>
#include <string>

#include "peer.hpp"

namespace plugin::pmix::mca {

// A fresh directory `<base>/dr-pmix.XXXXXX`, mode 0700 whatever the umask;
// "" and errno on error.
std::string uds_private_dir(const std::string& base);
// Listening socket at `path`, mode 0600 before it listens (no umask games:
// until listen() nobody can connect), non-blocking; -1 and errno on error.
int uds_listen(const std::string& path);
// Blocking connection to `path`; -1 and errno on error.
int uds_connect(const std::string& path);
// Accepts one connection, non-blocking; -1 when none is waiting.
int uds_accept(int listener);
// The connected peer's credentials as of its connect()/listen(), or nothing.
std::optional<core::PeerCred> uds_peer_cred(int fd);
// Whether a path fits into sun_path.
bool uds_path_fits(const std::string& path);

}  // namespace plugin::pmix::mca
