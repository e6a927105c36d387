// The server's sockets on the launcher's event base: the listener (in a
// private directory; peers of another user refused at accept), one
// connection per client (non-blocking reads into a FrameReader, a write
// queue), and a once-a-second tick that expires parked gets and closes
// connections that did not say Hello in time.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "deadline_timer.hpp"
#include "server.hpp"
#include "stream_io.hpp"
#include "unix_socket.hpp"

namespace plugin::pmix::mca::server {

namespace net = plugin::common::net;

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
    net::close_fd(c.fd);
    s.half_open.leave(id);
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
        const net::IoResult r = net::send_some(c.fd, std::span(front).subspan(c.out_offset));
        if (r.status == net::IoStatus::Again)
            break;
        if (r.status == net::IoStatus::Closed)
            return false;
        c.out_offset += r.bytes;
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
        const net::IoResult r = net::read_some(fd, buf);
        if (r.status == net::IoStatus::Again)
            return;
        if (r.status == net::IoStatus::Closed) {
            close_conn(id);
            return;
        }
        Conn* c = conn(id);
        if (c == nullptr)
            return;
        c->in.feed({buf, r.bytes});
        for (;;) {
            auto m = c->in.next();
            if (!m) {
                ++s.counters.bad_messages;
                logf(state().log, LogLevel::Warn, "closing a %s connection: %s",
                     c->identified ? "client" : "new", std::string(m.error().message).c_str());
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

// The peer's credentials decide before anything is read from it: a
// stranger is closed unanswered, counted and logged, and never takes one of
// the unidentified slots from a real client.
bool admit(int cfd, core::PeerCred& peer) {
    Server& s = srv();
    const auto cred = net::unix_peer_cred(cfd);
    const auto verdict = core::check_peer(cred, static_cast<std::uint32_t>(geteuid()),
                                          state().params.check_peer_uid);
    if (cred)
        peer = *cred;
    if (core::accepted(verdict))
        return true;
    ++s.counters.refused;
    ++s.counters.foreign;
    if (cred)
        logf(state().log, LogLevel::Warn,
             "refused a connection from uid %u gid %u pid %d: %s (we run as uid %u)", cred->uid,
             cred->gid, static_cast<int>(cred->pid), core::verdict_name(verdict),
             static_cast<unsigned>(geteuid()));
    else
        logf(state().log, LogLevel::Warn, "refused a connection: %s", core::verdict_name(verdict));
    return false;
}

// Accepts per wake-up, at most: a flood of connections (refused or not)
// cannot keep the event loop from the job's own clients.
constexpr int kAcceptBurst = 64;

void on_accept(int fd, short, void*) {
    Server& s = srv();
    for (int i = 0; i < kAcceptBurst; ++i) {
        int cfd = net::accept_one(fd);
        if (cfd < 0)
            return;
        ++s.counters.accepted;
        core::PeerCred peer;
        if (!admit(cfd, peer)) {
            net::close_fd(cfd);
            continue;
        }
        // Connections that have not said Hello yet are bounded: a caller
        // that connects and stays silent cannot pile up sockets; the oldest
        // such one goes first.
        if (const auto oldest = s.half_open.evict_for_new()) {
            ++s.counters.refused;
            logf(state().log, LogLevel::Warn,
                 "too many connections without hello: closing the oldest");
            close_conn(*oldest);
        }
        auto c = std::make_unique<Conn>();
        c->id = s.next_conn++;
        c->fd = cfd;
        c->peer = peer;
        s.half_open.enter(c->id, plugin::common::monotonic_now());
        void* arg = c.get();
        opal_event_set(opal_pmix_base.evbase, &c->read_ev, cfd, OPAL_EV_READ | OPAL_EV_PERSIST,
                       on_read, arg);
        opal_event_set(opal_pmix_base.evbase, &c->write_ev, cfd, OPAL_EV_WRITE | OPAL_EV_PERSIST,
                       on_write, arg);
        opal_event_add(&c->read_ev, nullptr);
        s.conns.emplace(c->id, std::move(c));
    }
}

// Connections still silent (or too slow) past the hello deadline.
void close_late_hellos() {
    Server& s = srv();
    for (const std::uint64_t id : s.half_open.overdue(plugin::common::monotonic_now())) {
        ++s.counters.refused;
        ++s.counters.hello_late;
        logf(state().log, LogLevel::Warn,
             "closing a connection (pid %d) that did not say hello within %u s",
             static_cast<int>(conn(id)->peer.pid), state().params.hello_timeout_s);
        close_conn(id);
    }
}

void on_tick(int, short, void*) {
    expire_waits();
    close_late_hellos();
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

namespace {}  // namespace

int start_listener(const std::string& tmpdir) {
    Server& s = srv();
    std::string dir;
    std::string path;
    // The socket lives in a directory of its own, mode 0700: nobody else can
    // even reach it. In the job's session directory when the path fits
    // sun_path, else in /tmp.
    s.listen_fd = net::unix_listen_privately({tmpdir, "/tmp"}, "dr-pmix", "pmix", dir, path);
    if (s.listen_fd < 0) {
        logf(state().log, LogLevel::Error, "cannot listen in %s or /tmp: %s", tmpdir.c_str(),
             std::strerror(errno));
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    s.dir = dir;
    s.path = path;
    s.half_open.set_timeout(plugin::common::Micros{state().params.hello_timeout_s} *
                            plugin::common::kSeconds);
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
        net::close_fd(c->fd);
    }
    s.conns.clear();
    s.half_open.clear();
    if (s.listen_fd >= 0) {
        opal_event_del(&s.listen_ev);
        opal_event_del(&s.tick_ev);
        net::unix_unlisten(s.listen_fd, s.path, s.dir);
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
