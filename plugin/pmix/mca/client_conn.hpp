// The client's connection to its server: a private I/O thread reads replies
// and events; any thread sends. Requests complete through callbacks run on
// the I/O thread, or block in call() (which pumps the socket itself when it
// is called from the I/O thread, e.g. inside an event handler).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "stream_io.hpp"
#include "wire.hpp"

namespace plugin::pmix::mca::client {

namespace core = plugin::pmix::core;

struct Answer {
    int status = 0;
    std::vector<std::uint8_t> body;
};

class Connection {
  public:
    using Done = std::function<void(int status, std::span<const std::uint8_t> body)>;
    using EventFn = std::function<void(const core::EventBody&)>;

    // Connects and says Hello; the reply's body is the job's records.
    Answer open(const std::string& path, const core::HelloBody& hello, std::size_t max_msg,
                EventFn on_event);
    // Stops the thread and closes the socket.
    void close();
    bool is_open() const noexcept { return fd_ >= 0 && alive_; }

    // Sends a request; `done` runs once with the reply (or an error status
    // when the connection is lost).
    void request(core::MsgType type, std::span<const std::uint8_t> payload, Done done);
    // Sends a message that has no reply.
    int send_only(core::MsgType type, std::span<const std::uint8_t> payload);
    // Sends a request and waits for its reply; timeout_ms < 0 waits forever.
    Answer call(core::MsgType type, std::span<const std::uint8_t> payload, int timeout_ms = -1);
    bool on_io_thread() const noexcept { return std::this_thread::get_id() == io_id_; }

  private:
    bool write_all(const std::vector<std::uint8_t>& bytes);
    // Reads whatever is there (waiting up to wait_ms) and dispatches it.
    void pump(int wait_ms);
    void dispatch(const core::FrameReader::Message& m);
    void fail_all(int status);
    void loop();

    int fd_ = -1;
    plugin::common::net::WakePipe wake_;  // stops the I/O thread
    std::atomic<bool> alive_{false};
    std::atomic<bool> stop_{false};
    std::thread io_;
    std::thread::id io_id_{};
    std::mutex write_mu_;
    std::mutex pending_mu_;
    std::map<std::uint32_t, Done> pending_;
    std::uint32_t next_req_ = 1;
    core::FrameReader in_{0};
    EventFn on_event_;
};

}  // namespace plugin::pmix::mca::client
