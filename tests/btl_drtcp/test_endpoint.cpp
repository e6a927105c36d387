// drtcp endpoint state machine: first frame connects, the handshake settles
// the connection (an adopted one waits for the CONFIRM), simultaneous connects keep exactly one
// (the smaller name's), failed attempts retry with linear back-off up to the limit, a broken
// established connection fails for good, BYE is not a failure.
#include <gtest/gtest.h>

#include "endpoint.hpp"

namespace {

using namespace btl::drtcp::core;
using Action = EndpointFsm::Action;
using plugin::common::kMillis;
using plugin::common::kNever;
using plugin::common::NullLogSink;

constexpr ProcName kSmall{1, 0};
constexpr ProcName kLarge{1, 1};

ConnectPolicy policy() {
    ConnectPolicy p;
    p.connect_timeout = 1000 * kMillis;
    p.retry_delay = 10 * kMillis;
    p.attempts = 3;
    return p;
}

TEST(DrtcpEndpoint, ConnectsOnFirstFrameOnly) {
    EndpointFsm e(kSmall, kLarge, policy(), NullLogSink::instance());
    EXPECT_EQ(e.on_send(0), Action::Connect);
    EXPECT_EQ(e.state(), EpState::Connecting);
    EXPECT_EQ(e.deadline(), 1000 * kMillis);
    EXPECT_EQ(e.on_send(5), Action::None);
    e.on_tcp_connected(10);
    EXPECT_EQ(e.state(), EpState::HelloWait);
    e.on_outgoing_reply();
    EXPECT_TRUE(e.connected());
    EXPECT_EQ(e.deadline(), kNever);
    EXPECT_EQ(e.on_incoming_hello(), EndpointFsm::Incoming::Refuse);  // one connection only
}

TEST(DrtcpEndpoint, SimultaneousConnectKeepsTheSmallerNamesConnection) {
    // Both sides are mid-attempt when the other's HELLO arrives.
    EndpointFsm small(kSmall, kLarge, policy(), NullLogSink::instance());
    EndpointFsm large(kLarge, kSmall, policy(), NullLogSink::instance());
    small.on_send(0);
    large.on_send(0);
    small.on_tcp_connected(1);
    large.on_tcp_connected(1);
    EXPECT_EQ(small.on_incoming_hello(), EndpointFsm::Incoming::Refuse);
    EXPECT_EQ(large.on_incoming_hello(), EndpointFsm::Incoming::Adopt);
    EXPECT_EQ(large.state(), EpState::ConfirmWait);
    EXPECT_FALSE(large.connected());  // no frame before the peer's CONFIRM
    // The large side's refused attempt closes; nothing to do but wait for the CONFIRM.
    EXPECT_EQ(large.on_outgoing_lost(2), Action::None);
    small.on_outgoing_reply();
    EXPECT_TRUE(small.connected());
    large.on_confirmed();
    EXPECT_TRUE(large.connected());
}

TEST(DrtcpEndpoint, LargerNameWaitsForThePeersConnectionThenRetries) {
    EndpointFsm large(kLarge, kSmall, policy(), NullLogSink::instance());
    large.on_send(0);
    large.on_tcp_connected(1);
    EXPECT_EQ(large.on_outgoing_lost(2), Action::None);
    EXPECT_EQ(large.state(), EpState::AwaitPeer);
    EXPECT_EQ(large.on_timer(large.deadline() - 1), Action::None);
    EXPECT_EQ(large.on_timer(large.deadline()), Action::Connect);
    EXPECT_EQ(large.attempts(), 2u);
}

TEST(DrtcpEndpoint, FailedAttemptsBackOffLinearlyThenFail) {
    EndpointFsm e(kSmall, kLarge, policy(), NullLogSink::instance());
    Micros now = 0;
    EXPECT_EQ(e.on_send(now), Action::Connect);
    for (unsigned attempt = 1; attempt < 3; ++attempt) {
        EXPECT_EQ(e.on_outgoing_lost(now), Action::None);
        EXPECT_EQ(e.state(), EpState::RetryWait);
        EXPECT_EQ(e.deadline() - now, retry_backoff(policy(), attempt));
        now = e.deadline();
        EXPECT_EQ(e.on_timer(now), Action::Connect);
    }
    // A silent attempt times out like a refused one.
    now = e.deadline();
    EXPECT_EQ(e.on_timer(now), Action::Fail);
    EXPECT_EQ(e.state(), EpState::Failed);
    EXPECT_EQ(e.on_send(now), Action::None);
    EXPECT_FALSE(e.usable());
}

TEST(DrtcpEndpoint, IncomingAdoptedWhileWaitingToRetry) {
    EndpointFsm e(kSmall, kLarge, policy(), NullLogSink::instance());
    e.on_send(0);
    e.on_outgoing_lost(1);
    EXPECT_EQ(e.on_incoming_hello(), EndpointFsm::Incoming::Adopt);
    e.on_confirmed();
    EXPECT_TRUE(e.connected());
    EXPECT_EQ(e.on_timer(1'000'000'000), Action::None);
}

TEST(DrtcpEndpoint, AnUnconfirmedAdoptionReturnsToClosedAndANewerHelloReplacesIt) {
    EndpointFsm e(kSmall, kLarge, policy(), NullLogSink::instance());
    EXPECT_EQ(e.on_incoming_hello(), EndpointFsm::Incoming::Adopt);
    EXPECT_EQ(e.state(), EpState::ConfirmWait);
    EXPECT_EQ(e.on_send(0), Action::None);  // frames wait for the CONFIRM
    // The peer opened a newer connection: it replaces the pending one.
    EXPECT_EQ(e.on_incoming_hello(), EndpointFsm::Incoming::Adopt);
    EXPECT_EQ(e.state(), EpState::ConfirmWait);
    e.on_unconfirmed();
    EXPECT_EQ(e.state(), EpState::Closed);
    EXPECT_TRUE(e.usable());
    EXPECT_EQ(e.on_send(1), Action::Connect);
}

TEST(DrtcpEndpoint, AnEstablishedConnectionIsReplacedOnlyWithAReconnectReason) {
    EndpointFsm e(kSmall, kLarge, policy(), NullLogSink::instance());
    e.on_send(0);
    e.on_tcp_connected(1);
    e.on_outgoing_reply();
    ASSERT_TRUE(e.connected());
    EXPECT_EQ(e.on_incoming_hello(false), EndpointFsm::Incoming::Refuse);
    EXPECT_TRUE(e.connected());
    EXPECT_EQ(e.on_incoming_hello(true), EndpointFsm::Incoming::Adopt);
    EXPECT_EQ(e.state(), EpState::ConfirmWait);
}

TEST(DrtcpEndpoint, LossIsFinalByeIsQuiet) {
    EndpointFsm a(kSmall, kLarge, policy(), NullLogSink::instance());
    EXPECT_EQ(a.on_incoming_hello(), EndpointFsm::Incoming::Adopt);
    a.on_confirmed();
    EXPECT_EQ(a.on_connection_lost(false), Action::Fail);
    EXPECT_EQ(a.state(), EpState::Failed);
    EXPECT_EQ(a.on_connection_lost(false), Action::None);  // reported once
    EXPECT_EQ(a.on_incoming_hello(), EndpointFsm::Incoming::Refuse);

    EndpointFsm b(kSmall, kLarge, policy(), NullLogSink::instance());
    b.on_incoming_hello();
    b.on_confirmed();
    EXPECT_EQ(b.on_connection_lost(true), Action::Forget);
    EXPECT_EQ(b.state(), EpState::Gone);
    EXPECT_EQ(b.on_shutdown(), Action::None);
}

TEST(DrtcpEndpoint, TransitionTableAllowsOnlyTheDrawnEdges) {
    EXPECT_TRUE(transition_allowed(EpState::Closed, EpState::Connecting));
    EXPECT_FALSE(transition_allowed(EpState::Closed, EpState::HelloWait));
    EXPECT_FALSE(transition_allowed(EpState::Connected, EpState::Connecting));
    EXPECT_FALSE(transition_allowed(EpState::Failed, EpState::Gone));
    EXPECT_TRUE(transition_allowed(EpState::HelloWait, EpState::AwaitPeer));
    EXPECT_TRUE(transition_allowed(EpState::Closed, EpState::ConfirmWait));
    EXPECT_FALSE(transition_allowed(EpState::Closed, EpState::Connected));  // CONFIRM first
    EXPECT_TRUE(transition_allowed(EpState::ConfirmWait, EpState::Connected));
    EXPECT_FALSE(transition_allowed(EpState::ConfirmWait, EpState::Connecting));
    for (int s = 0; s <= static_cast<int>(EpState::Gone); ++s)
        EXPECT_NE(to_string(static_cast<EpState>(s)), "unknown");
}

}  // namespace
