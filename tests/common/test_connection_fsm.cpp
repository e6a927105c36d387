// The shared connection layer's sans-I/O parts: the connection state machine
// under both components' rules (names, the drawn edges only, simultaneous
// connects resolved alike on both sides, random event sequences that never
// take an undrawn edge) and the bound on unidentified accepted connections.
// The components' own rules are tested in tests/btl_drtcp/test_endpoint.cpp
// and tests/oob_drtcp/test_peer.cpp.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "connection_fsm.hpp"
#include "half_open.hpp"

namespace {

using namespace plugin::common::net;
using plugin::common::ConnectPolicy;
using plugin::common::kMillis;
using plugin::common::Micros;
using plugin::common::NullLogSink;
using plugin::common::ProcName;
using Action = ConnectionFsm::Action;
using Incoming = ConnectionFsm::Incoming;
using OnLoss = ConnectionRules::OnLoss;

ConnectionRules rules(OnLoss loss, bool reply_deadline) {
    ConnectPolicy p;
    p.connect_timeout = 1000 * kMillis;
    p.retry_delay = 10 * kMillis;
    p.attempts = 3;
    return {p, loss, reply_deadline};
}

constexpr ProcName kSmall{1, 0};
constexpr ProcName kLarge{1, 1};

TEST(ConnectionFsm, EveryStateHasAName) {
    std::set<std::string_view> names;
    for (int s = 0; s < kConnStates; ++s) {
        const auto n = to_string(static_cast<ConnState>(s));
        EXPECT_NE(n, "?");
        names.insert(n);
    }
    EXPECT_EQ(names.size(), static_cast<std::size_t>(kConnStates));
}

TEST(ConnectionFsm, TheTableHasOnlyTheDrawnEdges) {
    using S = ConnState;
    EXPECT_TRUE(transition_allowed(S::Idle, S::Connecting));
    EXPECT_FALSE(transition_allowed(S::Idle, S::HelloSent));
    EXPECT_FALSE(transition_allowed(S::Idle, S::Connected));  // CONFIRM first
    EXPECT_TRUE(transition_allowed(S::Idle, S::ConfirmWait));
    EXPECT_TRUE(transition_allowed(S::HelloSent, S::AwaitPeer));
    EXPECT_FALSE(transition_allowed(S::HelloSent, S::Connecting));
    EXPECT_TRUE(transition_allowed(S::ConfirmWait, S::Connected));
    EXPECT_FALSE(transition_allowed(S::ConfirmWait, S::Connecting));
    EXPECT_FALSE(transition_allowed(S::Connected, S::Connecting));
    EXPECT_FALSE(transition_allowed(S::Connected, S::Unreachable));
    EXPECT_TRUE(transition_allowed(S::Unreachable, S::Connecting));
    EXPECT_FALSE(transition_allowed(S::Unreachable, S::Idle));
    EXPECT_FALSE(transition_allowed(S::Failed, S::Gone));
    for (int s = 0; s < kConnStates; ++s) {
        EXPECT_FALSE(transition_allowed(S::Failed, static_cast<S>(s)));
        EXPECT_FALSE(transition_allowed(S::Gone, static_cast<S>(s)));
    }
}

TEST(ConnectionFsm, ExactlyOneSideKeepsItsOwnConnection) {
    const ProcName names[] = {{1, 0}, {1, 1}, {1, 7}, {2, 0}, {0xFFFFFFFFu, 3}};
    for (const ProcName a : names)
        for (const ProcName b : names)
            if (!(a == b)) {
                EXPECT_NE(keep_outgoing(a, b), keep_outgoing(b, a))
                    << a.jobid << "." << a.vpid << " vs " << b.jobid << "." << b.vpid;
            }
}

// Both sides connect at once under either rules: the smaller name's
// connection survives on both, and each side ends Connected.
TEST(ConnectionFsm, SimultaneousConnectsSettleOnOneConnection) {
    for (const OnLoss loss : {OnLoss::Final, OnLoss::Reconnect}) {
        ConnectionFsm small(kSmall, kLarge, rules(loss, true), NullLogSink::instance(), "t");
        ConnectionFsm large(kLarge, kSmall, rules(loss, true), NullLogSink::instance(), "t");
        ASSERT_EQ(small.on_send(0), Action::Connect);
        ASSERT_EQ(large.on_send(0), Action::Connect);
        small.on_tcp_connected();
        large.on_tcp_connected();
        EXPECT_EQ(small.on_incoming_hello(false), Incoming::Refuse);
        EXPECT_EQ(large.on_incoming_hello(false), Incoming::Adopt);
        EXPECT_EQ(large.on_attempt_failed(1), Action::None);  // its own, refused
        EXPECT_EQ(large.state(), ConnState::ConfirmWait);
        EXPECT_EQ(small.on_answered(), Action::Flush);
        EXPECT_EQ(large.on_confirmed(), Action::Flush);
        EXPECT_TRUE(small.connected());
        EXPECT_TRUE(large.connected());
    }
}

TEST(ConnectionFsm, TheReplyDeadlineIsTheRulesChoice) {
    ConnectionFsm timed(kSmall, kLarge, rules(OnLoss::Reconnect, true), NullLogSink::instance(),
                        "t");
    ConnectionFsm patient(kSmall, kLarge, rules(OnLoss::Final, false), NullLogSink::instance(),
                          "t");
    timed.on_send(0);
    patient.on_send(0);
    timed.on_tcp_connected();
    patient.on_tcp_connected();
    EXPECT_EQ(timed.deadline(), 1000 * kMillis);
    EXPECT_EQ(patient.deadline(), plugin::common::kNever);
    EXPECT_EQ(timed.on_timer(timed.deadline(), true), Action::None);
    EXPECT_EQ(timed.state(), ConnState::RetryWait);
}

// Random events under both rules never take an edge the table does not
// draw, never leave Failed or Gone, and a deadline is set exactly while
// something is due.
TEST(ConnectionFsm, RandomEventsTakeOnlyDrawnEdges) {
    for (const bool final_loss : {true, false})
        for (unsigned seed = 1; seed <= 200; ++seed) {
            std::mt19937 rng(seed);
            const ProcName me = seed % 2 ? kSmall : kLarge;
            const ProcName peer = seed % 2 ? kLarge : kSmall;
            ConnectionFsm f(me, peer,
                            rules(final_loss ? OnLoss::Final : OnLoss::Reconnect, seed % 3 != 0),
                            NullLogSink::instance(), "t");
            Micros now = 0;
            for (int step = 0; step < 200; ++step) {
                const ConnState before = f.state();
                now += rng() % 2000 * kMillis / 10;
                switch (rng() % 12) {
                    case 0:
                        (void)f.on_send(now);
                        break;
                    case 1:
                        f.on_tcp_connected();
                        break;
                    case 2:
                        (void)f.on_answered();
                        break;
                    case 3:
                        (void)f.on_attempt_failed(now);
                        break;
                    case 4:
                        (void)f.on_incoming_hello(rng() % 2 == 0);
                        break;
                    case 5:
                        (void)f.on_confirmed();
                        break;
                    case 6:
                        f.on_unconfirmed();
                        break;
                    case 7:
                        f.on_abandoned();
                        break;
                    case 8:
                        (void)f.on_connection_lost(rng() % 2 == 0);
                        break;
                    case 9:
                        if (rng() % 8 == 0)
                            (void)f.on_shutdown();
                        break;
                    default:
                        if (now >= f.deadline())
                            (void)f.on_timer(now, rng() % 4 != 0);
                        break;
                }
                const ConnState after = f.state();
                ASSERT_TRUE(after == before || transition_allowed(before, after))
                    << to_string(before) << " -> " << to_string(after) << " seed " << seed;
                if (before == ConnState::Failed || before == ConnState::Gone) {
                    ASSERT_EQ(after, before);
                }
                if (!final_loss) {
                    ASSERT_NE(after, ConnState::Gone);
                }
                const bool waiting = after == ConnState::Connecting ||
                                     after == ConnState::RetryWait || after == ConnState::AwaitPeer;
                if (waiting) {
                    ASSERT_NE(f.deadline(), plugin::common::kNever) << to_string(after);
                }
                if (after == ConnState::Idle || after == ConnState::Connected ||
                    after == ConnState::Failed || after == ConnState::Unreachable) {
                    ASSERT_EQ(f.deadline(), plugin::common::kNever) << to_string(after);
                }
            }
        }
}

TEST(HalfOpenSet, TheOldestGoesWhenFullAndLateOnesAreNamed) {
    HalfOpenSet<int> set(100, 3);
    EXPECT_FALSE(set.evict_for_new().has_value());
    set.enter(1, 0);
    set.enter(2, 10);
    set.enter(3, 20);
    ASSERT_TRUE(set.evict_for_new().has_value());
    EXPECT_EQ(*set.evict_for_new(), 1);
    set.leave(1);
    set.enter(4, 30);
    EXPECT_EQ(set.size(), 3u);
    EXPECT_EQ(set.next_deadline(), 110);
    EXPECT_TRUE(set.overdue(109).empty());
    EXPECT_EQ(set.overdue(120), (std::vector<int>{2, 3}));
    set.leave(2);  // identified
    set.leave(2);  // twice is harmless
    EXPECT_FALSE(set.contains(2));
    EXPECT_TRUE(set.contains(3));
    EXPECT_EQ(set.next_deadline(), 120);
}

TEST(HalfOpenSet, NoTimeoutMeansNoDeadline) {
    HalfOpenSet<int> set(0);
    set.enter(7, 5);
    EXPECT_EQ(set.next_deadline(), plugin::common::kNever);
    EXPECT_TRUE(set.overdue(plugin::common::kNever - 1).empty());
    for (int i = 0; i < 63; ++i)
        set.enter(100 + i, 6);
    EXPECT_EQ(set.evict_for_new(), std::optional<int>(7));
}

}  // namespace
