#include "endpoint.hpp"

namespace btl::drtcp::core {

using plugin::common::kNever;
using plugin::common::logf;
using plugin::common::LogLevel;

std::string_view to_string(EpState s) noexcept {
    switch (s) {
        case EpState::Closed:
            return "closed";
        case EpState::Connecting:
            return "connecting";
        case EpState::HelloWait:
            return "hello-wait";
        case EpState::ConfirmWait:
            return "confirm-wait";
        case EpState::AwaitPeer:
            return "await-peer";
        case EpState::RetryWait:
            return "retry-wait";
        case EpState::Connected:
            return "connected";
        case EpState::Failed:
            return "failed";
        case EpState::Gone:
            return "gone";
    }
    return "unknown";
}

bool transition_allowed(EpState from, EpState to) noexcept {
    if (to == EpState::Failed || to == EpState::Gone)
        return from != EpState::Failed && from != EpState::Gone;
    switch (from) {
        case EpState::Closed:
        case EpState::RetryWait:
        case EpState::AwaitPeer:
            return to == EpState::Connecting || to == EpState::ConfirmWait;
        case EpState::Connecting:
            return to == EpState::HelloWait || to == EpState::Connected ||
                   to == EpState::ConfirmWait || to == EpState::RetryWait ||
                   to == EpState::AwaitPeer;
        case EpState::HelloWait:
            return to == EpState::Connected || to == EpState::ConfirmWait ||
                   to == EpState::RetryWait || to == EpState::AwaitPeer;
        case EpState::ConfirmWait:
            return to == EpState::Connected || to == EpState::Closed;
        case EpState::Connected:
            // Closed: an adopted connection that never carried a frame;
            // ConfirmWait: replaced on the peer's reconnect.
            return to == EpState::Closed || to == EpState::ConfirmWait;
        case EpState::Failed:
        case EpState::Gone:
            return false;
    }
    return false;
}

EndpointFsm::EndpointFsm(ProcName local, ProcName remote, ConnectPolicy policy,
                         plugin::common::LogSink& log) noexcept
    : local_(local), remote_(remote), policy_(policy), log_(&log) {}

void EndpointFsm::transition(EpState to, const char* reason) noexcept {
    if (!transition_allowed(state_, to)) {
        logf(*log_, LogLevel::Error, "endpoint %u.%u: illegal %s -> %s (%s)", remote_.jobid,
             remote_.vpid, to_string(state_).data(), to_string(to).data(), reason);
        return;
    }
    logf(*log_, LogLevel::Debug, "endpoint %u.%u: %s -> %s (%s)", remote_.jobid, remote_.vpid,
         to_string(state_).data(), to_string(to).data(), reason);
    state_ = to;
}

EndpointFsm::Action EndpointFsm::on_send(Micros now) noexcept {
    if (state_ != EpState::Closed)
        return Action::None;
    ++attempts_;
    transition(EpState::Connecting, "first frame");
    deadline_ = now + policy_.connect_timeout;
    return Action::Connect;
}

void EndpointFsm::on_tcp_connected(Micros /*now*/) noexcept {
    if (state_ != EpState::Connecting)
        return;
    transition(EpState::HelloWait, "tcp connected, HELLO sent");
    // The peer answers when it next enters MPI, which may be much later
    // (a long compute phase): no deadline. A dead peer shows as the socket
    // breaking (reset, or keepalive with btl_drtcp_user_timeout).
    deadline_ = kNever;
}

void EndpointFsm::on_outgoing_reply() noexcept {
    if (state_ != EpState::HelloWait && state_ != EpState::Connecting)
        return;
    transition(EpState::Connected, "peer answered our HELLO");
    deadline_ = kNever;
    attempts_ = 0;
}

EndpointFsm::Incoming EndpointFsm::on_incoming_hello(bool replace_idle) noexcept {
    switch (state_) {
        case EpState::Closed:
        case EpState::RetryWait:
        case EpState::AwaitPeer:
            break;
        case EpState::ConfirmWait:
            // The peer opened a newer connection (it keeps one attempt at a
            // time): the pending one is dead on its side.
            deadline_ = kNever;
            return Incoming::Adopt;
        case EpState::Connecting:
        case EpState::HelloWait:
            // Simultaneous connects: both sides keep the smaller name's.
            if (keep_outgoing(local_, remote_))
                return Incoming::Refuse;
            break;
        case EpState::Connected:
            if (!replace_idle)
                return Incoming::Refuse;
            break;
        case EpState::Failed:
        case EpState::Gone:
            return Incoming::Refuse;
    }
    transition(EpState::ConfirmWait, "adopted the peer's connection, REPLY sent");
    deadline_ = kNever;
    attempts_ = 0;
    return Incoming::Adopt;
}

void EndpointFsm::on_confirmed() noexcept {
    if (state_ != EpState::ConfirmWait)
        return;
    transition(EpState::Connected, "peer confirmed");
}

void EndpointFsm::on_unconfirmed() noexcept {
    if (state_ != EpState::ConfirmWait)
        return;
    transition(EpState::Closed, "adopted connection closed before its CONFIRM");
    deadline_ = kNever;
}

EndpointFsm::Action EndpointFsm::retry_or_fail(Micros now, const char* reason) noexcept {
    if (attempts_ >= policy_.attempts) {
        transition(EpState::Failed, reason);
        deadline_ = kNever;
        return Action::Fail;
    }
    transition(EpState::RetryWait, reason);
    deadline_ = now + retry_backoff(policy_, attempts_);
    return Action::None;
}

EndpointFsm::Action EndpointFsm::on_outgoing_lost(Micros now) noexcept {
    if (state_ != EpState::Connecting && state_ != EpState::HelloWait)
        return Action::None;  // a socket we had given up already
    if (state_ == EpState::HelloWait && !keep_outgoing(local_, remote_)) {
        // The peer may have refused ours because its own attempt is under
        // way (then it arrives within a round trip), or because it does not
        // know us yet (still in add_procs): wait one back-off step, then try
        // again; the attempt limit bounds both.
        if (attempts_ >= policy_.attempts)
            return retry_or_fail(now, "connect attempts exhausted");
        transition(EpState::AwaitPeer, "our connection refused, expecting the peer's");
        deadline_ = now + retry_backoff(policy_, attempts_);
        return Action::None;
    }
    return retry_or_fail(now, "connect attempt failed");
}

EndpointFsm::Action EndpointFsm::on_connection_lost(bool graceful) noexcept {
    if (!usable())
        return Action::None;
    deadline_ = kNever;
    if (graceful) {
        transition(EpState::Gone, "peer said BYE");
        return Action::Forget;
    }
    transition(EpState::Failed, "connection lost");
    return Action::Fail;
}

void EndpointFsm::on_abandoned() noexcept {
    if (state_ != EpState::Connected)
        return;
    transition(EpState::Closed, "connection closed before it carried a frame");
    deadline_ = kNever;
    attempts_ = 0;
}

EndpointFsm::Action EndpointFsm::on_shutdown() noexcept {
    if (!usable())
        return Action::None;
    deadline_ = kNever;
    transition(EpState::Failed, "module shut down");
    return Action::Fail;
}

EndpointFsm::Action EndpointFsm::on_timer(Micros now) noexcept {
    if (now < deadline_)
        return Action::None;
    switch (state_) {
        case EpState::Connecting:
        case EpState::HelloWait:
            return retry_or_fail(now, "connect attempt timed out");
        case EpState::AwaitPeer:
        case EpState::RetryWait:
            ++attempts_;
            transition(EpState::Connecting, "retrying");
            deadline_ = now + policy_.connect_timeout;
            return Action::Connect;
        case EpState::Closed:
        case EpState::ConfirmWait:
        case EpState::Connected:
        case EpState::Failed:
        case EpState::Gone:
            deadline_ = kNever;
            return Action::None;
    }
    return Action::None;
}

}  // namespace btl::drtcp::core
