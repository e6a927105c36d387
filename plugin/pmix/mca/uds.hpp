// Unix-domain stream sockets for the server's listener and the client's
// connection. A path starting with '@' names an abstract socket (used when
// the session directory's path is too long for sun_path).
#pragma once
#include <cstdint>
#include <string>

namespace plugin::pmix::mca {

// Listening socket at `path`, owner-only, non-blocking; -1 and errno on error.
int uds_listen(const std::string& path);
// Blocking connection to `path`; -1 and errno on error.
int uds_connect(const std::string& path);
// Accepts one connection, non-blocking; -1 when none is waiting.
int uds_accept(int listener);
// The connected peer's uid (SO_PEERCRED), or -1.
long long uds_peer_uid(int fd);
// Whether a path fits into sun_path.
bool uds_path_fits(const std::string& path);

}  // namespace plugin::pmix::mca
