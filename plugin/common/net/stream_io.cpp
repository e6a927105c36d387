#include "stream_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace plugin::common::net {

namespace {

IoResult failed_or_again(int err) noexcept {
    if (err == EAGAIN || err == EWOULDBLOCK)
        return {IoStatus::Again, 0, 0};
    return {IoStatus::Closed, 0, err};
}

}  // namespace

IoResult read_some(int fd, std::span<std::uint8_t> first, std::span<std::uint8_t> second) noexcept {
    std::array<iovec, 2> iov{};
    std::size_t count = 0;
    for (const auto& part : {first, second})
        if (!part.empty())
            iov[count++] = iovec{part.data(), part.size()};
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = count;
    for (;;) {
        const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
        if (n > 0)
            return {IoStatus::Moved, static_cast<std::size_t>(n), 0};
        if (n == 0)
            return {IoStatus::Closed, 0, 0};
        if (errno != EINTR)
            return failed_or_again(errno);
    }
}

IoResult write_ranges(int fd, std::span<const ByteRange> ranges) noexcept {
    std::array<iovec, kMaxRanges> iov;
    const std::size_t n = std::min(ranges.size(), kMaxRanges);
    for (std::size_t i = 0; i < n; ++i)
        iov[i] = iovec{const_cast<std::uint8_t*>(ranges[i].base), ranges[i].len};
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = n;
    for (;;) {
        const ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0)
            return {IoStatus::Moved, static_cast<std::size_t>(w), 0};
        if (errno != EINTR)
            return failed_or_again(errno);
    }
}

FlushStatus flush_queue(int fd, SendQueue& queue, std::vector<void*>& done) noexcept {
    std::array<ByteRange, 16> ranges;
    while (!queue.empty()) {
        const std::size_t n = queue.gather(ranges);
        std::size_t offered = 0;
        for (std::size_t i = 0; i < n; ++i)
            offered += ranges[i].len;
        const IoResult r = write_ranges(fd, std::span(ranges.data(), n));
        if (r.status == IoStatus::Again)
            return FlushStatus::Full;
        if (r.status == IoStatus::Closed)
            return FlushStatus::Failed;
        queue.advance(r.bytes, done);
        if (r.bytes < offered)
            return FlushStatus::Full;
    }
    return FlushStatus::Empty;
}

bool send_all(int fd, std::span<const std::uint8_t> bytes) noexcept {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        bytes = bytes.subspan(static_cast<std::size_t>(n));
    }
    return true;
}

int accept_one(int listener, sockaddr_storage* from) noexcept {
    sockaddr_storage ignored{};
    sockaddr_storage* addr = from != nullptr ? from : &ignored;
    for (;;) {
        socklen_t len = sizeof *addr;
        const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(addr), &len,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0 || errno != EINTR)
            return fd;
    }
}

sockaddr_storage local_address(int fd) noexcept {
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    (void)::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    return local;
}

bool wait_ready(int fd, bool write, int wake_fd, int timeout_ms) noexcept {
    std::array<pollfd, 2> fds = {pollfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0},
                                 pollfd{wake_fd, POLLIN, 0}};
    const int rc = ::poll(fds.data(), wake_fd >= 0 ? 2 : 1, timeout_ms);
    return rc > 0 && fds[0].revents != 0;
}

void shutdown_write(int fd) noexcept {
    (void)::shutdown(fd, SHUT_WR);
}

void close_fd(int& fd) noexcept {
    if (fd >= 0)
        (void)::close(fd);
    fd = -1;
}

bool WakePipe::open() noexcept {
    close();
    return ::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) == 0;
}

void WakePipe::wake() noexcept {
    const char b = 0;
    (void)!::write(fds_[1], &b, 1);
}

void WakePipe::close() noexcept {
    close_fd(fds_[0]);
    close_fd(fds_[1]);
}

}  // namespace plugin::common::net
