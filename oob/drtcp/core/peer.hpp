// oob drtcp: the connection state machine of one peer process (sans I/O).
// The adapter owns the sockets and asks this machine what to do at each
// event; time comes in as `now`.
//
//   Unconnected ──send──▶ Connecting ──tcp up──▶ ConnectAck ──handshake──▶ Connected
//        ▲                    │                       │                          │
//        │      attempt failed (refused, timeout, bad handshake)                 │ lost / BYE
//        │                    ▼                       ▼                          ▼
//        └─────────────── Closed (retry after a linear back-off) ◀───────────────┘
//                             │ `attempts` in a row failed
//                             ▼
//                           Failed (reported: FAILED_TO_CONNECT)
//
// A connection the peer opens to us is adopted in Unconnected, Closed and
// Connected (the peer saw the old one die first), and in Connecting /
// ConnectAck when the peer's name is the smaller one (both sides agree on
// which of two simultaneous connections survives); otherwise it is refused.
// A lost connection is reported (the errmgr decides: COMM_FAILED or
// LIFELINE_LOST) unless the peer said BYE; a later send connects again.
#pragma once
#include <cstdint>
#include <string_view>

#include "connect_policy.hpp"
#include "log.hpp"
#include "time.hpp"
#include "wire.hpp"

namespace oob::drtcp::core {

using plugin::common::Micros;

enum class PeerState : std::uint8_t {
    Unconnected,
    Connecting,
    ConnectAck,
    Connected,
    Closed,
    Failed,
};
std::string_view to_string(PeerState s) noexcept;
bool transition_allowed(PeerState from, PeerState to) noexcept;

using RetryPolicy = plugin::common::ConnectPolicy;
using plugin::common::retry_backoff;

class PeerFsm {
  public:
    enum class Action : std::uint8_t {
        None,
        Connect,            // open a new outgoing connection (and send our HELLO)
        Flush,              // connected: write what is queued
        ReportLost,         // the connection broke: tell the errmgr
        ReportUnreachable,  // every attempt failed: FAILED_TO_CONNECT, queued messages fail
    };
    enum class Incoming : std::uint8_t { Adopt, Refuse };

    PeerFsm(ProcName local, ProcName remote, RetryPolicy policy,
            plugin::common::LogSink& log) noexcept;

    [[nodiscard]] PeerState state() const noexcept { return state_; }
    [[nodiscard]] bool connected() const noexcept { return state_ == PeerState::Connected; }
    [[nodiscard]] Micros deadline() const noexcept { return deadline_; }
    [[nodiscard]] unsigned attempts() const noexcept { return attempts_; }

    // A message is queued for this peer.
    Action on_send(Micros now) noexcept;
    // Our outgoing TCP connect completed (our HELLO is on its way).
    void on_tcp_connected() noexcept;
    // The handshake on our outgoing connection completed (the peer's REPLY checked).
    Action on_outgoing_connect() noexcept;
    // The handshake on a connection the peer opened to us completed (CONFIRM checked).
    Incoming on_incoming_connect() noexcept;
    // Our outgoing attempt failed (refused, reset, bad handshake) before it completed.
    Action on_attempt_failed(Micros now) noexcept;
    // The established connection broke; `bye`: the peer said it was leaving.
    Action on_connection_lost(bool bye) noexcept;
    // Timers: call when now >= deadline(); `queued`: messages wait for this peer.
    Action on_timer(Micros now, bool queued) noexcept;

  private:
    void transition(PeerState to, const char* reason) noexcept;
    Action retry_or_fail(Micros now, const char* reason) noexcept;

    ProcName local_;
    ProcName remote_;
    RetryPolicy policy_;
    plugin::common::LogSink* log_;
    PeerState state_ = PeerState::Unconnected;
    Micros deadline_ = plugin::common::kNever;
    unsigned attempts_ = 0;
};

}  // namespace oob::drtcp::core
