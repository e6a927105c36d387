// drtcp endpoints on the shared connection state machine under btl drtcp's
// rules: first frame connects, the handshake settles the connection (an
// adopted one waits for the CONFIRM), simultaneous connects keep exactly one
// (the smaller name's), failed attempts retry with linear back-off up to the
// limit and then fail for good, the REPLY has no deadline, a broken
// established connection fails for good, BYE is not a failure.
#include <gtest/gtest.h>

#include "endpoint.hpp"
#include "wire.hpp"

namespace {

using namespace btl::drtcp::core;
using Action = ConnectionFsm::Action;
using Incoming = ConnectionFsm::Incoming;
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
    ConnectionFsm e(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    EXPECT_EQ(e.on_send(0), Action::Connect);
    EXPECT_EQ(e.state(), ConnState::Connecting);
    EXPECT_EQ(e.deadline(), 1000 * kMillis);
    EXPECT_EQ(e.on_send(5), Action::None);
    e.on_tcp_connected();
    EXPECT_EQ(e.state(), ConnState::HelloSent);
    e.on_answered();
    EXPECT_TRUE(e.connected());
    EXPECT_EQ(e.deadline(), kNever);
    EXPECT_EQ(e.on_incoming_hello(false), Incoming::Refuse);  // one connection only
}

TEST(DrtcpEndpoint, SimultaneousConnectKeepsTheSmallerNamesConnection) {
    // Both sides are mid-attempt when the other's HELLO arrives.
    ConnectionFsm small(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(),
                        "endpoint");
    ConnectionFsm large(kLarge, kSmall, endpoint_rules(policy()), NullLogSink::instance(),
                        "endpoint");
    small.on_send(0);
    large.on_send(0);
    small.on_tcp_connected();
    large.on_tcp_connected();
    EXPECT_EQ(small.on_incoming_hello(false), Incoming::Refuse);
    EXPECT_EQ(large.on_incoming_hello(false), Incoming::Adopt);
    EXPECT_EQ(large.state(), ConnState::ConfirmWait);
    EXPECT_FALSE(large.connected());  // no frame before the peer's CONFIRM
    // The large side's refused attempt closes; nothing to do but wait for the CONFIRM.
    EXPECT_EQ(large.on_attempt_failed(2), Action::None);
    small.on_answered();
    EXPECT_TRUE(small.connected());
    large.on_confirmed();
    EXPECT_TRUE(large.connected());
}

TEST(DrtcpEndpoint, LargerNameWaitsForThePeersConnectionThenRetries) {
    ConnectionFsm large(kLarge, kSmall, endpoint_rules(policy()), NullLogSink::instance(),
                        "endpoint");
    large.on_send(0);
    large.on_tcp_connected();
    EXPECT_EQ(large.on_attempt_failed(2), Action::None);
    EXPECT_EQ(large.state(), ConnState::AwaitPeer);
    EXPECT_EQ(large.on_timer(large.deadline() - 1, true), Action::None);
    EXPECT_EQ(large.on_timer(large.deadline(), true), Action::Connect);
    EXPECT_EQ(large.attempts(), 2u);
}

TEST(DrtcpEndpoint, FailedAttemptsBackOffLinearlyThenFail) {
    ConnectionFsm e(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    Micros now = 0;
    EXPECT_EQ(e.on_send(now), Action::Connect);
    for (unsigned attempt = 1; attempt < 3; ++attempt) {
        EXPECT_EQ(e.on_attempt_failed(now), Action::None);
        EXPECT_EQ(e.state(), ConnState::RetryWait);
        EXPECT_EQ(e.deadline() - now, retry_backoff(policy(), attempt));
        now = e.deadline();
        EXPECT_EQ(e.on_timer(now, true), Action::Connect);
    }
    // A silent attempt times out like a refused one.
    now = e.deadline();
    EXPECT_EQ(e.on_timer(now, true), Action::Unreachable);
    EXPECT_EQ(e.state(), ConnState::Failed);
    EXPECT_EQ(e.on_send(now), Action::None);
    EXPECT_FALSE(e.usable());
}

TEST(DrtcpEndpoint, IncomingAdoptedWhileWaitingToRetry) {
    ConnectionFsm e(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    e.on_send(0);
    e.on_attempt_failed(1);
    EXPECT_EQ(e.on_incoming_hello(false), Incoming::Adopt);
    e.on_confirmed();
    EXPECT_TRUE(e.connected());
    EXPECT_EQ(e.on_timer(1'000'000'000, true), Action::None);
}

TEST(DrtcpEndpoint, AnUnconfirmedAdoptionReturnsToClosedAndANewerHelloReplacesIt) {
    ConnectionFsm e(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    EXPECT_EQ(e.on_incoming_hello(false), Incoming::Adopt);
    EXPECT_EQ(e.state(), ConnState::ConfirmWait);
    EXPECT_EQ(e.on_send(0), Action::None);  // frames wait for the CONFIRM
    // The peer opened a newer connection: it replaces the pending one.
    EXPECT_EQ(e.on_incoming_hello(false), Incoming::Adopt);
    EXPECT_EQ(e.state(), ConnState::ConfirmWait);
    e.on_unconfirmed();
    EXPECT_EQ(e.state(), ConnState::Idle);
    EXPECT_TRUE(e.usable());
    EXPECT_EQ(e.on_send(1), Action::Connect);
}

TEST(DrtcpEndpoint, AnEstablishedConnectionIsReplacedOnlyWithAReconnectReason) {
    ConnectionFsm e(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    e.on_send(0);
    e.on_tcp_connected();
    e.on_answered();
    ASSERT_TRUE(e.connected());
    EXPECT_EQ(e.on_incoming_hello(false), Incoming::Refuse);
    EXPECT_TRUE(e.connected());
    EXPECT_EQ(e.on_incoming_hello(true), Incoming::Adopt);
    EXPECT_EQ(e.state(), ConnState::ConfirmWait);
}

TEST(DrtcpEndpoint, LossIsFinalByeIsQuiet) {
    ConnectionFsm a(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    EXPECT_EQ(a.on_incoming_hello(false), Incoming::Adopt);
    a.on_confirmed();
    EXPECT_EQ(a.on_connection_lost(false), Action::Lost);
    EXPECT_EQ(a.state(), ConnState::Failed);
    EXPECT_EQ(a.on_connection_lost(false), Action::None);  // reported once
    EXPECT_EQ(a.on_incoming_hello(false), Incoming::Refuse);

    ConnectionFsm b(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    b.on_incoming_hello(false);
    b.on_confirmed();
    EXPECT_EQ(b.on_connection_lost(true), Action::Forget);
    EXPECT_EQ(b.state(), ConnState::Gone);
    EXPECT_EQ(b.on_shutdown(), Action::None);
}

TEST(DrtcpEndpoint, TheReplyHasNoDeadline) {
    ConnectionFsm e(kSmall, kLarge, endpoint_rules(policy()), NullLogSink::instance(), "endpoint");
    e.on_send(0);
    EXPECT_EQ(e.deadline(), policy().connect_timeout);  // connecting has one
    e.on_tcp_connected();
    EXPECT_EQ(e.state(), ConnState::HelloSent);
    EXPECT_EQ(e.deadline(), kNever);  // the peer may be computing
}

}  // namespace
