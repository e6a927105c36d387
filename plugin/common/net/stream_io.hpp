// Non-blocking stream socket I/O for every component of ours (TCP and Unix
// sockets): the only place besides sockets.cpp and unix_socket.cpp that
// makes socket system calls. Each call does what the kernel allows now and
// says how it went; EINTR is retried here, SIGPIPE never raised. The
// components' glue keeps its wire formats and policies and calls these.
#pragma once
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "send_queue.hpp"

namespace plugin::common::net {

using plugin::common::ByteRange;
using plugin::common::SendQueue;

// How one read or write went.
enum class IoStatus : std::uint8_t {
    Moved,   // `bytes` moved (may be fewer than offered)
    Again,   // nothing now (the socket buffer is empty or full)
    Closed,  // the peer closed (a read of 0 bytes) or the socket failed (`error`)
};

struct IoResult {
    IoStatus status = IoStatus::Again;
    std::size_t bytes = 0;
    int error = 0;  // errno when the socket failed; 0 on an orderly close
};

// Reads what the kernel has into `first`, then `second` (one recvmsg; never
// blocks, even on a blocking socket).
IoResult read_some(int fd, std::span<std::uint8_t> first,
                   std::span<std::uint8_t> second = {}) noexcept;

// Writes as much of `ranges` as the socket takes now (one sendmsg, at most
// kMaxRanges ranges).
inline constexpr std::size_t kMaxRanges = 64;
IoResult write_ranges(int fd, std::span<const ByteRange> ranges) noexcept;
inline IoResult send_some(int fd, std::span<const std::uint8_t> bytes) noexcept {
    const ByteRange r{bytes.data(), bytes.size()};
    return write_ranges(fd, std::span(&r, 1));
}

// How a queue's flush ended.
enum class FlushStatus : std::uint8_t { Empty, Full, Failed };
// Writes the queue's frames while the socket takes them; `done` gets the
// cookies of the frames that left whole, in order.
FlushStatus flush_queue(int fd, SendQueue& queue, std::vector<void*>& done) noexcept;

// Writes all of `bytes` to a blocking socket; false when it failed.
bool send_all(int fd, std::span<const std::uint8_t> bytes) noexcept;

// One waiting connection from a listener, non-blocking and close-on-exec
// (*from gets the caller's address when given); -1 when none is waiting or
// the accept failed (the listener reports it again).
int accept_one(int listener, sockaddr_storage* from = nullptr) noexcept;

// The address a connected socket is bound to here.
sockaddr_storage local_address(int fd) noexcept;

// Blocks until `fd` is ready for reading (or for writing when `write`),
// `wake_fd` (when >= 0) is readable, or `timeout_ms` passed (-1: no limit).
// True when `fd` itself is ready.
bool wait_ready(int fd, bool write, int wake_fd, int timeout_ms) noexcept;

// Says the last bytes of this side's stream went (the peer reads EOF).
void shutdown_write(int fd) noexcept;

// Closes `fd` (when >= 0) and sets it to -1.
void close_fd(int& fd) noexcept;

// A self-pipe that wakes a thread blocked in wait_ready.
class WakePipe {
  public:
    WakePipe() = default;
    WakePipe(const WakePipe&) = delete;
    WakePipe& operator=(const WakePipe&) = delete;
    ~WakePipe() { close(); }
    bool open() noexcept;
    void wake() noexcept;
    void close() noexcept;
    [[nodiscard]] int read_fd() const noexcept { return fds_[0]; }

  private:
    int fds_[2] = {-1, -1};
};

}  // namespace plugin::common::net
