// The server's sockets on the launcher's event base: the listener, one
// connection per client (non-blocking reads into a FrameReader, a write
// queue), and a once-a-second tick that expires parked gets.
#include <cerrno>
#include <chrono>
#include <sys/socket.h>
#include <unistd.h>

#include "server.hpp"
#include "uds.hpp"

namespace plugin::pmix::mca::server {

namespace {

void close_conn(std::uint64_t id) {
    Server& s = srv();
    auto it = s.conns.find(id);
    if (it == s.conns.end())
        return;
    Conn& c = *it->second;
    opal_event_del(&c.read_ev);
    if (c.write_armed)
        opal_event_del(&c.write_ev);
    close(c.fd);
    const bool lost = c.identified && !c.finalized;
    const ProcName proc = c.proc;
    s.conns.erase(it);
    if (lost)
        client_lost(proc);
}

// Writes as much of the queue as the socket takes; false on a dead socket.
bool flush(Conn& c) {
    while (!c.out.empty()) {
        const auto& front = c.out.front();
        const ssize_t n = ::send(c.fd, front.data() + c.out_offset, front.size() - c.out_offset,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            return false;
        }
        c.out_offset += static_cast<std::size_t>(n);
        if (c.out_offset == front.size()) {
            c.out.pop_front();
            c.out_offset = 0;
        }
    }
    const bool want = !c.out.empty();
    if (want && !c.write_armed)
        opal_event_add(&c.write_ev, nullptr);
    else if (!want && c.write_armed)
        opal_event_del(&c.write_ev);
    c.write_armed = want;
    return true;
}

// Event callbacks get the connection itself (its events are deleted before
// it is freed) and look it up by id again after anything that may close it.
void on_write(int, short, void* arg) {
    const std::uint64_t id = static_cast<Conn*>(arg)->id;
    Conn* c = conn(id);
    if (c != nullptr && !flush(*c))
        close_conn(id);
}

void on_read(int fd, short, void* arg) {
    const std::uint64_t id = static_cast<Conn*>(arg)->id;
    Server& s = srv();
    std::uint8_t buf[65536];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            close_conn(id);
            return;
        }
        Conn* c = conn(id);
        if (c == nullptr)
            return;
        c->in.feed({buf, static_cast<std::size_t>(n)});
        for (;;) {
            auto m = c->in.next();
            if (!m) {
                ++s.counters.bad_messages;
                logf(state().log, LogLevel::Warn, "closing a client connection: %s",
                     std::string(m.error().message).c_str());
                close_conn(id);
                return;
            }
            if (!m->has_value())
                break;
            if (!handle(*c, **m)) {
                close_conn(id);
                return;
            }
            c = conn(id);  // handlers may close other connections, never this one
            if (c == nullptr)
                return;
        }
    }
}

// Connections that have not said Hello yet, at most: a caller that connects
// and stays silent cannot pile up sockets; the oldest such one goes first.
constexpr std::size_t kMaxUnidentified = 64;

void limit_unidentified() {
    Server& s = srv();
    std::size_t n = 0;
    std::uint64_t oldest = 0;
    for (const auto& [id, c] : s.conns) {
        if (!c->identified && n++ == 0)
            oldest = id;
    }
    if (n < kMaxUnidentified)
        return;
    ++s.counters.refused;
    logf(state().log, LogLevel::Warn, "too many connections without hello: closing the oldest");
    close_conn(oldest);
}

void on_accept(int fd, short, void*) {
    Server& s = srv();
    for (;;) {
        const int cfd = uds_accept(fd);
        if (cfd < 0)
            return;
        limit_unidentified();
        auto c = std::make_unique<Conn>(state().max_msg());
        c->id = s.next_conn++;
        c->fd = cfd;
        void* arg = c.get();
        opal_event_set(opal_pmix_base.evbase, &c->read_ev, cfd, OPAL_EV_READ | OPAL_EV_PERSIST,
                       on_read, arg);
        opal_event_set(opal_pmix_base.evbase, &c->write_ev, cfd, OPAL_EV_WRITE | OPAL_EV_PERSIST,
                       on_write, arg);
        opal_event_add(&c->read_ev, nullptr);
        ++s.counters.accepted;
        s.conns.emplace(c->id, std::move(c));
    }
}

void on_tick(int, short, void*) {
    expire_waits();
    timeval tv{1, 0};
    opal_event_add(&srv().tick_ev, &tv);
}

}  // namespace

Server& srv() noexcept {
    static Server s;
    return s;
}

std::uint64_t now_seconds() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
}

Conn* conn(std::uint64_t id) {
    auto it = srv().conns.find(id);
    return it == srv().conns.end() ? nullptr : it->second.get();
}

int start_listener(const std::string& tmpdir) {
    Server& s = srv();
    std::string path = tmpdir + "/dr-pmix." + std::to_string(getpid());
    if (tmpdir.empty() || !uds_path_fits(path))
        path = "@dr-pmix." + std::to_string(geteuid()) + "." + std::to_string(getpid());
    s.listen_fd = uds_listen(path);
    if (s.listen_fd < 0) {
        logf(state().log, LogLevel::Error, "cannot listen on %s: %s", path.c_str(),
             std::strerror(errno));
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    s.path = path;
    opal_event_set(opal_pmix_base.evbase, &s.listen_ev, s.listen_fd, OPAL_EV_READ | OPAL_EV_PERSIST,
                   on_accept, nullptr);
    opal_event_add(&s.listen_ev, nullptr);
    opal_event_evtimer_set(opal_pmix_base.evbase, &s.tick_ev, on_tick, nullptr);
    timeval tv{1, 0};
    opal_event_add(&s.tick_ev, &tv);
    logf(state().log, LogLevel::Info, "listening on %s", path.c_str());
    return OPAL_SUCCESS;
}

void stop_all() {
    Server& s = srv();
    for (auto& [id, c] : s.conns) {
        opal_event_del(&c->read_ev);
        if (c->write_armed)
            opal_event_del(&c->write_ev);
        close(c->fd);
    }
    s.conns.clear();
    if (s.listen_fd >= 0) {
        opal_event_del(&s.listen_ev);
        opal_event_del(&s.tick_ev);
        close(s.listen_fd);
        s.listen_fd = -1;
        if (!s.path.empty() && s.path.front() != '@')
            unlink(s.path.c_str());
    }
}

void send_to(Conn& c, core::MsgType type, std::uint32_t req,
             std::span<const std::uint8_t> payload) {
    c.out.push_back(core::encode_message(type, req, payload));
    if (!c.write_armed && !flush(c)) {
        // The read side sees the failure and closes; keep nothing queued.
        c.out.clear();
        c.out_offset = 0;
    }
}

void reply(std::uint64_t token, int status, std::span<const std::uint8_t> body) {
    Conn* c = conn(token >> 32);
    if (c == nullptr)
        return;  // the client is gone
    const auto payload = core::encode_reply(status, body);
    send_to(*c, core::MsgType::Reply, static_cast<std::uint32_t>(token), payload);
}

}  // namespace plugin::pmix::mca::server
