// oob drtcp: what a link to one peer process (a daemon, or mpirun) means.
// The state machine is the shared one (plugin/common/net/connection_fsm.hpp);
// these are oob drtcp's rules for it.
//
// - A loss is reported, and a later message connects again. A broken
//   connection is reported to ORTE (the errmgr decides: COMM_FAILED or
//   LIFELINE_LOST) unless the peer said BYE; `connect_attempts` failed
//   attempts in a row report the peer unreachable (FAILED_TO_CONNECT) and
//   its queued messages fail, and a new message starts over.
// - The whole handshake must complete within oob_drtcp_connect_timeout: the
//   peer's event thread answers at once.
// - The peer's HELLO replaces an established connection when it says it
//   lost it (the peer saw the old one die first); admission (admission.hpp)
//   has refused it before anything was answered otherwise.
#pragma once
#include "connection_fsm.hpp"

namespace oob::drtcp::core {

using plugin::common::ConnectPolicy;
using plugin::common::Micros;
using plugin::common::net::ConnectionFsm;
using plugin::common::net::ConnectionRules;
using plugin::common::net::ConnState;

constexpr ConnectionRules peer_rules(ConnectPolicy connect) noexcept {
    return {connect, ConnectionRules::OnLoss::Reconnect, /*reply_deadline=*/true};
}

}  // namespace oob::drtcp::core
