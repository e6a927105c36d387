#include "peer.hpp"

namespace oob::drtcp::core {

using plugin::common::kNever;
using plugin::common::logf;
using plugin::common::LogLevel;

std::string_view to_string(PeerState s) noexcept {
    switch (s) {
        case PeerState::Unconnected:
            return "unconnected";
        case PeerState::Connecting:
            return "connecting";
        case PeerState::ConnectAck:
            return "connect-ack";
        case PeerState::Connected:
            return "connected";
        case PeerState::Closed:
            return "closed";
        case PeerState::Failed:
            return "failed";
    }
    return "?";
}

bool transition_allowed(PeerState from, PeerState to) noexcept {
    using S = PeerState;
    switch (from) {
        case S::Unconnected:
        case S::Closed:
        case S::Failed:
            return to == S::Connecting || to == S::Connected || to == S::Closed;
        case S::Connecting:
            return to == S::ConnectAck || to == S::Connected || to == S::Closed || to == S::Failed;
        case S::ConnectAck:
            return to == S::Connected || to == S::Closed || to == S::Failed;
        case S::Connected:
            return to == S::Closed || to == S::Connected;
    }
    return false;
}

PeerFsm::PeerFsm(ProcName local, ProcName remote, RetryPolicy policy,
                 plugin::common::LogSink& log) noexcept
    : local_(local), remote_(remote), policy_(policy), log_(&log) {}

void PeerFsm::transition(PeerState to, const char* reason) noexcept {
    if (!transition_allowed(state_, to)) {
        logf(*log_, LogLevel::Error, "peer %u.%u: illegal %s -> %s (%s)", remote_.jobid,
             remote_.vpid, to_string(state_).data(), to_string(to).data(), reason);
        return;
    }
    logf(*log_, LogLevel::Debug, "peer %u.%u: %s -> %s (%s)", remote_.jobid, remote_.vpid,
         to_string(state_).data(), to_string(to).data(), reason);
    state_ = to;
}

PeerFsm::Action PeerFsm::on_send(Micros now) noexcept {
    // Closed waits for its back-off (on_timer); Failed was reported and
    // tries again from scratch only when asked anew.
    if (state_ != PeerState::Unconnected && state_ != PeerState::Failed &&
        !(state_ == PeerState::Closed && deadline_ == kNever))
        return Action::None;
    if (state_ == PeerState::Failed)
        attempts_ = 0;
    ++attempts_;
    transition(PeerState::Connecting, "message queued");
    deadline_ = now + policy_.connect_timeout;
    return Action::Connect;
}

void PeerFsm::on_tcp_connected() noexcept {
    if (state_ == PeerState::Connecting)
        transition(PeerState::ConnectAck, "tcp connected");
}

PeerFsm::Action PeerFsm::on_outgoing_connect() noexcept {
    if (state_ != PeerState::ConnectAck)
        return Action::None;
    transition(PeerState::Connected, "handshake complete");
    deadline_ = kNever;
    attempts_ = 0;
    return Action::Flush;
}

PeerFsm::Incoming PeerFsm::on_incoming_connect() noexcept {
    switch (state_) {
        case PeerState::Connecting:
        case PeerState::ConnectAck:
            // Two connections at once: the one the smaller name opened wins.
            if (!(remote_ < local_))
                return Incoming::Refuse;
            break;
        case PeerState::Unconnected:
        case PeerState::Closed:
        case PeerState::Failed:
        case PeerState::Connected:  // the peer saw the old one die first
            break;
    }
    transition(PeerState::Connected, "peer connected to us");
    deadline_ = kNever;
    attempts_ = 0;
    return Incoming::Adopt;
}

PeerFsm::Action PeerFsm::retry_or_fail(Micros now, const char* reason) noexcept {
    if (attempts_ >= policy_.attempts) {
        transition(PeerState::Failed, reason);
        deadline_ = kNever;
        return Action::ReportUnreachable;
    }
    transition(PeerState::Closed, reason);
    deadline_ = now + retry_backoff(policy_, attempts_);
    return Action::None;
}

PeerFsm::Action PeerFsm::on_attempt_failed(Micros now) noexcept {
    if (state_ != PeerState::Connecting && state_ != PeerState::ConnectAck)
        return Action::None;
    return retry_or_fail(now, "attempt failed");
}

PeerFsm::Action PeerFsm::on_connection_lost(bool bye) noexcept {
    if (state_ != PeerState::Connected)
        return Action::None;
    transition(PeerState::Closed, bye ? "peer said BYE" : "connection lost");
    deadline_ = kNever;
    attempts_ = 0;
    return bye ? Action::None : Action::ReportLost;
}

PeerFsm::Action PeerFsm::on_timer(Micros now, bool queued) noexcept {
    if (now < deadline_)
        return Action::None;
    switch (state_) {
        case PeerState::Connecting:
        case PeerState::ConnectAck:
            return retry_or_fail(now, "no handshake in time");
        case PeerState::Closed:
            deadline_ = kNever;
            if (!queued)
                return Action::None;  // nothing to send: connect when asked
            ++attempts_;
            transition(PeerState::Connecting, "retry");
            deadline_ = now + policy_.connect_timeout;
            return Action::Connect;
        case PeerState::Unconnected:
        case PeerState::Connected:
        case PeerState::Failed:
            deadline_ = kNever;
            return Action::None;
    }
    return Action::None;
}

}  // namespace oob::drtcp::core
