// oob drtcp peer state machine: connect, handshake, loss, retries with
// back-off, giving up, and simultaneous connects resolved alike on both sides.
#include <gtest/gtest.h>

#include "peer.hpp"

namespace {

using namespace oob::drtcp::core;
using A = PeerFsm::Action;
using plugin::common::kMillis;
using plugin::common::NullLogSink;

RetryPolicy policy() {
    RetryPolicy p;
    p.connect_timeout = 1000 * kMillis;
    p.retry_delay = 100 * kMillis;
    p.attempts = 3;
    return p;
}

TEST(OobPeer, ConnectsAndReportsALostConnection) {
    PeerFsm f({1, 0}, {1, 1}, policy(), NullLogSink::instance());
    EXPECT_EQ(f.on_send(0), A::Connect);
    EXPECT_EQ(f.on_send(1), A::None);  // already on its way
    f.on_tcp_connected();
    EXPECT_EQ(f.state(), PeerState::ConnectAck);
    EXPECT_EQ(f.on_outgoing_connect(), A::Flush);
    EXPECT_TRUE(f.connected());
    EXPECT_EQ(f.on_connection_lost(false), A::ReportLost);
    EXPECT_EQ(f.state(), PeerState::Closed);
    EXPECT_EQ(f.on_send(10), A::Connect);  // a later message connects again
}

TEST(OobPeer, ByeIsNoFailure) {
    PeerFsm f({1, 0}, {1, 1}, policy(), NullLogSink::instance());
    EXPECT_EQ(f.on_incoming_connect(), PeerFsm::Incoming::Adopt);
    EXPECT_EQ(f.on_connection_lost(true), A::None);
}

TEST(OobPeer, RetriesWithBackoffThenGivesUp) {
    PeerFsm f({1, 0}, {1, 1}, policy(), NullLogSink::instance());
    EXPECT_EQ(f.on_send(0), A::Connect);
    EXPECT_EQ(f.on_attempt_failed(5), A::None);  // attempt 1 refused
    EXPECT_EQ(f.state(), PeerState::Closed);
    EXPECT_EQ(f.deadline(), 5 + 100 * kMillis);
    EXPECT_EQ(f.on_send(6), A::None);  // waits for the back-off
    EXPECT_EQ(f.on_timer(f.deadline() - 1, true), A::None);
    EXPECT_EQ(f.on_timer(f.deadline(), true), A::Connect);  // attempt 2
    // Attempt 2 hears nothing: the connect timeout counts as a failure.
    EXPECT_EQ(f.on_timer(f.deadline(), true), A::None);
    EXPECT_EQ(f.attempts(), 2u);
    EXPECT_EQ(f.on_timer(f.deadline(), true), A::Connect);  // attempt 3
    EXPECT_EQ(f.on_attempt_failed(99 * kMillis), A::ReportUnreachable);
    EXPECT_EQ(f.state(), PeerState::Failed);
    // Asked anew, it starts over.
    EXPECT_EQ(f.on_send(100 * kMillis), A::Connect);
    EXPECT_EQ(f.attempts(), 1u);
}

TEST(OobPeer, SimultaneousConnectsKeepTheSmallerNamesConnection) {
    const ProcName a{1, 1}, b{1, 2};
    PeerFsm at_a(a, b, policy(), NullLogSink::instance());
    PeerFsm at_b(b, a, policy(), NullLogSink::instance());
    ASSERT_EQ(at_a.on_send(0), A::Connect);
    ASSERT_EQ(at_b.on_send(0), A::Connect);
    at_a.on_tcp_connected();
    at_b.on_tcp_connected();
    // a's connection reaches b, b's reaches a.
    EXPECT_EQ(at_b.on_incoming_connect(), PeerFsm::Incoming::Adopt);   // opened by a (smaller)
    EXPECT_EQ(at_a.on_incoming_connect(), PeerFsm::Incoming::Refuse);  // opened by b
    EXPECT_EQ(at_a.on_outgoing_connect(), A::Flush);                   // a's own survives
    EXPECT_TRUE(at_a.connected());
    EXPECT_TRUE(at_b.connected());
}

TEST(OobPeer, EveryStateHasANameAndIllegalMovesAreRefused) {
    for (auto s : {PeerState::Unconnected, PeerState::Connecting, PeerState::ConnectAck,
                   PeerState::Connected, PeerState::Closed, PeerState::Failed})
        EXPECT_NE(to_string(s), "?");
    EXPECT_FALSE(transition_allowed(PeerState::Connected, PeerState::ConnectAck));
    EXPECT_FALSE(transition_allowed(PeerState::Unconnected, PeerState::Failed));
    PeerFsm f({1, 0}, {1, 1}, policy(), NullLogSink::instance());
    EXPECT_EQ(f.on_outgoing_connect(), A::None);  // no attempt under way
    EXPECT_EQ(f.on_connection_lost(false), A::None);
    EXPECT_EQ(f.state(), PeerState::Unconnected);
}

}  // namespace
