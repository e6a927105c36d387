#include "sockets.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

namespace plugin::common::net {

using plugin::common::ErrorCode;
using plugin::common::fail;

namespace {

std::uint8_t prefix_of(const sockaddr* mask) noexcept {
    if (mask == nullptr)
        return 0;
    int bits = 0;
    if (mask->sa_family == AF_INET) {
        const auto* m = reinterpret_cast<const sockaddr_in*>(mask);
        bits = std::popcount(static_cast<std::uint32_t>(m->sin_addr.s_addr));
    } else if (mask->sa_family == AF_INET6) {
        const auto* m = reinterpret_cast<const sockaddr_in6*>(mask);
        for (const std::uint8_t b : m->sin6_addr.s6_addr)
            bits += std::popcount(b);
    }
    return static_cast<std::uint8_t>(bits);
}

void set_int(int fd, int level, int name, int value) noexcept {
    (void)::setsockopt(fd, level, name, &value, sizeof value);
}

void set_nonblocking(int fd) noexcept {
    const int flags = ::fcntl(fd, F_GETFL, 0);
    (void)::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

}  // namespace

std::vector<LocalIf> list_interfaces() {
    std::vector<LocalIf> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0)
        return out;
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0)
            continue;
        const int fam = i->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        sockaddr_storage ss{};
        std::memcpy(&ss, i->ifa_addr, fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
        out.push_back({i->ifa_name, from_sockaddr(ss), prefix_of(i->ifa_netmask)});
    }
    ::freeifaddrs(list);
    return out;
}

SockAddr to_sockaddr(const IpAddr& ip, std::uint16_t port) noexcept {
    SockAddr a;
    if (ip.family == 4) {
        auto* s = reinterpret_cast<sockaddr_in*>(&a.ss);
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        std::memcpy(&s->sin_addr, ip.bytes.data(), 4);
        a.len = sizeof(sockaddr_in);
    } else {
        auto* s = reinterpret_cast<sockaddr_in6*>(&a.ss);
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        std::memcpy(&s->sin6_addr, ip.bytes.data(), 16);
        a.len = sizeof(sockaddr_in6);
    }
    return a;
}

IpAddr from_sockaddr(const sockaddr_storage& ss) noexcept {
    IpAddr ip;
    if (ss.ss_family == AF_INET) {
        ip.family = 4;
        std::memcpy(ip.bytes.data(), &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, 4);
    } else {
        const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&ss);
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            ip.family = 4;
            std::memcpy(ip.bytes.data(), s6->sin6_addr.s6_addr + 12, 4);
        } else {
            ip.family = 6;
            std::memcpy(ip.bytes.data(), &s6->sin6_addr, 16);
        }
    }
    return ip;
}

std::uint16_t port_of(const sockaddr_storage& ss) noexcept {
    if (ss.ss_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
}

void apply_options(int fd, const SocketOptions& opts) noexcept {
    set_nonblocking(fd);
    if (opts.nodelay)
        set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
    if (opts.sndbuf > 0)
        set_int(fd, SOL_SOCKET, SO_SNDBUF, opts.sndbuf);
    if (opts.rcvbuf > 0)
        set_int(fd, SOL_SOCKET, SO_RCVBUF, opts.rcvbuf);
    if (opts.user_timeout_ms > 0) {
        // Unacknowledged data older than this, or an idle link whose
        // keepalive probes go unanswered for as long, breaks the connection:
        // a cut cable becomes an error the PML hears about, not a hang.
        set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, static_cast<int>(opts.user_timeout_ms));
        set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
        const int idle = std::max(1, static_cast<int>(opts.user_timeout_ms / 2000));
        set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, idle);
        set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, std::max(1, idle / 2));
        set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, 3);
    } else if (opts.keepalive_idle_s > 0) {
        set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
        set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, static_cast<int>(opts.keepalive_idle_s));
        set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, static_cast<int>(opts.keepalive_intvl_s));
        set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, static_cast<int>(opts.keepalive_probes));
    }
}

Result<int> listen_on(std::uint8_t family, std::uint16_t port_min, std::uint16_t range,
                      const SocketOptions& opts, std::uint16_t* port) {
    const int fd = ::socket(family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(ErrorCode::Unsupported, "socket() failed for this address family");
    if (family == 6)
        set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
    // Accepted sockets inherit the buffer sizes, which must be set before listen().
    if (opts.sndbuf > 0)
        set_int(fd, SOL_SOCKET, SO_SNDBUF, opts.sndbuf);
    if (opts.rcvbuf > 0)
        set_int(fd, SOL_SOCKET, SO_RCVBUF, opts.rcvbuf);
    IpAddr any;
    any.family = family;
    const unsigned tries = port_min == 0 ? 1u : std::max<unsigned>(range, 1u);
    bool bound = false;
    for (unsigned i = 0; i < tries && !bound; ++i) {
        const auto p = static_cast<std::uint16_t>(port_min == 0 ? 0 : port_min + i);
        const SockAddr a = to_sockaddr(any, p);
        bound = ::bind(fd, a.get(), a.len) == 0;
    }
    if (!bound || ::listen(fd, SOMAXCONN) != 0) {
        ::close(fd);
        return fail(ErrorCode::NoResources, "no free port in the configured range");
    }
    set_nonblocking(fd);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    *port = port_of(ss);
    return fd;
}

Result<int> start_connect(const IpAddr& local, const SockAddr& remote, const SocketOptions& opts) {
    const int fd = ::socket(remote.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(ErrorCode::NoResources, "socket() failed");
    apply_options(fd, opts);
    const SockAddr src = to_sockaddr(local, 0);
    if (::bind(fd, src.get(), src.len) != 0 ||
        (::connect(fd, remote.get(), remote.len) != 0 && errno != EINPROGRESS)) {
        ::close(fd);
        return fail(ErrorCode::Unreachable, "connect failed at once");
    }
    return fd;
}

int connect_result(int fd) noexcept {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return errno;
    return err;
}

}  // namespace plugin::common::net
