// drtcp transport: modules, endpoints, send path, connection setup, shutdown.
// The event side (progress, reads, accepts, timers) is in transport_io.cpp.
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "transport_internal.hpp"

namespace btl::drtcp::adapter {

using plugin::common::ErrorCode;
using plugin::common::fail;
using plugin::common::logf;
using plugin::common::LogLevel;
using plugin::common::Micros;

Micros monotonic_micros() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return Micros{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

Transport::Transport(const core::Config& config, core::ProcName self,
                     const plugin::common::auth::Key& key, std::uint32_t max_frame,
                     plugin::common::LogSink& log)
    : config_(config),
      self_(self),
      max_frame_(max_frame),
      log_(&log),
      sockopts_{config.sndbuf, config.rcvbuf, config.nodelay, config.user_timeout_ms},
      epfd_(::epoll_create1(EPOLL_CLOEXEC)),
      half_open_(config.connect.connect_timeout),
      faults_(config.faults),
      scratch_(kScratchBytes),
      regions_(static_cast<std::uint64_t>(monotonic_micros()) ^ (std::uint64_t{self.jobid} << 32) ^
               self.vpid) {
    key_ = key;
}

Transport::~Transport() {
    for (auto* list : {&listeners_, &conns_, &graveyard_})
        for (auto& c : *list)
            if (!c->closed && c->fd >= 0)
                ::close(c->fd);
    if (epfd_ >= 0)
        ::close(epfd_);
}

void* Transport::user_of(const Endpoint* ep) noexcept {
    return ep->user;
}
core::ConnState Transport::state_of(const Endpoint* ep) noexcept {
    return ep->fsm.state();
}

Result<void> Transport::ensure_listener(std::uint8_t family) {
    const int slot = family == 4 ? 0 : 1;
    if (listen_port_[slot] != 0)
        return {};
    if (epfd_ < 0)
        return fail(ErrorCode::NoResources, "epoll_create1 failed");
    std::uint16_t port = 0;
    auto fd = family == 4
                  ? listen_on(4, config_.port_min_v4, config_.port_range_v4, sockopts_, &port)
                  : listen_on(6, config_.port_min_v6, config_.port_range_v6, sockopts_, &port);
    if (!fd)
        return fail(fd.error());
    listeners_.push_back(std::make_unique<Conn>(Conn::Kind::Listener, *fd, max_frame_));
    watch(listeners_.back().get(), EPOLLIN);
    listen_port_[slot] = port;
    logf(*log_, LogLevel::Info, "listening on IPv%u port %u", family, port);
    return {};
}

Result<int> Transport::add_module(const core::LocalIf& local, std::uint16_t link, void* user) {
    std::lock_guard lock(io_);
    if (auto ok = ensure_listener(local.addr.family); !ok)
        return fail(ok.error());
    Module m;
    m.local = local;
    m.link = link;
    m.user = user;
    modules_.push_back(std::move(m));
    return static_cast<int>(modules_.size() - 1);
}

std::vector<core::PublishedAddr> Transport::published() const {
    std::lock_guard lock(io_);
    std::vector<core::PublishedAddr> out;
    for (const Module& m : modules_) {
        auto same = std::find_if(out.begin(), out.end(), [&](const core::PublishedAddr& p) {
            return p.addr == m.local.addr;
        });
        if (same != out.end()) {
            same->links = static_cast<std::uint16_t>(std::max<int>(same->links, m.link + 1));
            continue;
        }
        out.push_back({m.local.addr, m.local.prefix, listen_port_[m.local.addr.family == 4 ? 0 : 1],
                       static_cast<std::uint16_t>(m.link + 1)});
    }
    return out;
}

Endpoint* Transport::add_endpoint(int module, core::ProcName remote,
                                  const core::PublishedAddr& addr,
                                  const plugin::common::auth::Key& peer_key, void* user) {
    std::lock_guard lock(io_);
    Module& m = modules_.at(static_cast<std::size_t>(module));
    if (auto it = m.peers.find(key_of(remote)); it != m.peers.end())
        return it->second;
    // One HMAC per peer, not per connection or link.
    auto pk = pair_keys_.find(key_of(remote));
    if (pk == pair_keys_.end()) {
        const bool self_low = self_ < remote;
        const auto k = plugin::common::auth::pair_key(
            core::kAuthLabel, self_low ? self_ : remote, self_low ? key_ : peer_key,
            self_low ? remote : self_, self_low ? peer_key : key_);
        pk = pair_keys_.emplace(key_of(remote), std::make_unique<plugin::common::auth::KeyedMac>(k))
                 .first;
    }
    endpoints_.push_back(std::make_unique<Endpoint>(module, remote,
                                                    to_sockaddr(addr.addr, addr.port), user,
                                                    config_.connect, self_, *pk->second, *log_));
    Endpoint* ep = endpoints_.back().get();
    m.peers.emplace(key_of(remote), ep);
    return ep;
}

Endpoint* Transport::find_endpoint(int module, core::ProcName remote) const {
    std::lock_guard lock(io_);
    const Module& m = modules_.at(static_cast<std::size_t>(module));
    auto it = m.peers.find(key_of(remote));
    return it != m.peers.end() ? it->second : nullptr;
}

bool Transport::reachable(const Endpoint* ep) const {
    std::lock_guard lock(io_);
    const Module& m = modules_[static_cast<std::size_t>(ep->module)];
    return ep->fsm.usable() && !m.dead && !m.dying;
}

bool Transport::accepting(const Endpoint* ep) const {
    std::lock_guard lock(io_);
    const Module& m = modules_[static_cast<std::size_t>(ep->module)];
    return ep->fsm.usable() && !m.dead && !m.dying && ep->queue.size() < config_.sendq_frames;
}

void Transport::watch(Conn* c, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = c;
    const int op = c->interest == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (::epoll_ctl(epfd_, op, c->fd, &ev) == 0)
        c->interest = events;
}

void Transport::close_conn(Conn* c) {
    if (c == nullptr || c->closed)
        return;
    c->closed = true;
    half_open_.leave(c);
    (void)::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    if (c->ep != nullptr) {
        if (c->ep->active == c) {
            c->ep->active = nullptr;
            c->ep->write_armed = false;
        }
        if (c->ep->outgoing == c)
            c->ep->outgoing = nullptr;
    }
    auto it =
        std::find_if(conns_.begin(), conns_.end(), [&](const auto& p) { return p.get() == c; });
    if (it != conns_.end()) {
        graveyard_.push_back(std::move(*it));
        conns_.erase(it);
    }
}

void Transport::start_connect_locked(Endpoint* ep) {
    close_conn(ep->outgoing);
    const Module& m = modules_[static_cast<std::size_t>(ep->module)];
    ++counters_.connects;
    timers_ = true;
    auto fd = start_connect(m.local.addr, ep->raddr, sockopts_);
    if (!fd) {
        logf(*log_, LogLevel::Debug, "connect to %u.%u failed at once", ep->remote.jobid,
             ep->remote.vpid);
        if (ep->fsm.on_attempt_failed(monotonic_micros()) ==
            core::ConnectionFsm::Action::Unreachable)
            mark_broken(ep);
        return;
    }
    conns_.push_back(std::make_unique<Conn>(Conn::Kind::Outgoing, *fd, max_frame_));
    Conn* c = conns_.back().get();
    c->ep = ep;
    c->connecting = true;
    ep->outgoing = c;
    watch(c, EPOLLOUT);
}

void Transport::mark_broken(Endpoint* ep) {
    broken_.push_back(ep);
    broken_hint_ = true;
}

void Transport::set_writable_interest(Endpoint* ep, bool want) {
    if (ep->active == nullptr || ep->write_armed == want)
        return;
    watch(ep->active, EPOLLIN | (want ? EPOLLOUT : 0u));
    ep->write_armed = want;
}

void Transport::flush_locked(Endpoint* ep, std::vector<void*>& done) {
    Conn* c = ep->active;
    // Nothing but the handshake leaves before the peer proved the key.
    if (c == nullptr || !ep->fsm.connected())
        return;
    std::array<plugin::common::ByteRange, net::kMaxRanges> ranges;
    // The CONFIRM (initiator) leaves in the same sendmsg as the first frames:
    // on loopback every send costs the peer's receive path too.
    while (!ep->queue.empty() || c->prefix_sent < c->prefix_len) {
        std::size_t first = 0;
        std::size_t total = 0;
        const std::size_t prefix_left = c->prefix_len - c->prefix_sent;
        if (prefix_left > 0) {
            ranges[0] = {c->prefix + c->prefix_sent, prefix_left};
            total = prefix_left;
            first = 1;
        }
        const std::size_t n = ep->queue.gather(std::span(ranges).subspan(first));
        for (std::size_t i = 0; i < n; ++i)
            total += ranges[first + i].len;
        const net::IoResult w = net::write_ranges(c->fd, std::span(ranges.data(), first + n));
        if (w.status != net::IoStatus::Moved) {
            if (w.status == net::IoStatus::Closed)
                mark_broken(ep);  // progress() closes it and reports
            break;
        }
        counters_.bytes_sent += w.bytes;
        const std::size_t written = w.bytes;
        const std::size_t from_prefix = std::min(written, prefix_left);
        c->prefix_sent += from_prefix;
        if (written > from_prefix)
            c->frames_written += ep->queue.advance(written - from_prefix, done);
        if (written < total)
            break;  // the socket buffer is full
    }
    set_writable_interest(ep, !ep->queue.empty() || c->prefix_sent < c->prefix_len);
}

SendResult Transport::send(Endpoint* ep, const plugin::common::SendQueue::Frame& frame) {
    std::vector<void*> done;
    std::lock_guard lock(io_);
    Module& m = modules_[static_cast<std::size_t>(ep->module)];
    if (m.dead || m.dying || !ep->fsm.usable())
        return SendResult::Unreachable;
    if (config_.faults.fail_after != 0 && ++m.sent > config_.faults.fail_after) {
        logf(*log_, LogLevel::Warn, "fault injection: module %s link %u dies after %llu frames",
             m.local.name.c_str(), m.link,
             static_cast<unsigned long long>(config_.faults.fail_after));
        m.dying = true;
        dying_ = true;
        return SendResult::Unreachable;
    }
    const bool was_idle = ep->queue.empty();
    if (!ep->queue.push(frame))
        return SendResult::Unreachable;  // malformed frame: a glue bug, refuse it
    ++counters_.frames_sent;
    if (ep->fsm.connected()) {
        if (was_idle) {
            done.reserve(1);
            flush_locked(ep, done);
            if (!done.empty())
                return SendResult::Done;  // the queue was empty: only this frame
        }
        return SendResult::Queued;
    }
    if (ep->fsm.on_send(monotonic_micros()) == core::ConnectionFsm::Action::Connect)
        start_connect_locked(ep);
    return SendResult::Queued;
}

void Transport::fail_endpoint_locked(Endpoint* ep, core::ConnectionFsm::Action action,
                                     std::vector<void*>& errored, std::vector<Endpoint*>& report) {
    close_conn(ep->active);
    close_conn(ep->outgoing);
    ep->queue.drain(errored);
    if (core::reports_failure(action) && !ep->reported) {
        ep->reported = true;
        ++counters_.endpoint_failures;
        report.push_back(ep);
    }
}

void Transport::finish(TransportEvents& events, std::vector<void*>& done,
                       std::vector<void*>& errored, std::vector<Endpoint*>& report) {
    for (void* cookie : done)
        events.on_sent(cookie, true);
    for (void* cookie : errored)
        events.on_sent(cookie, false);
    for (Endpoint* ep : report)
        events.on_endpoint_failed(ep->user, modules_[static_cast<std::size_t>(ep->module)].user);
    done.clear();
    errored.clear();
    report.clear();
}

void Transport::say_bye_and_close(Endpoint* ep, std::vector<void*>& done,
                                  std::vector<void*>& errored) {
    Conn* c = ep->active;
    if (c != nullptr && ep->fsm.connected()) {
        // Give what is queued a bounded chance to leave, then say BYE.
        const Micros until = monotonic_micros() + 2 * plugin::common::kSeconds;
        while (!ep->queue.empty() && ep->active != nullptr && monotonic_micros() < until) {
            const std::size_t broken_before = broken_.size();
            flush_locked(ep, done);
            if (broken_.size() != broken_before)
                break;  // the socket is dead: nothing more will leave
            (void)net::wait_ready(c->fd, /*write=*/true, -1, 10);
        }
        std::uint8_t bye[core::kFrameHeaderSize];
        if (ep->active != nullptr &&
            core::encode(core::FrameHeader{0, core::kFrameFlagBye, 0}, bye)) {
            (void)net::send_some(c->fd, bye);
            net::shutdown_write(c->fd);
        }
    }
    (void)ep->fsm.on_connection_lost(/*graceful=*/true);
    close_conn(ep->active);
    close_conn(ep->outgoing);
    ep->queue.drain(errored);
}

void Transport::remove_endpoint(Endpoint* ep, TransportEvents& events) {
    std::vector<void*> done;
    std::vector<void*> errored;
    std::vector<Endpoint*> none;
    {
        std::lock_guard lock(io_);
        say_bye_and_close(ep, done, errored);
        broken_.erase(std::remove(broken_.begin(), broken_.end(), ep), broken_.end());
        modules_[static_cast<std::size_t>(ep->module)].peers.erase(key_of(ep->remote));
        auto it = std::find_if(endpoints_.begin(), endpoints_.end(),
                               [&](const auto& p) { return p.get() == ep; });
        if (it != endpoints_.end())
            endpoints_.erase(it);
    }
    finish(events, done, errored, none);
}

std::uint64_t Transport::register_region(const void* base, std::size_t len) {
    std::lock_guard lock(regions_lock_);
    return regions_.add(reinterpret_cast<std::uintptr_t>(base), len);
}

void Transport::deregister_region(std::uint64_t key) {
    std::lock_guard lock(regions_lock_);
    (void)regions_.remove(key);
}

void Transport::kill_module(int module) {
    std::lock_guard lock(io_);
    modules_.at(static_cast<std::size_t>(module)).dying = true;
    dying_ = true;
}

bool Transport::module_dead(int module) const {
    std::lock_guard lock(io_);
    const Module& m = modules_.at(static_cast<std::size_t>(module));
    return m.dead || m.dying;
}

void Transport::shutdown(TransportEvents& events) {
    std::vector<void*> done;
    std::vector<void*> errored;
    std::vector<Endpoint*> none;
    {
        std::lock_guard lock(io_);
        for (auto& ep : endpoints_)
            say_bye_and_close(ep.get(), done, errored);
        for (auto& l : listeners_)
            close_conn(l.get());
        broken_.clear();
    }
    finish(events, done, errored, none);
}

}  // namespace btl::drtcp::adapter
