// Socket helpers for the TCP components (POSIX; no Open MPI): the machine's
// interfaces, socket addresses, a listener on a port range, non-blocking
// connects and the per-connection socket options.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <vector>

#include "netaddr.hpp"
#include "result.hpp"

namespace plugin::common::net {

using plugin::common::IpAddr;
using plugin::common::LocalIf;
using plugin::common::Result;

// Every IPv4/IPv6 address of every interface that is up.
std::vector<LocalIf> list_interfaces();

struct SockAddr {
    sockaddr_storage ss{};
    socklen_t len = 0;
    [[nodiscard]] const sockaddr* get() const noexcept {
        return reinterpret_cast<const sockaddr*>(&ss);
    }
};
SockAddr to_sockaddr(const IpAddr& ip, std::uint16_t port) noexcept;
IpAddr from_sockaddr(const sockaddr_storage& ss) noexcept;
std::uint16_t port_of(const sockaddr_storage& ss) noexcept;

struct SocketOptions {
    int sndbuf = 0;
    int rcvbuf = 0;
    bool nodelay = true;
    unsigned user_timeout_ms = 0;  // 0: kernel default
    // Keepalive probes on an idle connection (used when user_timeout_ms is
    // 0): first after keepalive_idle_s, then every keepalive_intvl_s, the
    // connection breaks after keepalive_probes unanswered. 0: off.
    unsigned keepalive_idle_s = 0;
    unsigned keepalive_intvl_s = 0;
    unsigned keepalive_probes = 0;
};

// A non-blocking listening socket on the wildcard address of `family`
// (4 or 6), on the first free port of [port_min, port_min + range) or any
// port when port_min is 0. Returns the fd; *port gets the bound port.
Result<int> listen_on(std::uint8_t family, std::uint16_t port_min, std::uint16_t range,
                      const SocketOptions& opts, std::uint16_t* port);

// Starts a non-blocking connect from `local` (the module's address: the
// traffic leaves through its interface) to `remote`. The fd is ready for
// writing when the connect completed; connect_result() says how.
Result<int> start_connect(const IpAddr& local, const SockAddr& remote, const SocketOptions& opts);
// 0 when the connect succeeded, else the errno it failed with.
int connect_result(int fd) noexcept;

// Options of a connected socket (either side): non-blocking, no-delay,
// buffers, close-on-exec, keepalive and user timeout.
void apply_options(int fd, const SocketOptions& opts) noexcept;

}  // namespace plugin::common::net
