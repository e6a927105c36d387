// btl drtcp: the connection state machine of one endpoint (local module ×
// remote process), sans I/O. The adapter owns the sockets and asks this
// machine what to do at each event; time comes in as `now`.
//
//   Closed ──send──▶ Connecting ──tcp up──▶ HelloWait ──peer REPLY──▶ Connected
//      ▲                 │                      │  (HELLO sent)         │
//      │   (lost before REPLY: retry later)     │               lost    │ BYE
//      └──── RetryWait ◀─┴──────────────────────┘                 ▼     ▼
//                                                              Failed  Gone
//   An incoming connection whose HELLO is authentic (known name, right
//   MAC, new sequence) is adopted (REPLY sent) into ConfirmWait from Closed,
//   RetryWait and AwaitPeer, and from Connecting/HelloWait when the peer's
//   name is the smaller one (core::keep_outgoing); from Connected only when
//   the HELLO says reconnect and the established connection carried nothing;
//   otherwise it is refused with no reply. ConfirmWait ──CONFIRM──▶ Connected;
//   frames wait until then (a replayed HELLO never gets our data), and a
//   pending connection that closes first returns the endpoint to Closed.
//   AwaitPeer: our attempt was refused, maybe in favour of the peer's own
//   (on its way), maybe because the peer does not know us yet; if no
//   connection comes within one back-off step we try again.
//
// HelloWait has no deadline (the peer may be computing); Connecting has
// connect_timeout. A connection that closes before carrying a single frame
// returns the endpoint to Closed. Failed (a connection that had carried data
// broke, or every attempt failed) is final: pending frames complete in error and the PML is told,
// so pml dr fails over; a fresh connection could not know what the broken one lost. Gone: the peer
// said BYE (it is finalizing); nothing is reported.
#pragma once
#include <cstdint>
#include <string_view>

#include "connect_policy.hpp"
#include "log.hpp"
#include "time.hpp"
#include "wire.hpp"

namespace btl::drtcp::core {

using plugin::common::Micros;

enum class EpState : std::uint8_t {
    Closed,
    Connecting,
    HelloWait,
    ConfirmWait,
    AwaitPeer,
    RetryWait,
    Connected,
    Failed,
    Gone,
};
std::string_view to_string(EpState s) noexcept;
bool transition_allowed(EpState from, EpState to) noexcept;

using plugin::common::ConnectPolicy;
using plugin::common::retry_backoff;

class EndpointFsm {
  public:
    enum class Action : std::uint8_t {
        None,
        Connect,  // open a new outgoing connection
        Fail,     // complete pending frames in error and report the peer
        Forget,   // peer gone: complete pending frames in error, report nothing
    };
    enum class Incoming : std::uint8_t { Adopt, Refuse };

    EndpointFsm(ProcName local, ProcName remote, ConnectPolicy policy,
                plugin::common::LogSink& log) noexcept;

    [[nodiscard]] EpState state() const noexcept { return state_; }
    [[nodiscard]] bool usable() const noexcept {
        return state_ != EpState::Failed && state_ != EpState::Gone;
    }
    [[nodiscard]] bool connected() const noexcept { return state_ == EpState::Connected; }
    [[nodiscard]] Micros deadline() const noexcept { return deadline_; }
    [[nodiscard]] unsigned attempts() const noexcept { return attempts_; }

    // A frame is queued. Connect when there is no connection yet.
    Action on_send(Micros now) noexcept;
    // Our outgoing TCP connect completed: send our HELLO, wait for the reply.
    void on_tcp_connected(Micros now) noexcept;
    // The peer's authentic REPLY arrived on our outgoing connection (our
    // CONFIRM goes out, then frames).
    void on_outgoing_reply() noexcept;
    // An authentic HELLO arrived on a connection the peer opened to us.
    // `replace_idle`: the HELLO says reconnect and the established
    // connection (if any) carried nothing either way.
    Incoming on_incoming_hello(bool replace_idle = false) noexcept;
    // The peer's CONFIRM arrived on the adopted connection.
    void on_confirmed() noexcept;
    // The adopted connection closed before its CONFIRM: nothing was
    // carried; the endpoint connects again when needed.
    void on_unconfirmed() noexcept;
    // Our outgoing connection failed or closed before the peer's HELLO.
    Action on_outgoing_lost(Micros now) noexcept;
    // The established connection broke (graceful: the peer said BYE first).
    Action on_connection_lost(bool graceful) noexcept;
    // The established connection closed before a single frame went either
    // way (the peer gave up on an attempt we adopted late): nothing was lost,
    // so this is not a failure; the endpoint connects again when needed.
    void on_abandoned() noexcept;
    // The module died (fault injection, finalize): stop for good.
    Action on_shutdown() noexcept;
    // Drive timers; call when now >= deadline().
    Action on_timer(Micros now) noexcept;

  private:
    void transition(EpState to, const char* reason) noexcept;
    Action retry_or_fail(Micros now, const char* reason) noexcept;

    ProcName local_;
    ProcName remote_;
    ConnectPolicy policy_;
    plugin::common::LogSink* log_;
    EpState state_ = EpState::Closed;
    Micros deadline_ = plugin::common::kNever;
    unsigned attempts_ = 0;
};

}  // namespace btl::drtcp::core
