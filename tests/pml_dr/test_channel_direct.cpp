// ReliableChannel: the direct send path (submit_on + sent_inline, the
// caller transmits) and the cumulative ack_seq every frame carries (applied
// in batches, settled before anything depends on it; a frame carrying it
// makes the ACK frame unnecessary). Time is virtual.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "channel.hpp"
#include "channel_fixture.hpp"

namespace {

using namespace channel_fixture;

// What the state of a sender looks like from outside.
struct Snapshot {
    std::size_t unacked;
    std::size_t unreleased;
    std::uint64_t frames_sent;
    std::uint64_t bytes_sent;
    std::uint64_t submitted;
    Micros exact_deadline;
    std::uint32_t next_seq;
    friend bool operator==(const Snapshot&, const Snapshot&) = default;
};
Snapshot snap(const Sender& s) {
    const PeerCounters& c = *s.ch.counters(kPeer);
    return {s.ch.unacked(kPeer), s.ch.unreleased(kPeer), c.frames_sent,       c.bytes_sent,
            c.frames_submitted,  s.ch.exact_deadline(),  s.ch.next_seq(kPeer)};
}

// ---------------------------------------------------------------- direct

TEST(ChannelDirect, SubmitOnIsSubmitWithTheCallerTransmitting) {
    Sender via_output;  // submit(): the channel calls transmit(), which says "done"
    via_output.out.auto_complete = false;
    via_output.out.inline_complete = true;
    Sender direct;  // submit_on(): the caller's BTL took it at once; nothing to report
    for (FrameToken t = 1; t <= 5; ++t) {
        via_output.out.now = direct.out.now = static_cast<Micros>(10 * t);
        const std::uint32_t seq = via_output.submit(t, kP2);
        const SubmitResult r = direct.ch.submit_on(kPeer, kP2, t, direct.out.now, 100);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r.seq, seq);
        EXPECT_EQ(snap(direct), snap(via_output)) << "after frame " << t;
    }
    EXPECT_TRUE(direct.out.tx.empty()) << "submit_on hands nothing to transmit()";
    EXPECT_EQ(via_output.out.tx.size(), 5u);
    // The same ACK releases the same frames, and a lost one is resent the same way.
    via_output.ack(2, 0, bits({4}), kP2);
    direct.ack(2, 0, bits({4}), kP2);
    EXPECT_EQ(direct.out.acked_tokens, (std::vector<FrameToken>{1, 2, 4}));
    EXPECT_EQ(direct.out.acked_tokens, via_output.out.acked_tokens);
    EXPECT_EQ(direct.out.retransmitted_seqs(), (std::vector<std::uint32_t>{3}));
    EXPECT_EQ(snap(direct), snap(via_output));
}

TEST(ChannelDirect, SubmitOnRefusesAFailedPathAFullWindowAndStrangers) {
    ChannelParams p = test_params();
    Sender s(p);
    s.ch.remove_path(kPeer, kP1, 0);
    EXPECT_EQ(s.ch.submit_on(kPeer, kP1, 1, 0).status, SubmitStatus::NoPath);
    EXPECT_EQ(s.ch.submit_on(kPeer, 777, 1, 0).status, SubmitStatus::NoPath);
    EXPECT_EQ(s.ch.submit_on(42, kP2, 1, 0).status, SubmitStatus::UnknownPeer);
    for (FrameToken t = 1; t <= p.window; ++t)
        ASSERT_TRUE(s.ch.submit_on(kPeer, kP2, t, 0).ok());
    EXPECT_EQ(s.ch.submit_on(kPeer, kP2, 999, 0).status, SubmitStatus::WindowFull);
    EXPECT_EQ(s.ch.counters(kPeer)->window_full, 1u);
}

TEST(ChannelDirect, CheckSubmitOnAnswersAsSubmitOnWouldAndRecordsNothing) {
    ChannelParams p = test_params();
    Sender s(p);
    for (FrameToken t = 1; t <= p.window; ++t) {
        const Snapshot before = snap(s);
        const SubmitCheck check = s.ch.check_submit_on(kPeer, kP2);
        ASSERT_TRUE(check.ok());
        EXPECT_EQ(snap(s), before) << "checking records nothing";
        const SubmitResult r = t % 2 == 0 ? s.ch.submit_on(kPeer, kP2, t, 0)
                                          : s.ch.submit_checked(kPeer, kP2, check, t, 0);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r.seq, check.seq) << "the seq a frame sent before submit_on() went with";
    }
    EXPECT_EQ(s.ch.check_submit_on(kPeer, kP2).status, SubmitStatus::WindowFull);
    s.ch.remove_path(kPeer, kP1, 0);
    EXPECT_EQ(s.ch.check_submit_on(kPeer, kP1).status, SubmitStatus::NoPath);
    EXPECT_EQ(s.ch.check_submit_on(kPeer, 777).status, SubmitStatus::NoPath);
    EXPECT_EQ(s.ch.check_submit_on(42, kP2).status, SubmitStatus::UnknownPeer);
    s.ack(5, 0, 0, kP2);  // room again, at the next seq
    const SubmitCheck again = s.ch.check_submit_on(kPeer, kP2);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.seq, s.ch.next_seq(kPeer));
    // A check overtaken by another submission is not trusted: the frame
    // still gets the next seq, through the full checks.
    ASSERT_TRUE(s.ch.submit_on(kPeer, kP2, 500, 0).ok());
    const SubmitResult late = s.ch.submit_checked(kPeer, kP2, again, 501, 0);
    ASSERT_TRUE(late.ok());
    EXPECT_EQ(late.seq, again.seq + 1);
}

TEST(ChannelDirect, AnAckDuringTheCallersTransmissionReleasesAtOnce) {
    // A BTL that delivers inside its send (self) can bring the ACK back
    // before the send returns: nothing is owed, so the frame is released
    // (the glue holds its bytes over the BTL call).
    Sender s;
    const SubmitResult r = s.ch.submit_on(kPeer, kP1, 7, 0);
    ASSERT_TRUE(r.ok());
    s.ack(r.seq);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{7}));
    EXPECT_EQ(s.ch.unreleased(kPeer), 0u);
    // A completion nobody owes is stale, not a second release.
    s.ch.on_local_complete(kPeer, kP1, FrameRef{r.seq, 7}, true, 0);
    EXPECT_EQ(s.ch.counters(kPeer)->stale_completions, 1u);
    EXPECT_EQ(s.out.acked_tokens.size(), 1u);
}

TEST(ChannelDirect, ATransmissionNotDoneAtOnceOwesItsCompletion) {
    // The caller's BTL queued the frame instead (no sendi): once it says so,
    // the watchdog covers the frame until on_local_complete settles it.
    ChannelParams p = test_params();
    p.initial_rtt = 10'000;  // the PTO (capped at ack_timeout) after the watchdog
    Sender s(p);
    const SubmitResult r = s.ch.submit_on(kPeer, kP1, 3, 0);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(s.ch.exact_deadline(), p.ack_timeout) << "nothing owed yet";
    s.ch.expect_completion(kPeer, kP1, FrameRef{r.seq, 3}, 0);
    s.ch.expect_completion(kPeer, kP1, FrameRef{r.seq, 3}, 0);   // once only
    s.ch.expect_completion(kPeer, kP1, FrameRef{r.seq, 99}, 0);  // not that frame
    EXPECT_EQ(s.ch.exact_deadline(), p.watchdog_timeout);
    s.ack(r.seq);
    EXPECT_TRUE(s.out.acked_tokens.empty()) << "released while the BTL holds it";
    s.ch.on_local_complete(kPeer, kP1, FrameRef{r.seq, 3}, true, 10);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{3}));
    EXPECT_EQ(s.ch.exact_deadline(), p.window_idle_release)
        << "only the idle release (from the ack)";
}

TEST(ChannelDirect, AFailedTransmissionFailsThePathAndIsRedriven) {
    Sender s;
    const SubmitResult r = s.ch.submit_on(kPeer, kP1, 5, 0);
    ASSERT_TRUE(r.ok());
    s.ch.expect_completion(kPeer, kP1, FrameRef{r.seq, 5}, 0);
    s.ch.on_local_complete(kPeer, kP1, FrameRef{r.seq, 5}, false, 1);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Failed);
    ASSERT_FALSE(s.out.tx.empty());
    EXPECT_EQ(s.out.tx.back().path, kP2);
    EXPECT_EQ(s.out.tx.back().ref.seq, r.seq);
}

// ---------------------------------------------------------------- carried acks

TEST(ChannelCarried, AppliedInBatchesOfSettleEvery) {
    Sender s;  // settle_every 4
    for (FrameToken t = 1; t <= 10; ++t)
        s.submit(t);
    s.ch.on_carried_ack(kPeer, kP1, 3, 0);
    EXPECT_FALSE(s.ch.batches_due()) << "three frames wait for a batch";
    s.ch.settle_batches();
    EXPECT_TRUE(s.out.acked_tokens.empty());
    s.ch.on_carried_ack(kPeer, kP1, 4, 0);
    EXPECT_TRUE(s.out.acked_tokens.empty()) << "recorded on arrival, released by settle_batches()";
    EXPECT_TRUE(s.ch.batches_due());
    s.ch.settle_batches();
    EXPECT_FALSE(s.ch.batches_due());
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2, 3, 4}));
    EXPECT_EQ(s.ch.counters(kPeer)->carried_acks, 1u);
    s.ch.on_carried_ack(kPeer, kP1, 6, 0);
    s.ch.settle_batches();
    EXPECT_EQ(s.ch.unacked(kPeer), 6u);
    // An ACK frame applies what was carried with it.
    s.ack(5);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(s.ch.counters(kPeer)->stale_acks, 0u);
}

TEST(ChannelCarried, SettledBeforeTheAckTimerCanResend) {
    ChannelParams p = test_params();
    Sender s(p);
    for (FrameToken t = 1; t <= 3; ++t)
        s.submit(t);
    s.ch.on_carried_ack(kPeer, kP1, 2, 5);
    const std::size_t tx = s.out.tx.size();
    // Expiries settle the carried ack first: 1 and 2 are not late.
    s.run_timers(10'000);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2}));
    const std::vector<std::uint32_t> resent = s.out.retransmitted_seqs(tx);
    ASSERT_FALSE(resent.empty());
    EXPECT_TRUE(std::all_of(resent.begin(), resent.end(), [](std::uint32_t q) { return q == 3; }))
        << "only the frame nobody acknowledged is resent";
}

TEST(ChannelCarried, AFullWindowSettlesFirst) {
    ChannelParams p = test_params();
    p.settle_every = 1000;  // never by count
    Sender s(p);
    for (FrameToken t = 1; t <= p.window; ++t)
        s.submit(t);
    s.ch.on_carried_ack(kPeer, kP1, 10, 0);
    EXPECT_TRUE(s.out.acked_tokens.empty());
    const SubmitResult r = s.ch.submit(kPeer, 1000, 0, 100);
    EXPECT_TRUE(r.ok()) << to_string(r.status);
    EXPECT_EQ(s.out.acked_tokens.size(), 10u);
    EXPECT_EQ(s.ch.counters(kPeer)->window_full, 0u);
}

TEST(ChannelCarried, WhatWasCarriedIsNotRedrivenOnFailover) {
    ChannelParams p = test_params();
    p.settle_every = 1000;
    Sender s(p);
    for (FrameToken t = 1; t <= 4; ++t)
        s.submit(t, kP1);
    s.ch.on_carried_ack(kPeer, kP2, 3, 0);
    const std::size_t tx = s.out.tx.size();
    s.ch.remove_path(kPeer, kP1, 1);
    EXPECT_EQ(s.out.retransmitted_seqs(tx), (std::vector<std::uint32_t>{4}));
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2, 3}));
}

TEST(ChannelCarried, FlushAcksAndRemovePeerSettle) {
    ChannelParams p = test_params();
    p.settle_every = 1000;
    Sender s(p);
    for (FrameToken t = 1; t <= 4; ++t)
        s.submit(t);
    s.ch.on_carried_ack(kPeer, kP1, 2, 0);
    s.ch.flush_acks(1);  // finalize waits on unacked(): it must be true
    EXPECT_EQ(s.ch.unacked(kPeer), 2u);
    s.ch.on_carried_ack(kPeer, kP1, 3, 2);
    s.ch.remove_peer(kPeer);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2, 3}));
    EXPECT_EQ(s.out.abandoned_tokens, (std::vector<FrameToken>{4}));
}

TEST(ChannelCarried, SettleCarriedAppliesAtOnce) {
    ChannelParams p = test_params();
    p.settle_every = 1000;
    Sender s(p);
    s.ch.settle_carried(kPeer);      // nothing carried yet: nothing happens
    s.ch.settle_carried(kPeer + 7);  // unknown peer: ignored
    for (FrameToken t = 1; t <= 3; ++t)
        s.submit(t);
    s.ch.on_carried_ack(kPeer, kP1, 2, 0);
    EXPECT_TRUE(s.out.acked_tokens.empty());
    s.ch.settle_carried(kPeer);  // a CTS that acknowledged the RNDV arrived
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2}));
    EXPECT_EQ(s.ch.counters(kPeer)->carried_acks, 1u);
    s.ch.settle_carried(kPeer);
    EXPECT_EQ(s.ch.counters(kPeer)->carried_acks, 1u) << "settled once";
    EXPECT_EQ(s.ch.unacked(kPeer), 1u);
}

TEST(ChannelCarried, StaleIgnoredBogusCounted) {
    Sender s;
    for (FrameToken t = 1; t <= 4; ++t)
        s.submit(t);
    s.ch.on_carried_ack(kPeer, kP1, 0, 0);             // nothing received yet: the initial value
    s.ch.on_carried_ack(kPeer, kP1, 9, 0);             // beyond anything sent
    s.ch.on_carried_ack(kPeer, kP1, 0x7FFF'FFF0u, 0);  // far ahead
    const PeerCounters& c = *s.ch.counters(kPeer);
    EXPECT_EQ(c.bad_acks, 2u);
    EXPECT_EQ(c.carried_acks, 0u);
    EXPECT_EQ(s.ch.unacked(kPeer), 4u);
    s.ch.on_carried_ack(kPeer, kP1, 4, 0);
    s.ch.on_carried_ack(kPeer, kP1, 2, 0);  // older: says nothing new
    s.ch.settle_batches();
    EXPECT_EQ(s.ch.unacked(kPeer), 0u);
    EXPECT_EQ(c.bad_acks, 2u);
    s.ch.on_carried_ack(77, kP1, 1, 0);  // unknown peer: no crash
}

TEST(ChannelCarried, StartNearTheWrap) {
    ChannelParams p = test_params();
    p.first_seq = 0xFFFF'FFFEu;
    Sender s(p);
    EXPECT_EQ(s.ch.ack_seq(kPeer), 0xFFFF'FFFDu) << "nothing received: first_seq - 1";
    for (FrameToken t = 1; t <= 4; ++t)
        s.submit(t);                                   // seqs FFFFFFFE, FFFFFFFF, 1, 2
    s.ch.on_carried_ack(kPeer, kP1, 0xFFFF'FFFDu, 0);  // the initial value: nothing
    EXPECT_EQ(s.ch.counters(kPeer)->bad_acks, 0u);
    s.ch.on_carried_ack(kPeer, kP1, 2, 0);
    s.ch.settle_batches();
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2, 3, 4}));
}

// ---------------------------------------------------------------- the ACK a frame carries

TEST(ChannelCarried, AFrameCarryingTheAckMakesTheAckFrameUnnecessary) {
    ChannelParams p = test_params();
    Sender r(p);  // used as the receiver of kPeer's frames
    EXPECT_EQ(r.ch.on_data(kPeer, kP1, 1, 0), Verdict::Deliver);
    EXPECT_EQ(r.ch.ack_seq(kPeer), 1u);
    r.ch.ack_carried(kPeer, r.ch.ack_seq(kPeer));
    r.run_timers(10 * p.ack_delay);
    EXPECT_TRUE(r.out.acks.empty());
    EXPECT_EQ(r.ch.counters(kPeer)->acks_carried, 1u);
    // A frame that carried an older ack_seq leaves the ACK owed.
    EXPECT_EQ(r.ch.on_data(kPeer, kP1, 2, r.out.now), Verdict::Deliver);
    r.ch.ack_carried(kPeer, 1);
    r.run_timers(r.out.now + p.ack_delay);
    ASSERT_EQ(r.out.acks.size(), 1u);
    EXPECT_EQ(r.out.acks[0].ack.cum_seq, 2u);
}

TEST(ChannelCarried, ArrivalsOutOfOrderStillGetTheirSelectiveAck) {
    ChannelParams p = test_params();
    Sender r(p);
    EXPECT_EQ(r.ch.on_data(kPeer, kP1, 1, 0), Verdict::Deliver);
    EXPECT_EQ(r.ch.on_data(kPeer, kP1, 3, 0), Verdict::Deliver);  // 2 missing
    r.ch.ack_carried(kPeer, r.ch.ack_seq(kPeer));
    r.run_timers(p.ack_delay);
    ASSERT_EQ(r.out.acks.size(), 1u) << "the carried cumulative ack cannot say 3 arrived";
    EXPECT_EQ(r.out.acks[0].ack.cum_seq, 1u);
    EXPECT_NE(r.out.acks[0].ack.sack_mask, 0u);
    EXPECT_EQ(r.ch.counters(kPeer)->acks_carried, 0u);
}

}  // namespace
