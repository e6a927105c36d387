// oob drtcp peers on the shared connection state machine under oob drtcp's
// rules: connect, handshake, a loss reported and reconnected later, retries
// with back-off, giving up and starting over, the handshake's deadline, and
// simultaneous connects resolved alike on both sides.
#include <gtest/gtest.h>

#include "peer.hpp"
#include "wire.hpp"

namespace {

using namespace oob::drtcp::core;
using A = ConnectionFsm::Action;
using Incoming = ConnectionFsm::Incoming;
using plugin::common::kMillis;
using plugin::common::NullLogSink;

ConnectPolicy policy() {
    ConnectPolicy p;
    p.connect_timeout = 1000 * kMillis;
    p.retry_delay = 100 * kMillis;
    p.attempts = 3;
    return p;
}

TEST(OobPeer, ConnectsAndReportsALostConnection) {
    ConnectionFsm f({1, 0}, {1, 1}, peer_rules(policy()), NullLogSink::instance(), "peer");
    EXPECT_EQ(f.on_send(0), A::Connect);
    EXPECT_EQ(f.on_send(1), A::None);  // already on its way
    f.on_tcp_connected();
    EXPECT_EQ(f.state(), ConnState::HelloSent);
    EXPECT_EQ(f.on_answered(), A::Flush);
    EXPECT_TRUE(f.connected());
    EXPECT_EQ(f.on_connection_lost(false), A::Lost);
    EXPECT_EQ(f.state(), ConnState::Idle);
    EXPECT_EQ(f.on_send(10), A::Connect);  // a later message connects again
}

TEST(OobPeer, ByeIsNoFailure) {
    ConnectionFsm f({1, 0}, {1, 1}, peer_rules(policy()), NullLogSink::instance(), "peer");
    EXPECT_EQ(f.on_incoming_hello(false), Incoming::Adopt);
    EXPECT_EQ(f.on_confirmed(), A::Flush);
    EXPECT_EQ(f.on_connection_lost(true), A::None);
    EXPECT_EQ(f.state(), ConnState::Idle);  // a later message connects again
}

TEST(OobPeer, RetriesWithBackoffThenGivesUp) {
    ConnectionFsm f({1, 0}, {1, 1}, peer_rules(policy()), NullLogSink::instance(), "peer");
    EXPECT_EQ(f.on_send(0), A::Connect);
    EXPECT_EQ(f.on_attempt_failed(5), A::None);  // attempt 1 refused
    EXPECT_EQ(f.state(), ConnState::RetryWait);
    EXPECT_EQ(f.deadline(), 5 + 100 * kMillis);
    EXPECT_EQ(f.on_send(6), A::None);  // waits for the back-off
    EXPECT_EQ(f.on_timer(f.deadline() - 1, true), A::None);
    EXPECT_EQ(f.on_timer(f.deadline(), true), A::Connect);  // attempt 2
    // Attempt 2 hears nothing: the connect timeout counts as a failure.
    EXPECT_EQ(f.on_timer(f.deadline(), true), A::None);
    EXPECT_EQ(f.attempts(), 2u);
    EXPECT_EQ(f.on_timer(f.deadline(), true), A::Connect);  // attempt 3
    EXPECT_EQ(f.on_attempt_failed(99 * kMillis), A::Unreachable);
    EXPECT_EQ(f.state(), ConnState::Unreachable);
    // Asked anew, it starts over.
    EXPECT_EQ(f.on_send(100 * kMillis), A::Connect);
    EXPECT_EQ(f.attempts(), 1u);
}

TEST(OobPeer, SimultaneousConnectsKeepTheSmallerNamesConnection) {
    const ProcName a{1, 1}, b{1, 2};
    ConnectionFsm at_a(a, b, peer_rules(policy()), NullLogSink::instance(), "peer");
    ConnectionFsm at_b(b, a, peer_rules(policy()), NullLogSink::instance(), "peer");
    ASSERT_EQ(at_a.on_send(0), A::Connect);
    ASSERT_EQ(at_b.on_send(0), A::Connect);
    at_a.on_tcp_connected();
    at_b.on_tcp_connected();
    // a's connection reaches b, b's reaches a.
    EXPECT_EQ(at_b.on_incoming_hello(false), Incoming::Adopt);   // opened by a (smaller)
    EXPECT_EQ(at_a.on_incoming_hello(false), Incoming::Refuse);  // opened by b
    EXPECT_EQ(at_a.on_answered(), A::Flush);                     // a's own survives
    EXPECT_EQ(at_b.on_confirmed(), A::Flush);
    EXPECT_TRUE(at_a.connected());
    EXPECT_TRUE(at_b.connected());
}

TEST(OobPeer, AReconnectingPeerReplacesTheConnectionAndTheHandshakeHasADeadline) {
    ConnectionFsm f({1, 0}, {1, 1}, peer_rules(policy()), NullLogSink::instance(), "peer");
    EXPECT_EQ(f.on_send(0), A::Connect);
    f.on_tcp_connected();
    EXPECT_EQ(f.deadline(), 1000 * kMillis);  // the whole handshake within connect_timeout
    EXPECT_EQ(f.on_answered(), A::Flush);
    // The peer saw the old connection die first and says so.
    EXPECT_EQ(f.on_incoming_hello(true), Incoming::Adopt);
    EXPECT_EQ(f.on_send(1), A::None);  // its connection will carry them
    EXPECT_EQ(f.on_confirmed(), A::Flush);
    EXPECT_TRUE(f.connected());
}

TEST(OobPeer, ABackOffWithNothingQueuedWaitsForTheNextMessage) {
    ConnectionFsm f({1, 0}, {1, 1}, peer_rules(policy()), NullLogSink::instance(), "peer");
    EXPECT_EQ(f.on_send(0), A::Connect);
    EXPECT_EQ(f.on_attempt_failed(1), A::None);
    EXPECT_EQ(f.on_timer(f.deadline(), false), A::None);
    EXPECT_EQ(f.state(), ConnState::Idle);
    EXPECT_EQ(f.on_send(2), A::Connect);
    EXPECT_EQ(f.attempts(), 2u);  // still counted against the limit
}

}  // namespace
