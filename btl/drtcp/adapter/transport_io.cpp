// drtcp transport, event side: progress() polls epoll and dispatches
// accepts, reads (stream decoding, HELLO handling, fault injection, frame
// delivery), writes (queued frames, connect completion) and timers.
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "transport_internal.hpp"

namespace btl::drtcp::adapter {

using plugin::common::kNever;
using plugin::common::logf;
using plugin::common::LogLevel;
using plugin::common::Micros;
using Action = core::ConnectionFsm::Action;

class Transport::ReadSink final : public core::StreamSink {
  public:
    ReadSink(Transport& t, Conn* c, TransportEvents& ev) : t_(t), c_(c), ev_(ev) {}
    bool on_hello(const core::Hello& h) override { return t_.on_hello(c_, h); }
    bool on_reply(const core::Reply& r) override { return t_.on_reply(c_, r); }
    bool on_confirm(const core::Confirm& m) override { return t_.on_confirm(c_, m); }
    void on_frame(std::uint8_t tag, std::span<std::uint8_t> payload) override {
        ++t_.counters_.frames_received;
        ++delivered;
        void* module_user = t_.modules_[static_cast<std::size_t>(c_->ep->module)].user;
        if (t_.faults_.enabled()) {
            const plugin::common::FaultPlan plan = t_.faults_.next(payload.size());
            if (plan.drop) {
                ++t_.counters_.fault_dropped;
                return;
            }
            if (plan.corrupt) {
                ++t_.counters_.fault_corrupted;
                payload[plan.byte] ^= plan.mask;
            }
        }
        ev_.on_frame(module_user, tag, payload);
    }
    void on_bye() override { bye = true; }
    std::span<std::uint8_t> on_put(std::uint64_t key, std::uint64_t addr,
                                   std::uint32_t len) override {
        {
            std::lock_guard lock(t_.regions_lock_);
            if (!t_.regions_.covers(key, addr, len))
                return {};  // fails the stream: counted as a protocol error
        }
        ++t_.counters_.puts_received;
        ++delivered;
        return {reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(addr)), len};
    }

    bool bye = false;
    int delivered = 0;

  private:
    Transport& t_;
    Conn* c_;
    TransportEvents& ev_;
};

int Transport::progress(TransportEvents& events) {
    std::unique_lock busy(progress_, std::try_to_lock);
    if (!busy.owns_lock())
        return 0;
    epoll_event evs[32];
    const int n = ::epoll_wait(epfd_, evs, 32, 0);
    int count = 0;
    for (int i = 0; i < n; ++i) {
        auto* c = static_cast<Conn*>(evs[i].data.ptr);
        if (c->closed)
            continue;
        if (c->kind == Conn::Kind::Listener) {
            handle_accept(c);
            continue;
        }
        const std::uint32_t e = evs[i].events;
        if ((e & EPOLLOUT) != 0 && !c->closed)
            handle_writable(c, events);
        if ((e & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0 && !c->closed)
            handle_readable(c, events);
        ++count;
    }
    if (timers_ || dying_ || broken_hint_)
        run_timers(events);
    if (!graveyard_.empty()) {
        std::lock_guard lock(io_);
        graveyard_.clear();
    }
    return count;
}

void Transport::handle_accept(Conn* listener) {
    for (;;) {
        sockaddr_storage peer{};
        const int fd = net::accept_one(listener->fd, &peer);
        if (fd < 0)
            return;  // EAGAIN, or an aborted connection: nothing to do
        ++counters_.accepts;
        std::lock_guard lock(io_);
        // Callers that have not said HELLO yet are bounded (a flood of
        // silent connections must not lock the real peers out) and each has
        // one connect timeout to say it.
        if (const auto oldest = half_open_.evict_for_new()) {
            refuse(*oldest, Refusal::Flood, "too many connections without a HELLO");
            close_conn(*oldest);
        }
        apply_options(fd, sockopts_);
        const sockaddr_storage local = net::local_address(fd);
        conns_.push_back(std::make_unique<Conn>(Conn::Kind::Incoming, fd, max_frame_));
        Conn* c = conns_.back().get();
        c->local = from_sockaddr(local);
        c->peer = from_sockaddr(peer);
        half_open_.enter(c, monotonic_micros());
        timers_ = true;
        watch(c, EPOLLIN);
    }
}

void Transport::handle_readable(Conn* c, TransportEvents& events) {
    ReadSink sink(*this, c, events);
    bool down = false;
    for (int round = 0; round < 16 && !down; ++round) {
        const std::span<std::uint8_t> direct = c->decoder.direct_target(kDirectMin);
        const net::IoResult r = net::read_some(c->fd, direct, scratch_);
        if (r.status == net::IoStatus::Again)
            break;
        if (r.status == net::IoStatus::Closed && r.error != 0) {
            down = true;
            break;
        }
        if (r.status == net::IoStatus::Closed) {
            down = true;  // EOF
            if (c->kind == Conn::Kind::Incoming && !c->identified && !c->adopted) {
                std::lock_guard lock(io_);
                refuse(c, Refusal::Silent, "closed before a whole HELLO");
            }
            break;
        }
        counters_.bytes_received += r.bytes;
        std::size_t got = r.bytes;
        plugin::common::Result<void> ok;
        if (!direct.empty()) {
            const std::size_t into = std::min(got, direct.size());
            ok = c->decoder.commit_direct(into, sink);
            got -= into;
        }
        if (ok && got > 0)
            ok = c->decoder.feed(std::span(scratch_.data(), got), sink);
        if (!ok) {
            if (c->identified) {
                ++counters_.protocol_errors;
                logf(*log_, LogLevel::Warn, "closing a connection: %s", ok.error().message.data());
            } else if (c->kind == Conn::Kind::Incoming && !c->counted) {
                // Malformed before adoption; refusals by the checks are
                // counted (and logged) where they are made.
                std::lock_guard lock(io_);
                refuse(c, Refusal::Malformed, ok.error().message.data());
            } else if (c->kind == Conn::Kind::Outgoing && !c->identified) {
                logf(*log_, LogLevel::Debug, "closing our connection attempt: %s",
                     ok.error().message.data());
            }
            down = true;
        }
        if (sink.bye || c->closed)
            break;
        if (r.bytes < direct.size() + scratch_.size())
            break;  // drained what the kernel had
    }
    finish(events, p_done_, p_errored_, p_report_);
    if (sink.bye || (down && !c->closed))
        handle_conn_down(c, events, sink.bye);
}

void Transport::handle_writable(Conn* c, TransportEvents& events) {
    Endpoint* ep = c->ep;
    if (ep == nullptr)
        return;
    if (c->connecting) {
        const int err = connect_result(c->fd);
        if (err != 0) {
            logf(*log_, LogLevel::Debug, "connect to %u.%u failed: errno %d", ep->remote.jobid,
                 ep->remote.vpid, err);
            handle_conn_down(c, events, false);
            return;
        }
        std::lock_guard lock(io_);
        c->connecting = false;
        watch(c, EPOLLIN);
        if (!write_hello(c)) {
            c->connecting = true;  // handled as a failed attempt below
        } else {
            ep->fsm.on_tcp_connected();
            return;
        }
    }
    if (c->connecting) {
        handle_conn_down(c, events, false);
        return;
    }
    {
        std::lock_guard lock(io_);
        if (ep->active == c)
            flush_locked(ep, p_done_);
    }
    finish(events, p_done_, p_errored_, p_report_);
}

void Transport::handle_conn_down(Conn* c, TransportEvents& events, bool graceful) {
    {
        std::lock_guard lock(io_);
        Endpoint* ep = c->ep;
        if (ep != nullptr && ep->active == c && ep->fsm.state() == core::ConnState::ConfirmWait) {
            // Adopted, never confirmed (the peer gave up, or a replay):
            // nothing was carried.
            close_conn(c);
            ep->fsm.on_unconfirmed();
            ep->reconnect = true;
            if (!ep->queue.empty() && ep->fsm.on_send(monotonic_micros()) == Action::Connect)
                start_connect_locked(ep);
        } else if (ep != nullptr && ep->active == c && !graceful && c->decoder.frames() == 0 &&
                   c->frames_written == 0) {
            // Nothing went either way on it: an attempt the peer abandoned.
            close_conn(c);
            ep->fsm.on_abandoned();
            ep->reconnect = true;
            if (!ep->queue.empty() && ep->fsm.on_send(monotonic_micros()) == Action::Connect)
                start_connect_locked(ep);
        } else if (ep != nullptr && ep->active == c) {
            fail_endpoint_locked(ep, ep->fsm.on_connection_lost(graceful), p_errored_, p_report_);
        } else if (ep != nullptr && ep->outgoing == c) {
            close_conn(c);
            const Action a = ep->fsm.on_attempt_failed(monotonic_micros());
            timers_ = true;
            if (a == Action::Unreachable)
                fail_endpoint_locked(ep, a, p_errored_, p_report_);
        } else {
            close_conn(c);
        }
    }
    finish(events, p_done_, p_errored_, p_report_);
}

void Transport::run_timers(TransportEvents& events) {
    {
        std::lock_guard lock(io_);
        const Micros now = monotonic_micros();
        for (Endpoint* ep : broken_) {
            const Action a = ep->fsm.usable() ? ep->fsm.on_connection_lost(false) : Action::Lost;
            fail_endpoint_locked(ep, a, p_errored_, p_report_);
        }
        broken_.clear();
        broken_hint_ = false;
        if (dying_) {
            for (Module& m : modules_) {
                if (!m.dying)
                    continue;
                for (auto& [key, ep] : m.peers)
                    fail_endpoint_locked(ep, ep->fsm.on_shutdown(), p_errored_, p_report_);
                m.dying = false;
                m.dead = true;
            }
            dying_ = false;
        }
        bool pending = false;
        for (auto& owned : endpoints_) {
            Endpoint* ep = owned.get();
            if (ep->fsm.deadline() == kNever)
                continue;
            if (now >= ep->fsm.deadline()) {
                const Action a = ep->fsm.on_timer(now, /*queued=*/true);
                if (a == Action::Connect)
                    start_connect_locked(ep);
                else if (a == Action::Unreachable)
                    fail_endpoint_locked(ep, a, p_errored_, p_report_);
                else if (!ep->fsm.usable() || ep->fsm.state() == core::ConnState::RetryWait)
                    close_conn(ep->outgoing);
            }
            pending = pending || ep->fsm.deadline() != kNever;
        }
        for (Conn* c : half_open_.overdue(now)) {
            refuse(c, Refusal::Silent, "no HELLO within the connect timeout");
            close_conn(c);  // leaves half_open_
        }
        pending = pending || !half_open_.empty();
        timers_ = pending;
    }
    finish(events, p_done_, p_errored_, p_report_);
}

}  // namespace btl::drtcp::adapter
