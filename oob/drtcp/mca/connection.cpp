// oob drtcp: listeners, connections and peers on the ORTE event base.
// Socket events feed the core (stream decoder, peer state machine, send
// queue) and carry out what it decides.
#include <algorithm>
#include <array>

#include "admission.hpp"
#include "oob.hpp"
#include "route.hpp"
#include "sockets.hpp"
#include "stream_io.hpp"

namespace oob::drtcp::mca {

using plugin::common::ByteRange;
using plugin::common::logf;
using plugin::common::LogLevel;
using plugin::common::monotonic_now;
using plugin::common::SendQueue;
namespace net = plugin::common::net;

namespace {

// Connections closed inside their own event callbacks are freed on the next
// event (libevent must not see their events freed under it).
std::vector<std::unique_ptr<Connection>> g_graveyard;

void bury() {
    g_graveyard.clear();
}

net::SocketOptions socket_options() {
    const core::Config& c = state().config;
    net::SocketOptions o;
    o.nodelay = true;
    o.user_timeout_ms = c.user_timeout_ms;
    o.keepalive_idle_s = c.keepalive_time_s;
    o.keepalive_intvl_s = c.keepalive_intvl_s;
    o.keepalive_probes = c.keepalive_probes;
    return o;
}

void on_read(int fd, short, void* arg);
void on_write(int fd, short, void* arg);

void want_write(Connection& c) {
    if (!c.writing) {
        c.writing = true;
        opal_event_add(&c.write_ev, nullptr);
    }
}

// `p`: the peer an outgoing connection dials (nullptr: accepted).
Connection* new_connection(int fd, Peer* p) {
    State& s = state();
    core::LinkHandshake::Setup hs;
    hs.role = p != nullptr ? core::LinkRole::Initiator : core::LinkRole::Acceptor;
    hs.me = name_of(*ORTE_PROC_MY_NAME);
    hs.peer = p != nullptr ? p->name : ProcName{};
    hs.key = &s.key;
    hs.auth = s.config.auth;
    hs.reconnect = p != nullptr && p->ever_connected;
    auto c = std::make_unique<Connection>(s.config.max_msg_bytes, hs, s.log);
    c->fd = fd;
    c->outgoing = p != nullptr;
    opal_event_set(orte_event_base, &c->read_ev, fd, OPAL_EV_READ | OPAL_EV_PERSIST, on_read,
                   c.get());
    opal_event_set_priority(&c->read_ev, ORTE_MSG_PRI);
    opal_event_set(orte_event_base, &c->write_ev, fd, OPAL_EV_WRITE | OPAL_EV_PERSIST, on_write,
                   c.get());
    opal_event_set_priority(&c->write_ev, ORTE_MSG_PRI);
    opal_event_add(&c->read_ev, nullptr);
    Connection* raw = c.get();
    s.conns.push_back(std::move(c));
    return raw;
}

// One of our handshake frames (hs_frames[i]): nothing else goes before them.
void queue_frame(Connection& c, int i) {
    SendQueue::Frame f;
    f.pieces[0] = ByteRange{c.hs_frames[i], core::kHandshakeSize};
    f.count = 1;
    f.cookie = nullptr;
    (void)c.queue.push(f);
    want_write(c);
}

void push_message(Connection& c, OutMsg* m) {
    SendQueue::Frame f;
    f.pieces[0] = ByteRange{m->header, core::kHeaderSize};
    f.count = 1;
    if (m->len > 0)
        f.pieces[f.count++] = ByteRange{m->payload, m->len};
    f.cookie = m;
    (void)c.queue.push(f);
    want_write(c);
}

void flush_waiting(Peer& p) {
    while (!p.waiting.empty()) {
        push_message(*p.conn, p.waiting.front());
        p.waiting.pop_front();
    }
}

// The frames a closing connection still had: none of them reached the peer
// whole, so they wait for the next connection (in order, before newer ones).
void requeue_unsent(Connection& c, Peer& p) {
    std::vector<void*> left;
    c.queue.drain(left);
    for (std::size_t i = left.size(); i-- > 0;)
        if (left[i] != nullptr)
            p.waiting.push_front(static_cast<OutMsg*>(left[i]));
}

void start_connection(Peer& p);

void act(Peer& p, core::ConnectionFsm::Action a) {
    using A = core::ConnectionFsm::Action;
    switch (a) {
        case A::None:
        case A::Forget:  // not under oob's rules (a BYE leaves the peer Idle)
            break;
        case A::Connect:
            start_connection(p);
            break;
        case A::Flush:
            flush_waiting(p);
            mark_connected(p.name);
            break;
        case A::Lost:
            report_lost(p.name);
            if (!p.waiting.empty())
                act(p, p.fsm.on_send(monotonic_now()));
            break;
        case A::Unreachable:
            report_unreachable(p);
            break;
    }
    arm_timer();
}

// Closes `c` (after a protocol error, EOF, a refused handshake, a lost race
// or a failed attempt) and tells its peer's state machine.
// Stops a connection's events and closes its socket.
void shut(Connection& c) {
    opal_event_del(&c.read_ev);
    if (c.writing)
        opal_event_del(&c.write_ev);
    c.writing = false;
    net::close_fd(c.fd);
}

void close_connection(Connection* c) {
    State& s = state();
    shut(*c);
    s.half_open.leave(c);
    Peer* p = c->peer;
    const bool accepted_unopened = !c->outgoing && p == nullptr && c->hs.peer_claimed();
    const ProcName claimed = c->hs.peer();
    auto it = std::find_if(s.conns.begin(), s.conns.end(),
                           [c](const std::unique_ptr<Connection>& x) { return x.get() == c; });
    if (it != s.conns.end()) {
        g_graveyard.push_back(std::move(*it));
        s.conns.erase(it);
    }
    if (accepted_unopened) {
        // The peer's connection we had adopted (REPLY sent) closed before its
        // CONFIRM: messages held for it need a connection of their own.
        const auto pit = s.peers.find(key_of(claimed));
        if (pit != s.peers.end() && pit->second->pending == c) {
            Peer& q = *pit->second;
            q.pending = nullptr;
            q.fsm.on_unconfirmed();
            if (!q.waiting.empty())
                act(q, q.fsm.on_send(monotonic_now()));
        }
    }
    if (p == nullptr || p->conn != c)
        return;  // a connection its peer no longer uses
    p->conn = nullptr;
    requeue_unsent(*c, *p);
    if (p->fsm.connected())
        act(*p, p->fsm.on_connection_lost(false));
    else
        act(*p, p->fsm.on_attempt_failed(monotonic_now()));
}

void start_connection(Peer& p) {
    State& s = state();
    if (p.addrs.empty()) {
        act(p, p.fsm.on_attempt_failed(monotonic_now()));
        return;
    }
    const std::size_t i = (p.fsm.attempts() - 1) % p.addrs.size();
    plugin::common::IpAddr any;
    any.family = p.addrs[i].family;
    auto fd = net::start_connect(any, net::to_sockaddr(p.addrs[i], p.ports[i]), socket_options());
    if (!fd) {
        act(p, p.fsm.on_attempt_failed(monotonic_now()));
        return;
    }
    Connection* c = new_connection(*fd, &p);
    c->peer = &p;
    p.conn = c;
    if (!c->hs.hello(c->hs_frames[0])) {
        logf(s.log, LogLevel::Error, "no HELLO for %u.%u (the random source failed)", p.name.jobid,
             p.name.vpid);
        close_connection(c);
        return;
    }
    queue_frame(*c, 0);
    logf(s.log, LogLevel::Debug, "connecting to %u.%u at %s:%u (attempt %u)", p.name.jobid,
         p.name.vpid, p.addrs[i].str().c_str(), p.ports[i], p.fsm.attempts());
}

// Whether `from`, wanting to reach `to`, may connect to us: ORTE's own
// knowledge of the job's daemons, and our connections to it.
core::Admission admission(const ProcName& from, const ProcName& to, bool reconnect) {
    core::AdmissionFacts f;
    f.me = name_of(*ORTE_PROC_MY_NAME);
    f.num_daemons = static_cast<std::uint32_t>(orte_process_info.num_procs);
    if (ORTE_PROC_IS_HNP && from.jobid == f.me.jobid && core::is_real(from)) {
        orte_process_name_t n = orte_name(from);
        f.known = orte_get_proc_object(&n) != nullptr;
    }
    const auto it = state().peers.find(key_of(from));
    if (it != state().peers.end()) {
        const Peer& p = *it->second;
        f.connected = p.fsm.connected() && p.conn != nullptr;
        f.connecting = p.fsm.connecting();
    }
    return core::admit(f, from, to, reconnect);
}

class Admit final : public core::Admitter {
  public:
    core::Admission admit(const ProcName& from, const ProcName& to, bool reconnect) override {
        return admission(from, to, reconnect);
    }
};

// A connection refused during its handshake: counted by why, logged
// (verbosity 10); the caller closes it and nothing is answered.
void count_refusal(const Connection& c, const core::HandshakeFrame& f,
                   const plugin::common::Error& e) {
    State& s = state();
    const core::Refusal why = c.hs.refusal();
    switch (why) {
        case core::Refusal::Race:
            ++s.counters.races;
            logf(s.log, LogLevel::Debug, "closed a connection from %u.%u: %s", f.sender.jobid,
                 f.sender.vpid, core::to_string(c.hs.admission()).data());
            return;
        case core::Refusal::Identity:
            ++s.counters.refused;
            ++s.counters.refused_identity;
            break;
        case core::Refusal::Key:
            ++s.counters.refused;
            ++s.counters.refused_key;
            break;
        case core::Refusal::None:
        case core::Refusal::Protocol:
            ++s.counters.decode_errors;
            break;
    }
    const std::string_view detail =
        why == core::Refusal::Identity ? core::to_string(c.hs.admission()) : e.message;
    logf(s.log, LogLevel::Warn, "refused a connection (%s %u.%u -> %u.%u): %.*s",
         core::to_string(f.type).data(), f.sender.jobid, f.sender.vpid, f.receiver.jobid,
         f.receiver.vpid, static_cast<int>(detail.size()), detail.data());
}

// What the decoder of one connection finds.
class Sink final : public core::StreamSink {
  public:
    explicit Sink(Connection& c) : c_(c) {}
    HsStep on_handshake(const core::HandshakeFrame& f) override {
        Admit admit;
        // Initiator: CONFIRM into the second slot (HELLO may still be
        // queued in the first); acceptor: REPLY into the first.
        std::uint8_t* out = c_.hs_frames[c_.outgoing ? 1 : 0];
        auto step = c_.hs.on_frame(f, admit, {out, core::kHandshakeSize});
        if (!step) {
            count_refusal(c_, f, step.error());
            return HsStep::Refuse;
        }
        if (step->send && !c_.outgoing && !claim())
            return HsStep::Refuse;
        if (step->send)
            queue_frame(c_, c_.outgoing ? 1 : 0);
        if (!step->open)
            return HsStep::More;
        if (c_.outgoing) {
            if (c_.peer == nullptr)
                return HsStep::Refuse;  // abandoned meanwhile
            c_.peer->ever_connected = true;
            act(*c_.peer, c_.peer->fsm.on_answered());
            return HsStep::Open;
        }
        return adopt() ? HsStep::Open : HsStep::Refuse;
    }
    void on_message(const core::Header& h, std::span<const std::uint8_t> payload) override {
        deliver(h, payload);
    }

  private:
    // The peer's HELLO passed admission and its MAC: the peer's state
    // machine adopts this connection (our REPLY goes out) unless our own
    // attempt wins. Admission already refused a HELLO for a live connection
    // that claims no reconnect, so one that reaches here may replace it.
    bool claim() {
        State& s = state();
        const ProcName from = c_.hs.peer();
        Peer& p = peer_for(from);
        if (p.fsm.on_incoming_hello(/*may_replace=*/true) ==
            core::ConnectionFsm::Incoming::Refuse) {
            ++s.counters.races;
            logf(s.log, LogLevel::Debug, "closed a connection from %u.%u: our own wins", from.jobid,
                 from.vpid);
            return false;
        }
        if (p.pending != nullptr && p.pending != &c_) {
            Connection* older = p.pending;  // the peer's previous attempt, dead on its side
            p.pending = nullptr;
            close_connection(older);
        }
        if (p.conn != nullptr) {
            // Our own attempt that lost the race, or the connection the peer
            // says it lost: it goes quietly, its messages wait for the CONFIRM.
            Connection* old = p.conn;
            old->peer = nullptr;
            p.conn = nullptr;
            requeue_unsent(*old, p);
            close_connection(old);
        }
        p.pending = &c_;
        return true;
    }
    // An accepted connection whose handshake is complete becomes its
    // peer's; only now does ORTE hear of it.
    bool adopt() {
        Peer& p = peer_for(c_.hs.peer());
        if (p.pending != &c_)
            return false;  // a newer attempt of the peer's replaced it
        p.pending = nullptr;
        p.conn = &c_;
        c_.peer = &p;
        state().half_open.leave(&c_);
        p.ever_connected = true;
        act(p, p.fsm.on_confirmed());  // Flush: what waited goes now
        return true;
    }
    Connection& c_;
};

void on_read(int, short, void* arg) {
    bury();
    auto* c = static_cast<Connection*>(arg);
    State& s = state();
    std::array<std::uint8_t, 64 * 1024> buf;
    for (;;) {
        const net::IoResult got = net::read_some(c->fd, buf);
        if (got.status == net::IoStatus::Again)
            return;
        if (got.status == net::IoStatus::Moved) {
            Sink sink(*c);
            auto r = c->decoder.feed(std::span(buf.data(), got.bytes), sink);
            if (!r) {
                if (c->decoder.phase() == core::StreamDecoder::Phase::Failed &&
                    r.error().code != plugin::common::ErrorCode::UnknownPeer)
                    ++s.counters.decode_errors;
                logf(s.log, LogLevel::Warn, "closed a connection: %.*s",
                     static_cast<int>(r.error().message.size()), r.error().message.data());
                close_connection(c);
                return;
            }
            continue;
        }
        close_connection(c);  // EOF or error
        return;
    }
}

void on_write(int, short, void* arg) {
    bury();
    auto* c = static_cast<Connection*>(arg);
    if (c->outgoing && !c->tcp_up) {
        if (net::connect_result(c->fd) != 0) {
            close_connection(c);
            return;
        }
        c->tcp_up = true;
        if (c->peer != nullptr)
            c->peer->fsm.on_tcp_connected();
    }
    std::vector<void*> done;
    const net::FlushStatus flushed = net::flush_queue(c->fd, c->queue, done);
    // Messages the kernel took whole count as sent (as any TCP write does),
    // even when the socket fails after them.
    for (void* m : done)
        if (m != nullptr)
            finish(static_cast<OutMsg*>(m), true);
    if (flushed == net::FlushStatus::Failed) {
        close_connection(c);
        return;
    }
    if (c->queue.empty() && c->writing) {
        c->writing = false;
        opal_event_del(&c->write_ev);
    }
}

void on_accept(int fd, short, void*) {
    bury();
    for (;;) {
        const int nfd = net::accept_one(fd);
        if (nfd < 0)
            return;  // EAGAIN, or an error the next event reports again
        State& s = state();
        if (const auto oldest = s.half_open.evict_for_new()) {
            ++s.counters.refused;
            ++s.counters.late;
            logf(s.log, LogLevel::Warn,
                 "too many connections without a handshake: closing the oldest");
            close_connection(*oldest);
        }
        net::apply_options(nfd, socket_options());
        s.half_open.enter(new_connection(nfd, nullptr), monotonic_now());
        arm_timer();
    }
}

void on_timer(plugin::common::Micros now) {
    bury();
    State& s = state();
    // Accepted connections that did not complete their handshake in time.
    for (Connection* c : s.half_open.overdue(now)) {
        ++s.counters.refused;
        ++s.counters.late;
        logf(s.log, LogLevel::Warn, "closed a connection: no complete handshake in time");
        close_connection(c);
    }
    for (auto& [key, p] : s.peers) {
        if (now < p->fsm.deadline())
            continue;
        const bool was_connecting = p->fsm.connecting();
        const core::ConnectionFsm::Action a = p->fsm.on_timer(now, !p->waiting.empty());
        // An attempt that timed out: its socket goes (the machine already counted it).
        if (was_connecting && p->conn != nullptr) {
            Connection* c = p->conn;
            c->peer = nullptr;
            p->conn = nullptr;
            requeue_unsent(*c, *p);
            close_connection(c);
        }
        act(*p, a);
    }
    arm_timer();
}

}  // namespace

void arm_timer() noexcept {
    State& s = state();
    plugin::common::Micros d = plugin::common::kNever;
    for (const auto& [key, p] : s.peers)
        d = std::min(d, p->fsm.deadline());
    d = std::min(d, s.half_open.next_deadline());
    s.timer.arm(d, monotonic_now());
}

Peer& peer_for(const ProcName& name) {
    State& s = state();
    auto& slot = s.peers[key_of(name)];
    if (!slot)
        slot = std::make_unique<Peer>(name, s.config.retry, s.log, name_of(*ORTE_PROC_MY_NAME));
    return *slot;
}

void enqueue(Peer& p, OutMsg* m) {
    if (p.fsm.connected() && p.conn != nullptr) {
        push_message(*p.conn, m);
        return;
    }
    p.waiting.push_back(m);
    // Nothing happens while an attempt is under way, or while the peer's own
    // connection to us waits for its CONFIRM (it will carry them).
    act(p, p.fsm.on_send(monotonic_now()));
}

int open_listeners() noexcept {
    State& s = state();
    s.timer.init(on_timer, orte_event_base);
    s.half_open.set_timeout(s.config.retry.connect_timeout);
    for (const std::uint8_t family : {std::uint8_t{4}, std::uint8_t{6}}) {
        if (std::none_of(s.ifs.begin(), s.ifs.end(),
                         [&](const plugin::common::LocalIf& i) { return i.addr.family == family; }))
            continue;
        Listener l;
        l.family = family;
        const auto range = static_cast<std::uint16_t>(
            s.config.port_min == 0 ? 0 : s.config.port_max - s.config.port_min + 1);
        auto fd = net::listen_on(family, s.config.port_min, range, socket_options(), &l.port);
        if (!fd) {
            logf(s.log, LogLevel::Warn, "no IPv%u listener: %.*s", family,
                 static_cast<int>(fd.error().message.size()), fd.error().message.data());
            continue;
        }
        l.fd = *fd;
        s.listeners.push_back(l);
    }
    for (Listener& l : s.listeners) {
        opal_event_set(orte_event_base, &l.ev, l.fd, OPAL_EV_READ | OPAL_EV_PERSIST, on_accept,
                       nullptr);
        opal_event_add(&l.ev, nullptr);
    }
    return s.listeners.empty() ? ORTE_ERR_NOT_AVAILABLE : ORTE_SUCCESS;
}

void close_all() noexcept {
    State& s = state();
    for (Listener& l : s.listeners) {
        opal_event_del(&l.ev);
        net::close_fd(l.fd);
    }
    s.listeners.clear();
    for (auto& c : s.conns) {
        shut(*c);
        std::vector<void*> left;
        c->queue.drain(left);
        for (void* m : left)
            if (m != nullptr)
                discard(static_cast<OutMsg*>(m));
    }
    s.conns.clear();
    s.half_open.clear();
    for (auto& [key, p] : s.peers)
        for (OutMsg* m : p->waiting)
            discard(m);
    s.peers.clear();
    s.timer.shutdown();
    bury();
}

}  // namespace oob::drtcp::mca
