// btl drtcp: what a link means for one endpoint (local module × remote
// process). The state machine is the shared one (plugin/common/net/
// connection_fsm.hpp); these are btl drtcp's rules for it.
//
// - A loss is final. An established connection that broke, attempts
//   exhausted, or the module shutting down fail the endpoint: its queued
//   frames complete in error and pml dr is told once, so it fails over. A
//   fresh connection could not know what the broken one lost. BYE (the peer
//   is finalizing) ends the endpoint quietly (Gone).
// - Our HELLO's REPLY has no deadline: the peer answers from its progress
//   loop, which may be much later (a long compute phase). A dead peer shows
//   as the socket breaking (reset, or keepalive with btl_drtcp_user_timeout).
//   Connecting has btl_drtcp_connect_timeout.
// - The peer's HELLO replaces an established connection only when it says
//   reconnect and that connection carried nothing either way (the adapter
//   decides `may_replace`); a connection that closes before carrying a
//   single frame returns the endpoint to Idle (on_abandoned), not Failed.
#pragma once
#include "connection_fsm.hpp"

namespace btl::drtcp::core {

using plugin::common::ConnectPolicy;
using plugin::common::Micros;
using plugin::common::retry_backoff;
using plugin::common::net::ConnectionFsm;
using plugin::common::net::ConnectionRules;
using plugin::common::net::ConnState;

constexpr ConnectionRules endpoint_rules(ConnectPolicy connect) noexcept {
    return {connect, ConnectionRules::OnLoss::Final, /*reply_deadline=*/false};
}

// The endpoint failed (not merely ended by the peer's BYE): pml dr is told.
constexpr bool reports_failure(ConnectionFsm::Action a) noexcept {
    return a == ConnectionFsm::Action::Lost || a == ConnectionFsm::Action::Unreachable;
}

}  // namespace btl::drtcp::core
