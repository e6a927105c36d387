#include "unix_socket.hpp"

#include "stream_io.hpp"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace plugin::common::net {

namespace {

bool make_addr(const std::string& path, sockaddr_un& addr, socklen_t& len) {
    std::memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (!unix_path_fits(path) || path.empty())
        return false;
    std::memcpy(addr.sun_path, path.data(), path.size());
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
    return true;
}

}  // namespace

bool unix_path_fits(const std::string& path) {
    return path.size() < sizeof(sockaddr_un::sun_path);
}

std::string unix_private_dir(const std::string& base, const std::string& prefix) {
    std::string t = base + "/" + prefix + ".XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr)
        return {};
    // mkdtemp asks for 0700 minus the umask: exactly 0700, never more.
    if (chmod(buf.data(), 0700) != 0) {
        const int err = errno;
        rmdir(buf.data());
        errno = err;
        return {};
    }
    return buf.data();
}

int unix_listen(const std::string& path) {
    sockaddr_un addr;
    socklen_t len = 0;
    if (!make_addr(path, addr, len)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    // The file bind() creates takes the umask's mode, but a socket that does
    // not listen yet refuses every connect(): owner-only before listen().
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || chmod(path.c_str(), 0600) != 0 ||
        listen(fd, 128) != 0) {
        const int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

int unix_connect(const std::string& path) {
    sockaddr_un addr;
    socklen_t len = 0;
    if (!make_addr(path, addr, len)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc;
    do {
        rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        const int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

int unix_listen_privately(std::initializer_list<std::string> bases, const std::string& prefix,
                          const std::string& name, std::string& dir, std::string& path) {
    int err = ENOENT;
    for (const std::string& base : bases) {
        if (base.empty() || !unix_path_fits(base + "/" + prefix + ".XXXXXX/" + name))
            continue;
        dir = unix_private_dir(base, prefix);
        if (dir.empty()) {
            err = errno;
            continue;
        }
        path = dir + "/" + name;
        const int fd = unix_listen(path);
        if (fd >= 0)
            return fd;
        err = errno;
        rmdir(dir.c_str());
    }
    errno = err;
    return -1;
}

void unix_unlisten(int& fd, const std::string& path, const std::string& dir) {
    close_fd(fd);
    unlink(path.c_str());
    rmdir(dir.c_str());
}

std::optional<PeerCred> unix_peer_cred(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
        return std::nullopt;
    return PeerCred{cred.uid, cred.gid, cred.pid};
}

}  // namespace plugin::common::net
