// The connection state machine of one link to a peer process, for every
// stream component of ours (btl drtcp endpoints, oob drtcp peers); sans I/O.
// The adapter owns the sockets and asks this machine what to do at each
// event; time comes in as `now`. Each component keeps only its rules
// (ConnectionRules) and its wire format on top.
//
//   Idle ──send──▶ Connecting ──tcp up──▶ HelloSent ──peer's REPLY──▶ Connected
//    ▲                 │                      │  (our HELLO out)          │
//    │   attempt failed, refused or late      │                           │ lost / BYE
//    │                 ▼                      ▼                           ▼
//    ├──nothing queued── RetryWait / AwaitPeer ──back-off──▶ Connecting   Idle (Reconnect)
//    │                 │ `attempts` in a row failed                     Failed / Gone (Final)
//    │                 ▼
//    │        Unreachable (Reconnect: a new send starts over) / Failed (Final)
//    │
//    └── ConfirmWait ◀── the peer's authentic HELLO adopted (REPLY sent) ──CONFIRM──▶ Connected
//
// Adopting the peer's connection: from Idle, RetryWait, AwaitPeer and
// Unreachable; from ConfirmWait (the peer keeps one attempt at a time, so
// the pending one is dead on its side); from Connecting / HelloSent only when
// the peer's name is the smaller one (simultaneous connects: both sides keep
// the connection the smaller name opened, with no further round trip); from
// Connected only when the caller says the HELLO may replace it. Otherwise the
// HELLO is refused with no reply. Messages wait in ConfirmWait until the
// CONFIRM (a replayed HELLO never gets our data); a pending adoption that
// closes first returns to Idle.
//
// AwaitPeer: our HELLO was refused and the peer's name is the smaller one:
// its own connection may be on its way (or it does not know us yet); we try
// again after one back-off step unless it arrives.
#pragma once
#include <cstdint>
#include <string_view>

#include "connect_policy.hpp"
#include "log.hpp"
#include "proc_name.hpp"
#include "time.hpp"

namespace plugin::common::net {

enum class ConnState : std::uint8_t {
    Idle,         // no connection and no attempt under way
    Connecting,   // our TCP connect is in flight
    HelloSent,    // TCP up, our HELLO out, waiting for the peer's REPLY
    ConfirmWait,  // the peer's connection adopted (REPLY sent), waiting for its CONFIRM
    AwaitPeer,    // our attempt refused; the peer's own may be on its way
    RetryWait,    // an attempt failed; the next one after a back-off
    Connected,
    Unreachable,  // every attempt in a row failed (Reconnect rules: a new send starts over)
    Failed,       // final (Final rules)
    Gone,         // final: the peer said BYE (Final rules)
};
inline constexpr int kConnStates = static_cast<int>(ConnState::Gone) + 1;
std::string_view to_string(ConnState s) noexcept;
bool transition_allowed(ConnState from, ConnState to) noexcept;

// Simultaneous connects: both sides keep the connection the smaller process
// name (job id, then rank) opened, so they agree without another round trip.
constexpr bool keep_outgoing(ProcName local, ProcName remote) noexcept {
    return local < remote;
}

// What a component's links mean; the machine is the same.
struct ConnectionRules {
    ConnectPolicy connect;
    // What losing a link means.
    //   Final: the link is done for good (a broken connection, exhausted
    //     attempts, a shutdown); queued messages fail and the owner is told
    //     once. btl drtcp: a fresh connection could not know what the broken
    //     one lost, so pml dr fails over instead.
    //   Reconnect: the owner is told, and a later message connects again
    //     (oob drtcp: the errmgr decides what a lost daemon means).
    enum class OnLoss : std::uint8_t { Final, Reconnect };
    OnLoss on_loss = OnLoss::Final;
    // Whether the peer's REPLY must come within connect_timeout (its event
    // thread answers at once) or may take as long as it needs (the peer
    // answers from its progress loop, maybe after a long compute phase; a
    // dead peer then shows as the socket breaking).
    bool reply_deadline = true;
};

class ConnectionFsm {
  public:
    enum class Action : std::uint8_t {
        None,
        Connect,      // open a new outgoing connection (and send our HELLO)
        Flush,        // connected: write what is queued
        Lost,         // the link broke: fail or requeue what was queued, tell the owner
        Unreachable,  // every attempt failed: queued messages fail, tell the owner
        Forget,       // the peer said BYE (Final rules): queued messages fail, tell no one
    };
    enum class Incoming : std::uint8_t { Adopt, Refuse };

    ConnectionFsm(ProcName local, ProcName remote, ConnectionRules rules,
                  plugin::common::LogSink& log, std::string_view what) noexcept;

    [[nodiscard]] ConnState state() const noexcept { return state_; }
    // Not Failed or Gone: the link may still carry messages.
    [[nodiscard]] bool usable() const noexcept {
        return state_ != ConnState::Failed && state_ != ConnState::Gone;
    }
    [[nodiscard]] bool connected() const noexcept { return state_ == ConnState::Connected; }
    // Our own attempt is under way (Connecting or HelloSent).
    [[nodiscard]] bool connecting() const noexcept {
        return state_ == ConnState::Connecting || state_ == ConnState::HelloSent;
    }
    [[nodiscard]] Micros deadline() const noexcept { return deadline_; }
    [[nodiscard]] unsigned attempts() const noexcept { return attempts_; }

    // A message is queued: connect when there is nothing under way.
    Action on_send(Micros now) noexcept;
    // Our outgoing TCP connect completed; our HELLO goes out.
    void on_tcp_connected() noexcept;
    // The peer's authentic REPLY arrived on our connection (our CONFIRM goes out).
    Action on_answered() noexcept;
    // Our attempt failed (refused, reset, bad handshake, closed) before its REPLY.
    Action on_attempt_failed(Micros now) noexcept;
    // An authentic HELLO arrived on a connection the peer opened to us.
    // `may_replace`: it may replace an established connection (the peer
    // says it lost it, and the component's own conditions hold).
    Incoming on_incoming_hello(bool may_replace) noexcept;
    // The peer's CONFIRM arrived on the adopted connection.
    Action on_confirmed() noexcept;
    // The adopted connection closed before its CONFIRM: nothing was carried.
    void on_unconfirmed() noexcept;
    // The established connection closed before a single message went either
    // way (the peer gave up on an attempt we adopted late): not a loss.
    void on_abandoned() noexcept;
    // The established link broke; `bye`: the peer said it was leaving.
    Action on_connection_lost(bool bye) noexcept;
    // The owner stops (fault injection, finalize): stop for good.
    Action on_shutdown() noexcept;
    // Drive timers; call when now >= deadline(). `queued`: messages wait.
    Action on_timer(Micros now, bool queued) noexcept;

  private:
    void transition(ConnState to, const char* reason) noexcept;
    Action connect(Micros now, const char* reason) noexcept;
    Action retry_or_give_up(Micros now, ConnState wait, const char* reason) noexcept;

    ProcName local_;
    ProcName remote_;
    ConnectionRules rules_;
    plugin::common::LogSink* log_;
    std::string_view what_;  // "endpoint", "peer": for the log
    ConnState state_ = ConnState::Idle;
    Micros deadline_ = plugin::common::kNever;
    unsigned attempts_ = 0;
};

}  // namespace plugin::common::net
