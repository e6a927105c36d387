#include "handshake.hpp"

namespace oob::drtcp::core {

namespace auth = plugin::common::auth;
using plugin::common::Error;
using plugin::common::ErrorCode;
using plugin::common::fail;
using plugin::common::logf;
using plugin::common::LogLevel;

namespace {

const auth::Key& key_or_zero(const auth::Key* k) noexcept {
    static const auth::Key kZero{};
    return k != nullptr ? *k : kZero;
}

}  // namespace

std::string_view to_string(LinkState s) noexcept {
    switch (s) {
        case LinkState::Start:
            return "start";
        case LinkState::HelloSent:
            return "hello-sent";
        case LinkState::ReplySent:
            return "reply-sent";
        case LinkState::Open:
            return "open";
        case LinkState::Refused:
            return "refused";
    }
    return "?";
}

bool transition_allowed(LinkState from, LinkState to) noexcept {
    switch (from) {
        case LinkState::Start:
            return to == LinkState::HelloSent || to == LinkState::ReplySent ||
                   to == LinkState::Refused;
        case LinkState::HelloSent:
        case LinkState::ReplySent:
            return to == LinkState::Open || to == LinkState::Refused;
        case LinkState::Open:
        case LinkState::Refused:
            return false;
    }
    return false;
}

std::string_view to_string(Refusal r) noexcept {
    switch (r) {
        case Refusal::None:
            return "none";
        case Refusal::Protocol:
            return "protocol";
        case Refusal::Identity:
            return "identity";
        case Refusal::Race:
            return "race";
        case Refusal::Key:
            return "key";
    }
    return "?";
}

LinkHandshake::LinkHandshake(const Setup& s, plugin::common::LogSink& log) noexcept
    : role_(s.role),
      me_(s.me),
      peer_(s.peer),
      flags_(s.role == LinkRole::Initiator && s.reconnect ? kFlagReconnect : 0),
      hs_(key_or_zero(s.key), s.auth),
      log_(&log) {}

void LinkHandshake::transition(LinkState to, const char* reason) noexcept {
    if (!transition_allowed(state_, to)) {
        logf(*log_, LogLevel::Error, "handshake with %u.%u: illegal %s -> %s (%s)", peer_.jobid,
             peer_.vpid, to_string(state_).data(), to_string(to).data(), reason);
        return;
    }
    logf(*log_, LogLevel::Debug, "handshake with %u.%u: %s -> %s (%s)", peer_.jobid, peer_.vpid,
         to_string(state_).data(), to_string(to).data(), reason);
    state_ = to;
}

Error LinkHandshake::refuse(Refusal why, Error e) noexcept {
    refusal_ = why;
    if (state_ != LinkState::Refused)
        transition(LinkState::Refused, e.message.data());
    return e;
}

auth::Binding LinkHandshake::binding() const noexcept {
    auth::Binding b;
    b.protocol = kAuthLabel;
    b.initiator = role_ == LinkRole::Initiator ? me_ : peer_;
    b.acceptor = role_ == LinkRole::Initiator ? peer_ : me_;
    b.context = flags_;
    return b;
}

Result<void> LinkHandshake::hello(std::span<std::uint8_t> out) noexcept {
    if (role_ != LinkRole::Initiator || state_ != LinkState::Start)
        return fail(refuse(Refusal::Protocol, {ErrorCode::InvalidState, "HELLO out of turn"}));
    auto offer = hs_.hello(binding());
    if (!offer)
        return fail(refuse(Refusal::Key, offer.error()));
    HandshakeFrame f;
    f.type = HsType::Hello;
    f.flags = flags_;
    f.sender = me_;
    f.receiver = peer_;
    f.nonce = offer->nonce;
    f.mac = offer->mac;
    if (auto n = encode_handshake(f, out); !n)
        return fail(refuse(Refusal::Protocol, n.error()));
    transition(LinkState::HelloSent, "connected");
    return {};
}

Result<LinkHandshake::Step> LinkHandshake::on_frame(const HandshakeFrame& f, Admitter& admitter,
                                                    std::span<std::uint8_t> out) noexcept {
    switch (state_) {
        case LinkState::Start:
            if (role_ == LinkRole::Acceptor && f.type == HsType::Hello)
                return on_hello(f, admitter, out);
            break;
        case LinkState::HelloSent:
            if (f.type == HsType::Reply)
                return on_reply(f, out);
            break;
        case LinkState::ReplySent:
            if (f.type == HsType::Confirm)
                return on_confirm(f);
            break;
        case LinkState::Open:
        case LinkState::Refused:
            break;
    }
    return fail(refuse(Refusal::Protocol, {ErrorCode::BadType, "handshake frame out of turn"}));
}

Result<LinkHandshake::Step> LinkHandshake::on_hello(const HandshakeFrame& f, Admitter& a,
                                                    std::span<std::uint8_t> out) noexcept {
    // Who it claims to be comes first: a stranger learns nothing, not even
    // whether its MAC was right.
    admission_ = a.admit(f.sender, f.receiver, (f.flags & kFlagReconnect) != 0);
    if (admission_ != Admission::Admit)
        return fail(refuse(hostile(admission_) ? Refusal::Identity : Refusal::Race,
                           {ErrorCode::UnknownPeer, "HELLO refused: identity"}));
    peer_ = f.sender;
    flags_ = f.flags;
    auto offer = hs_.on_hello(binding(), f.nonce, f.mac);
    if (!offer)
        return fail(refuse(Refusal::Key, offer.error()));
    HandshakeFrame r;
    r.type = HsType::Reply;
    r.sender = me_;
    r.receiver = peer_;
    r.nonce = offer->nonce;
    r.mac = offer->mac;
    if (auto n = encode_handshake(r, out); !n)
        return fail(refuse(Refusal::Protocol, n.error()));
    transition(LinkState::ReplySent, "HELLO admitted");
    return Step{true, false};
}

Result<LinkHandshake::Step> LinkHandshake::on_reply(const HandshakeFrame& f,
                                                    std::span<std::uint8_t> out) noexcept {
    if (f.sender != peer_ || f.receiver != me_)
        return fail(refuse(Refusal::Identity,
                           {ErrorCode::UnknownPeer, "REPLY not from the process we dialed"}));
    auto mac = hs_.on_reply(f.nonce, f.mac);
    if (!mac)
        return fail(refuse(Refusal::Key, mac.error()));
    HandshakeFrame c;
    c.type = HsType::Confirm;
    c.sender = me_;
    c.receiver = peer_;
    c.mac = *mac;
    if (auto n = encode_handshake(c, out); !n)
        return fail(refuse(Refusal::Protocol, n.error()));
    transition(LinkState::Open, "REPLY verified");
    return Step{true, true};
}

Result<LinkHandshake::Step> LinkHandshake::on_confirm(const HandshakeFrame& f) noexcept {
    if (f.sender != peer_ || f.receiver != me_)
        return fail(
            refuse(Refusal::Protocol, {ErrorCode::UnknownPeer, "CONFIRM names other processes"}));
    if (auto ok = hs_.on_confirm(f.mac); !ok)
        return fail(refuse(Refusal::Key, ok.error()));
    transition(LinkState::Open, "CONFIRM verified");
    return Step{false, true};
}

}  // namespace oob::drtcp::core
