#include "connection_fsm.hpp"

namespace plugin::common::net {

using plugin::common::kNever;
using plugin::common::logf;
using plugin::common::LogLevel;
using S = ConnState;

std::string_view to_string(ConnState s) noexcept {
    switch (s) {
        case S::Idle:
            return "idle";
        case S::Connecting:
            return "connecting";
        case S::HelloSent:
            return "hello-sent";
        case S::ConfirmWait:
            return "confirm-wait";
        case S::AwaitPeer:
            return "await-peer";
        case S::RetryWait:
            return "retry-wait";
        case S::Connected:
            return "connected";
        case S::Unreachable:
            return "unreachable";
        case S::Failed:
            return "failed";
        case S::Gone:
            return "gone";
    }
    return "?";
}

bool transition_allowed(ConnState from, ConnState to) noexcept {
    if (from == S::Failed || from == S::Gone)
        return false;
    if (to == S::Failed || to == S::Gone)
        return true;
    switch (from) {
        case S::Idle:
        case S::Unreachable:
            return to == S::Connecting || to == S::ConfirmWait;
        case S::RetryWait:
        case S::AwaitPeer:
            // Idle: the back-off ended with nothing left to send.
            return to == S::Connecting || to == S::ConfirmWait || to == S::Idle;
        case S::Connecting:
        case S::HelloSent:
            return (from == S::Connecting && to == S::HelloSent) || to == S::Connected ||
                   to == S::ConfirmWait || to == S::RetryWait || to == S::AwaitPeer ||
                   to == S::Unreachable;
        case S::ConfirmWait:
            return to == S::Connected || to == S::Idle;
        case S::Connected:
            // Idle: lost (Reconnect rules) or closed before it carried
            // anything; ConfirmWait: replaced on the peer's reconnect.
            return to == S::Idle || to == S::ConfirmWait;
        case S::Failed:
        case S::Gone:
            return false;
    }
    return false;
}

ConnectionFsm::ConnectionFsm(ProcName local, ProcName remote, ConnectionRules rules,
                             plugin::common::LogSink& log, std::string_view what) noexcept
    : local_(local), remote_(remote), rules_(rules), log_(&log), what_(what) {}

void ConnectionFsm::transition(ConnState to, const char* reason) noexcept {
    const bool ok = transition_allowed(state_, to);
    logf(*log_, ok ? LogLevel::Debug : LogLevel::Error, "%.*s %u.%u: %s%s -> %s (%s)",
         static_cast<int>(what_.size()), what_.data(), remote_.jobid, remote_.vpid,
         ok ? "" : "illegal ", to_string(state_).data(), to_string(to).data(), reason);
    if (ok)
        state_ = to;
}

ConnectionFsm::Action ConnectionFsm::connect(Micros now, const char* reason) noexcept {
    ++attempts_;
    transition(S::Connecting, reason);
    deadline_ = now + rules_.connect.connect_timeout;
    return Action::Connect;
}

ConnectionFsm::Action ConnectionFsm::retry_or_give_up(Micros now, ConnState wait,
                                                      const char* reason) noexcept {
    if (attempts_ >= rules_.connect.attempts) {
        const bool final = rules_.on_loss == ConnectionRules::OnLoss::Final;
        transition(final ? S::Failed : S::Unreachable, "connect attempts exhausted");
        deadline_ = kNever;
        return Action::Unreachable;
    }
    transition(wait, reason);
    deadline_ = now + retry_backoff(rules_.connect, attempts_);
    return Action::None;
}

ConnectionFsm::Action ConnectionFsm::on_send(Micros now) noexcept {
    switch (state_) {
        case S::Idle:
            return connect(now, "message queued");
        case S::Unreachable:
            attempts_ = 0;  // asked anew: start over
            return connect(now, "message queued after giving up");
        default:
            return Action::None;  // under way, waiting, or done for good
    }
}

void ConnectionFsm::on_tcp_connected() noexcept {
    if (state_ != S::Connecting)
        return;
    transition(S::HelloSent, "tcp connected, HELLO sent");
    if (!rules_.reply_deadline)
        deadline_ = kNever;
}

ConnectionFsm::Action ConnectionFsm::on_answered() noexcept {
    if (!connecting())
        return Action::None;  // an attempt given up already
    transition(S::Connected, "the peer answered our HELLO");
    deadline_ = kNever;
    attempts_ = 0;
    return Action::Flush;
}

ConnectionFsm::Action ConnectionFsm::on_attempt_failed(Micros now) noexcept {
    if (!connecting())
        return Action::None;  // a socket we had given up already
    if (state_ == S::HelloSent && !keep_outgoing(local_, remote_))
        return retry_or_give_up(now, S::AwaitPeer, "our HELLO refused, expecting the peer's");
    return retry_or_give_up(now, S::RetryWait, "connect attempt failed");
}

ConnectionFsm::Incoming ConnectionFsm::on_incoming_hello(bool may_replace) noexcept {
    switch (state_) {
        case S::Idle:
        case S::RetryWait:
        case S::AwaitPeer:
        case S::Unreachable:
            break;
        case S::ConfirmWait:
            return Incoming::Adopt;  // a newer attempt of the peer's
        case S::Connecting:
        case S::HelloSent:
            if (keep_outgoing(local_, remote_))
                return Incoming::Refuse;
            break;
        case S::Connected:
            if (!may_replace)
                return Incoming::Refuse;
            break;
        case S::Failed:
        case S::Gone:
            return Incoming::Refuse;
    }
    transition(S::ConfirmWait, "adopted the peer's connection, REPLY sent");
    deadline_ = kNever;
    attempts_ = 0;
    return Incoming::Adopt;
}

ConnectionFsm::Action ConnectionFsm::on_confirmed() noexcept {
    if (state_ != S::ConfirmWait)
        return Action::None;
    transition(S::Connected, "the peer confirmed");
    return Action::Flush;
}

void ConnectionFsm::on_unconfirmed() noexcept {
    if (state_ != S::ConfirmWait)
        return;
    transition(S::Idle, "adopted connection closed before its CONFIRM");
    deadline_ = kNever;
}

void ConnectionFsm::on_abandoned() noexcept {
    if (state_ != S::Connected)
        return;
    transition(S::Idle, "connection closed before it carried a message");
    deadline_ = kNever;
    attempts_ = 0;
}

ConnectionFsm::Action ConnectionFsm::on_connection_lost(bool bye) noexcept {
    if (rules_.on_loss == ConnectionRules::OnLoss::Final) {
        if (!usable())
            return Action::None;
        deadline_ = kNever;
        transition(bye ? S::Gone : S::Failed, bye ? "the peer said BYE" : "connection lost");
        return bye ? Action::Forget : Action::Lost;
    }
    if (state_ != S::Connected)
        return Action::None;
    transition(S::Idle, bye ? "the peer said BYE" : "connection lost");
    deadline_ = kNever;
    attempts_ = 0;
    return bye ? Action::None : Action::Lost;
}

ConnectionFsm::Action ConnectionFsm::on_shutdown() noexcept {
    if (!usable())
        return Action::None;
    deadline_ = kNever;
    transition(S::Failed, "shut down");
    return Action::Lost;
}

ConnectionFsm::Action ConnectionFsm::on_timer(Micros now, bool queued) noexcept {
    if (now < deadline_)
        return Action::None;
    switch (state_) {
        case S::Connecting:
        case S::HelloSent:
            return retry_or_give_up(now, S::RetryWait, "no REPLY in time");
        case S::AwaitPeer:
        case S::RetryWait:
            if (queued)
                return connect(now, "retrying");
            transition(S::Idle, "nothing left to send");
            deadline_ = kNever;
            return Action::None;
        case S::Idle:
        case S::ConfirmWait:
        case S::Connected:
        case S::Unreachable:
        case S::Failed:
        case S::Gone:
            deadline_ = kNever;
            return Action::None;
    }
    return Action::None;
}

}  // namespace plugin::common::net
