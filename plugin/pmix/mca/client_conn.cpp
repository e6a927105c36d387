#include "client_conn.hpp"

#include <unistd.h>

#include <condition_variable>

#include "peer.hpp"
#include "pmix.hpp"
#include "unix_socket.hpp"

namespace plugin::pmix::mca::client {

namespace net = plugin::common::net;

Answer Connection::open(const std::string& path, const core::HelloBody& hello, std::size_t max_msg,
                        EventFn on_event) {
    fd_ = net::unix_connect(path);
    if (fd_ < 0)
        return {OPAL_ERR_UNREACH, {}};
    // Nothing of ours (name, secret) goes to a server of another user.
    const auto cred = net::unix_peer_cred(fd_);
    const auto verdict = core::check_peer(cred, static_cast<std::uint32_t>(geteuid()),
                                          state().params.check_peer_uid);
    if (!core::accepted(verdict)) {
        logf(state().log, LogLevel::Error, "refusing the pmix dr server at %s (uid %ld): %s",
             path.c_str(), cred ? static_cast<long>(cred->uid) : -1L, core::verdict_name(verdict));
        net::close_fd(fd_);
        return {OPAL_ERR_UNREACH, {}};
    }
    if (!wake_.open()) {
        net::close_fd(fd_);
        return {OPAL_ERR_OUT_OF_RESOURCE, {}};
    }
    in_ = core::FrameReader(max_msg);
    on_event_ = std::move(on_event);
    alive_ = true;
    stop_ = false;
    io_ = std::thread([this] { loop(); });
    Answer a = call(core::MsgType::Hello, core::encode(hello));
    if (a.status != OPAL_SUCCESS)
        close();
    return a;
}

void Connection::close() {
    if (fd_ < 0)
        return;
    stop_ = true;
    wake_.wake();
    if (io_.joinable()) {
        if (on_io_thread())
            io_.detach();
        else
            io_.join();
    }
    net::close_fd(fd_);
    wake_.close();
    alive_ = false;
    fail_all(OPAL_ERR_COMM_FAILURE);
}

bool Connection::write_all(const std::vector<std::uint8_t>& bytes) {
    std::lock_guard lock(write_mu_);
    return net::send_all(fd_, bytes);
}

void Connection::request(core::MsgType type, std::span<const std::uint8_t> payload, Done done) {
    std::unique_lock lock(pending_mu_);
    if (!alive_) {
        lock.unlock();
        done(OPAL_ERR_COMM_FAILURE, {});
        return;
    }
    const std::uint32_t req = next_req_++;
    if (next_req_ == 0)
        next_req_ = 1;
    pending_.emplace(req, std::move(done));
    lock.unlock();
    if (write_all(core::encode_message(type, req, payload)))
        return;
    Done failed;
    lock.lock();
    if (auto it = pending_.find(req); it != pending_.end()) {
        failed = std::move(it->second);
        pending_.erase(it);
    }
    lock.unlock();
    if (failed)
        failed(OPAL_ERR_COMM_FAILURE, {});
}

int Connection::send_only(core::MsgType type, std::span<const std::uint8_t> payload) {
    if (!alive_)
        return OPAL_ERR_COMM_FAILURE;
    return write_all(core::encode_message(type, 0, payload)) ? OPAL_SUCCESS : OPAL_ERR_COMM_FAILURE;
}

Answer Connection::call(core::MsgType type, std::span<const std::uint8_t> payload, int timeout_ms) {
    struct Wait {
        std::mutex m;
        std::condition_variable cv;
        bool done = false;
        Answer a;
    };
    auto w = std::make_shared<Wait>();
    request(type, payload, [w](int status, std::span<const std::uint8_t> body) {
        std::lock_guard lock(w->m);
        w->a.status = status;
        w->a.body.assign(body.begin(), body.end());
        w->done = true;
        w->cv.notify_all();
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    if (on_io_thread()) {
        // Nobody else reads the socket: do it here until the reply is in.
        while (alive_) {
            {
                std::lock_guard lock(w->m);
                if (w->done)
                    break;
            }
            if (timeout_ms >= 0 && std::chrono::steady_clock::now() > deadline)
                return {OPAL_ERR_TIMEOUT, {}};
            pump(50);
        }
    }
    std::unique_lock lock(w->m);
    if (timeout_ms < 0)
        w->cv.wait(lock, [&] { return w->done; });
    else if (!w->cv.wait_until(lock, deadline, [&] { return w->done; }))
        return {OPAL_ERR_TIMEOUT, {}};
    return std::move(w->a);
}

void Connection::fail_all(int status) {
    std::map<std::uint32_t, Done> victims;
    {
        std::lock_guard lock(pending_mu_);
        victims.swap(pending_);
    }
    for (auto& [req, d] : victims)
        d(status, {});
}

void Connection::dispatch(const core::FrameReader::Message& m) {
    if (m.header.type == core::MsgType::Event) {
        auto ev = core::decode_event(m.payload);
        if (ev && on_event_)
            on_event_(*ev);
        else if (!ev)
            logf(state().log, LogLevel::Warn, "dropped an undecodable event");
        return;
    }
    if (m.header.type != core::MsgType::Reply)
        return;
    auto r = core::decode_reply(m.payload);
    Done d;
    {
        std::lock_guard lock(pending_mu_);
        auto it = pending_.find(m.header.req);
        if (it == pending_.end())
            return;  // a reply nobody waits for (timed out)
        d = std::move(it->second);
        pending_.erase(it);
    }
    if (r)
        d(r->status, r->body);
    else
        d(OPAL_ERR_UNPACK_FAILURE, {});
}

void Connection::pump(int wait_ms) {
    if (!net::wait_ready(fd_, /*write=*/false, wake_.read_fd(), wait_ms))
        return;
    std::uint8_t buf[65536];
    const net::IoResult r = net::read_some(fd_, buf);
    if (r.status == net::IoStatus::Again)
        return;
    if (r.status == net::IoStatus::Closed) {
        if (!stop_)
            logf(state().log, LogLevel::Error, "lost the connection to the pmix dr server");
        alive_ = false;
        fail_all(OPAL_ERR_COMM_FAILURE);
        return;
    }
    in_.feed({buf, r.bytes});
    for (;;) {
        auto m = in_.next();
        if (!m) {
            logf(state().log, LogLevel::Error, "bad message from the server: %s",
                 std::string(m.error().message).c_str());
            alive_ = false;
            fail_all(OPAL_ERR_UNPACK_FAILURE);
            return;
        }
        if (!m->has_value())
            return;
        dispatch(**m);
    }
}

void Connection::loop() {
    io_id_ = std::this_thread::get_id();
    while (!stop_ && alive_)
        pump(-1);
}

}  // namespace plugin::pmix::mca::client
