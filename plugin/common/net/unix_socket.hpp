// Unix-domain stream sockets (pmix dr's server listener and client
// connection) and the peer credentials (SO_PEERCRED) a policy can judge.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "peer_cred.hpp"

namespace plugin::common::net {

using plugin::common::PeerCred;

// A fresh directory `<base>/<prefix>.XXXXXX`, mode 0700 whatever the umask;
// "" and errno on error.
std::string unix_private_dir(const std::string& base, const std::string& prefix);
// Listening socket at `path`, mode 0600 before it listens (no umask games:
// until listen() nobody can connect), non-blocking; -1 and errno on error.
int unix_listen(const std::string& path);
// Blocking connection to `path`; -1 and errno on error.
int unix_connect(const std::string& path);
// The connected peer's credentials, or nothing.
std::optional<PeerCred> unix_peer_cred(int fd);
// Whether a path fits into sun_path.
bool unix_path_fits(const std::string& path);

// A listener at `<base>/<prefix>.XXXXXX/<name>` in a private directory (see
// unix_private_dir) under the first of `bases` where that works (an empty
// base or one whose path would not fit sun_path is skipped). *dir and *path
// get what was made; -1 and errno when no base worked.
int unix_listen_privately(std::initializer_list<std::string> bases, const std::string& prefix,
                          const std::string& name, std::string& dir, std::string& path);
// Closes the listener (fd set to -1) and removes its socket file and directory.
void unix_unlisten(int& fd, const std::string& path, const std::string& dir);

}  // namespace plugin::common::net
