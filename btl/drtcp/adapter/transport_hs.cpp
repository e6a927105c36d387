// drtcp transport, handshake side (wire v2): the HELLO we send, the checks
// an incoming HELLO passes before anything is answered, the REPLY and the
// CONFIRM. The MACs are plugin::common::auth::Handshake's; this file decides
// who may be answered at all, in this order: addressed to this process, a
// process of the job this one knows, a link it has a module for, from the
// address the peer published, not a duplicate of an established connection,
// a HELLO sequence never seen from that peer, and a MAC made with the pair's
// key. A refusal closes the connection without a byte of reply.
#include <sys/socket.h>

#include <algorithm>

#include "transport_internal.hpp"

namespace btl::drtcp::adapter {

using plugin::common::logf;
using plugin::common::LogLevel;
namespace auth = plugin::common::auth;

std::string_view to_string(Refusal r) noexcept {
    switch (r) {
        case Refusal::Malformed:
            return "malformed";
        case Refusal::Silent:
            return "silent";
        case Refusal::Flood:
            return "flood";
        case Refusal::NotForUs:
            return "not-for-us";
        case Refusal::WrongJob:
            return "wrong-job";
        case Refusal::BeyondJob:
            return "beyond-job";
        case Refusal::Unknown:
            return "unknown";
        case Refusal::BadLink:
            return "bad-link";
        case Refusal::Address:
            return "address";
        case Refusal::Duplicate:
            return "duplicate";
        case Refusal::Replay:
            return "replay";
        case Refusal::BadMac:
            return "bad-mac";
    }
    return "unknown-reason";
}

void Transport::refuse(Conn* c, Refusal why, const char* detail) {
    if (c != nullptr) {
        if (c->counted)
            return;
        c->counted = true;
    }
    const auto i = static_cast<std::size_t>(why);
    ++counters_.refused;
    ++counters_.refusals[i];
    // Once per reason at info level: a flood must not flood the log.
    const LogLevel level = refusal_logged_[i] ? LogLevel::Debug : LogLevel::Info;
    refusal_logged_[i] = true;
    logf(*log_, level, "refused a connection from %s (%s): %s",
         c != nullptr ? c->peer.str().c_str() : "?", to_string(why).data(), detail);
}

namespace {

auth::Binding binding(core::ProcName initiator, core::ProcName acceptor, std::uint16_t link) {
    return auth::Binding{core::kAuthLabel, initiator, acceptor, link};
}

bool send_all(int fd, const std::uint8_t* p, std::size_t n) {
    // A fresh socket's buffer is empty: a handshake message goes in one
    // call or the socket is dead.
    const net::IoResult r = net::send_some(fd, std::span(p, n));
    return r.status == net::IoStatus::Moved && r.bytes == n;
}

}  // namespace

bool Transport::write_hello(Conn* c) {
    Endpoint* ep = c->ep;
    const Module& m = modules_[static_cast<std::size_t>(ep->module)];
    // The sequence never repeats within this process (monotonic, and at
    // least one more than the last), so the peer can refuse an old HELLO
    // before it answers.
    hello_seq_ =
        std::max<std::uint64_t>(hello_seq_ + 1, static_cast<std::uint64_t>(monotonic_micros()));
    std::array<std::uint8_t, 8> random{};
    if (!auth::random_fill(random))
        return false;
    core::Hello h;
    h.from = self_;
    h.to = ep->remote;
    h.link = m.link;
    h.flags = ep->reconnect ? core::kHelloReconnect : 0;
    c->hs.emplace(*ep->pair_key, config_.auth);
    auto offer = c->hs->hello(binding(self_, ep->remote, m.link),
                              core::make_hello_nonce(hello_seq_, random));
    if (!offer)
        return false;
    h.nonce = offer->nonce;
    h.mac = offer->mac;
    std::uint8_t buf[core::kHelloSize];
    if (!core::encode(h, buf))
        return false;
    return send_all(c->fd, buf, sizeof buf);
}

bool Transport::on_hello(Conn* c, const core::Hello& h) {
    if (c->kind != Conn::Kind::Incoming) {
        std::lock_guard lock(io_);
        refuse(c, Refusal::Malformed, "HELLO on an outgoing connection");
        return false;
    }
    if (!(h.to == self_)) {
        std::lock_guard lock(io_);
        refuse(c, Refusal::NotForUs, "HELLO addressed to another process");
        return false;
    }
    bool known = false;
    {
        std::lock_guard lock(io_);
        for (const Module& m : modules_)
            known = known || m.peers.count(key_of(h.from)) != 0;
    }
    if (!known && unknown_peer_) {
        // The glue decides whether the name belongs to the job (and adds it
        // lazily if so); it must not be called with the lock held.
        const PeerVerdict v = unknown_peer_(h.from);
        std::lock_guard lock(io_);
        switch (v) {
            case PeerVerdict::Known:
                break;
            case PeerVerdict::WrongJob:
                refuse(c, Refusal::WrongJob, "HELLO names a process of another job");
                return false;
            case PeerVerdict::BeyondJob:
                refuse(c, Refusal::BeyondJob, "HELLO names a rank beyond the job");
                return false;
            case PeerVerdict::Unknown:
                refuse(c, Refusal::Unknown, "HELLO names a process this one does not reach");
                return false;
        }
    }
    std::lock_guard lock(io_);
    return check_incoming_hello(c, h);
}

bool Transport::check_incoming_hello(Conn* c, const core::Hello& h) {
    // Which module did it reach, and whose is it?
    bool address_known = false;
    Module* m = nullptr;
    for (Module& mod : modules_) {
        if (!(mod.local.addr == c->local))
            continue;
        address_known = true;
        if (mod.link == h.link)
            m = &mod;
    }
    if (m == nullptr) {
        refuse(c, address_known ? Refusal::BadLink : Refusal::Unknown,
               "no module for that address and link");
        return false;
    }
    auto ep_it = m->peers.find(key_of(h.from));
    if (m->dead || m->dying || ep_it == m->peers.end()) {
        refuse(c, Refusal::Unknown, "HELLO names a process this module does not know");
        return false;
    }
    Endpoint* ep = ep_it->second;
    if (!(c->peer == from_sockaddr(ep->raddr.ss))) {
        // The name is not proof: the peer connects from the address it
        // published for this pairing (its module binds it).
        refuse(c, Refusal::Address, "HELLO from another address than the peer published");
        return false;
    }
    const bool idle_active = ep->active != nullptr && ep->active != c &&
                             ep->active->decoder.frames() == 0 && ep->active->frames_written == 0;
    if (ep->fsm.connected() && !((h.flags & core::kHelloReconnect) != 0 && idle_active)) {
        refuse(c, Refusal::Duplicate, "the peer has an established connection");
        return false;
    }
    if (core::hello_sequence(h.nonce) <= ep->last_hello_seq) {
        refuse(c, Refusal::Replay, "HELLO sequence seen before (a replay)");
        return false;
    }
    c->hs.emplace(*ep->pair_key, config_.auth);
    auto offer = c->hs->on_hello(binding(h.from, self_, h.link), h.nonce, h.mac);
    if (!offer) {
        refuse(c, Refusal::BadMac, "HELLO not signed with the pair's key");
        return false;
    }
    // Only an authentic HELLO moves the replay bar.
    ep->last_hello_seq = core::hello_sequence(h.nonce);
    if (ep->fsm.on_incoming_hello((h.flags & core::kHelloReconnect) != 0 && idle_active) ==
        core::ConnectionFsm::Incoming::Refuse) {
        // Simultaneous connects: the peer keeps ours (the smaller name's).
        ++counters_.duplicates;
        c->refused_duplicate = true;
        c->counted = true;
        return false;
    }
    close_conn(ep->outgoing);
    if (ep->active != nullptr && ep->active != c)
        close_conn(ep->active);  // a pending or idle connection the peer gave up
    ep->active = c;
    c->ep = ep;
    c->adopted = true;
    half_open_.leave(c);  // the peer may compute before it CONFIRMs: no deadline
    core::Reply r{self_, offer->nonce, offer->mac};
    std::uint8_t buf[core::kReplySize];
    if (!core::encode(r, buf) || !send_all(c->fd, buf, sizeof buf))
        return false;  // handled as an adopted connection lost before CONFIRM
    return true;
}

bool Transport::on_confirm(Conn* c, const core::Confirm& m) {
    std::lock_guard lock(io_);
    Endpoint* ep = c->ep;
    if (!c->adopted || ep == nullptr || ep->active != c || !c->hs) {
        refuse(c, Refusal::Malformed, "CONFIRM on a connection not adopted");
        return false;
    }
    if (!c->hs->on_confirm(m.mac)) {
        refuse(c, Refusal::BadMac, "CONFIRM not signed with the pair's key");
        return false;
    }
    ++counters_.handshakes;
    ep->fsm.on_confirmed();
    ep->reconnect = false;
    c->identified = true;
    flush_locked(ep, p_done_);
    return true;
}

bool Transport::on_reply(Conn* c, const core::Reply& r) {
    std::lock_guard lock(io_);
    Endpoint* ep = c->ep;
    if (c->kind != Conn::Kind::Outgoing || ep == nullptr || ep->outgoing != c || !c->hs ||
        !(r.from == ep->remote)) {
        ++counters_.reply_refused;
        logf(*log_, LogLevel::Warn, "REPLY from %u.%u on a connection to %u.%u: closed",
             r.from.jobid, r.from.vpid, ep != nullptr ? ep->remote.jobid : 0,
             ep != nullptr ? ep->remote.vpid : 0);
        return false;
    }
    auto confirm = c->hs->on_reply(r.nonce, r.mac);
    if (!confirm) {
        ++counters_.reply_refused;
        logf(*log_, LogLevel::Warn, "REPLY from %u.%u not signed with the pair's key: closed",
             r.from.jobid, r.from.vpid);
        return false;
    }
    if (!core::encode(core::Confirm{*confirm}, c->prefix))
        return false;
    c->prefix_len = core::kConfirmSize;  // sent with the first frames (flush_locked)
    ++counters_.handshakes;
    (void)ep->fsm.on_answered();
    ep->outgoing = nullptr;
    ep->active = c;
    ep->reconnect = false;
    c->identified = true;
    flush_locked(ep, p_done_);  // a dead socket is handled as any failed write
    return true;
}

}  // namespace btl::drtcp::adapter
