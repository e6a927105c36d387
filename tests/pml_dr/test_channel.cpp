// ReliableChannel unit tests: sequence numbers and wrap, ACK bitmask (NACK)
// semantics, coalescing, duplicate suppression, bogus ACKs, timer back-off,
// failover, peer death, window back-pressure, local completions, bounded
// memory. Time is virtual: every call gets `now` from the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "backoff.hpp"
#include "channel.hpp"
#include "channel_fixture.hpp"

namespace {

using namespace pml::dr::core;
using plugin::common::kNever;

using namespace channel_fixture;

// ---------------------------------------------------------------- seq

TEST(ChannelSeq, StartsAtOneIncrementsAndRoundRobinsPaths) {
    Sender s;
    std::vector<std::uint32_t> seqs;
    for (FrameToken t = 100; t < 105; ++t)
        seqs.push_back(s.submit(t));
    EXPECT_EQ(seqs, (std::vector<std::uint32_t>{1, 2, 3, 4, 5}));
    ASSERT_EQ(s.out.tx.size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(s.out.tx[i].ref.token, 100 + i);
        EXPECT_FALSE(s.out.tx[i].retx);
        EXPECT_EQ(s.out.tx[i].path, i % 2 == 0 ? kP1 : kP2);
    }
    // A usable hint wins over round-robin.
    s.submit(200, kP2);
    s.submit(201, kP2);
    EXPECT_EQ(s.out.tx[5].path, kP2);
    EXPECT_EQ(s.out.tx[6].path, kP2);
    EXPECT_EQ(s.ch.counters(kPeer)->frames_submitted, 7u);
}

TEST(ChannelSeq, WrapsPast2To32SkippingZeroAndDeliversExactlyOnce) {
    ChannelParams p = test_params();
    p.first_seq = 0xFFFFFFF0u;
    Pair w(p);
    std::vector<std::uint32_t> seqs;
    FrameToken token = 1;
    int n = 0;
    // 300 frames across the wrap, every 7th first transmission lost.
    for (int round = 0; round < 1000 && (n < 300 || w.a.unreleased(kPeer) > 0); ++round) {
        while (n < 300) {
            const SubmitResult r = w.a.submit(kPeer, token, w.now);
            if (!r.ok())
                break;
            seqs.push_back(r.seq);
            ++token;
            ++n;
        }
        w.pump([](const Rec::Tx& t) { return !t.retx && t.ref.seq % 7 == 0; });
        w.step_timer();  // tail losses: only the ACK timer finds them
        w.pump();
    }
    ASSERT_EQ(seqs.size(), 300u);
    EXPECT_EQ(seqs[0], 0xFFFFFFF0u);
    EXPECT_EQ(seqs[15], 0xFFFFFFFFu);
    EXPECT_EQ(seqs[16], 1u) << "seq 0 means 'none' on the wire and is skipped";
    EXPECT_EQ(std::count(seqs.begin(), seqs.end(), 0u), 0);
    EXPECT_EQ(w.delivered, 300u);
    for (const auto& [seq, times] : w.deliveries)
        EXPECT_EQ(times, 1) << "seq " << seq;
    EXPECT_EQ(w.a_out.acked_tokens.size(), 300u);
    EXPECT_EQ(w.a.unreleased(kPeer), 0u);
    EXPECT_GT(w.a.counters(kPeer)->nack_retransmits, 0u);
}

// ---------------------------------------------------------------- ACK / NACK

TEST(ChannelAck, BitmaskNacksOnlyMissingFramesBelowTheHighestAcked) {
    Sender s(test_params(), false);
    for (FrameToken t = 1; t <= 12; ++t)
        s.submit(t);  // seqs 1..12 == tokens
    const std::size_t before = s.out.tx.size();
    // 1, 2 cumulative; 4-6 and 8-10 selectively; 3 and 7 missing; 11, 12 unknown.
    s.ack(2, 0, bits({0, 1, 2, 4, 5, 6, 8, 9, 10}));
    EXPECT_EQ(s.out.retransmitted_seqs(before), (std::vector<std::uint32_t>{3, 7}));
    std::vector<FrameToken> acked = s.out.acked_tokens;
    std::sort(acked.begin(), acked.end());
    EXPECT_EQ(acked, (std::vector<FrameToken>{1, 2, 4, 5, 6, 8, 9, 10}));
    EXPECT_EQ(s.ch.counters(kPeer)->nack_retransmits, 2u);
    EXPECT_EQ(s.ch.unacked(kPeer), 4u);  // 3, 7, 11, 12

    // The same information again is a duplicate ACK: nothing resent.
    const std::size_t mid = s.out.tx.size();
    s.ack(2, 0, bits({0, 1, 2, 4, 5, 6, 8, 9, 10}));
    EXPECT_EQ(s.out.tx.size(), mid);
    EXPECT_EQ(s.ch.counters(kPeer)->dup_acks, 1u);

    // 11 was transmitted before the resends of 3 and 7: acking it proves
    // nothing about them, so no second resend yet.
    s.ack(2, 0, bits({0, 1, 2, 4, 5, 6, 8, 9, 10, 11}));
    EXPECT_EQ(s.out.tx.size(), mid);
    // 13 goes out after the resends; once it is acked, 3 and 7 are resent
    // again, and so is 12 (sent before 13, still missing).
    s.submit(13);
    s.ack(2, 0, bits({0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 13}));
    EXPECT_EQ(s.out.retransmitted_seqs(mid), (std::vector<std::uint32_t>{3, 7, 12}));
    // Finally everything.
    s.ack(13);
    EXPECT_EQ(s.out.acked_tokens.size(), 13u);
    EXPECT_EQ(s.ch.unreleased(kPeer), 0u);
    // Nothing left to time but the idle release of the window.
    s.ch.on_timer(s.ch.exact_deadline());
    EXPECT_EQ(s.ch.counters(kPeer)->windows_released, 1u);
    EXPECT_EQ(s.ch.exact_deadline(), kNever) << "nothing left to time";
}

TEST(ChannelAck, ReorderedFrameOnAnotherPathIsNotNacked) {
    Sender s;
    s.submit(1, kP1);  // seq 1 on the slow path
    s.submit(2, kP2);  // seq 2 on the fast path
    const std::size_t before = s.out.tx.size();
    s.ack(0, 0, bits({2}), kP2);
    EXPECT_TRUE(s.out.retransmitted_seqs(before).empty());
    s.submit(3, kP1);
    s.ack(0, 0, bits({2, 3}), kP1);  // 3, sent later on 1's path, arrived: 1 is lost
    EXPECT_EQ(s.out.retransmitted_seqs(before), (std::vector<std::uint32_t>{1}));
}

TEST(ChannelAck, BogusStaleAndDuplicateAcksAreIgnoredAndCounted) {
    Sender s(test_params(), false);
    s.ack(0);  // before anything was sent: harmless repeat of the initial state
    EXPECT_EQ(s.ch.counters(kPeer)->dup_acks, 1u);
    for (FrameToken t = 1; t <= 5; ++t)
        s.submit(t);
    const std::size_t tx_before = s.out.tx.size();

    s.ack(6);                // cum beyond anything sent
    s.ack(0, 0, bits({7}));  // sack of a seq never sent
    s.ack(0, 5, 1);          // sack_base not a vfrag base
    s.ack(0, 64, 0);         // base without mask (reserved must be zero)
    s.ack(0x7FFFFFFFu);      // far ahead
    s.ack(0, 64, 1);         // the next vfrag: never sent
    const PeerCounters& c = *s.ch.counters(kPeer);
    EXPECT_EQ(c.bad_acks, 6u);
    EXPECT_TRUE(s.out.acked_tokens.empty());
    EXPECT_EQ(s.out.tx.size(), tx_before);
    EXPECT_EQ(s.ch.unacked(kPeer), 5u);

    s.ack(3);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2, 3}));
    s.ack(2);  // reordered older ACK
    EXPECT_EQ(c.stale_acks, 1u);
    s.ack(3);  // repeat
    EXPECT_EQ(c.dup_acks, 2u);
    s.ch.on_ack(99, kP1, AckInfo{1, 0, 0}, 0);  // unknown peer: ignored, no crash
    EXPECT_EQ(s.out.acked_tokens.size(), 3u);
    EXPECT_EQ(c.acks_received, 10u);
    EXPECT_EQ(s.ch.path_counters(kPeer, kP1)->acks_received, 10u);
}

// ---------------------------------------------------------------- receiver

TEST(ChannelReceiver, CoalescesAcksByCountAndDelay) {
    Rec out;
    ReliableChannel r(test_params(), out);  // ack_every 4, ack_delay 100
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    for (std::uint32_t s = 1; s <= 3; ++s)
        EXPECT_EQ(r.on_data(kPeer, kP1, s, 0), Verdict::Deliver);
    EXPECT_TRUE(out.acks.empty());
    EXPECT_EQ(r.exact_deadline(), 100);
    r.on_timer(99);
    EXPECT_TRUE(out.acks.empty());
    r.on_timer(100);
    ASSERT_EQ(out.acks.size(), 1u);
    // In-order arrivals: the cumulative seq says it all.
    EXPECT_EQ(out.acks[0].ack, (AckInfo{3, 0, 0}));
    EXPECT_EQ(out.acks[0].path, kP1);
    EXPECT_EQ(r.exact_deadline(), kNever);

    // Four more: the fourth triggers the ACK at once, on the path it came on.
    for (std::uint32_t s = 4; s <= 7; ++s)
        r.on_data(kPeer, kP2, s, 200);
    ASSERT_EQ(out.acks.size(), 2u);
    EXPECT_EQ(out.acks[1].ack, (AckInfo{7, 0, 0}));
    EXPECT_EQ(out.acks[1].path, kP2);
    EXPECT_EQ(r.exact_deadline(), kNever);
}

TEST(ChannelReceiver, OneAckPerVfragWithArrivalsAboveCum) {
    ChannelParams p = test_params();
    p.window = 256;
    p.ack_every = 1000;
    Rec out;
    ReliableChannel r(p, out);
    r.add_peer(kPeer);
    for (std::uint32_t s = 1; s <= 62; ++s)
        r.on_data(kPeer, kP1, s, 0);
    r.on_data(kPeer, kP1, 65, 0);
    r.on_data(kPeer, kP1, 130, 0);
    r.on_timer(r.exact_deadline());
    // vfrag 0 arrived in order (cum covers it); 65 and 130 each get theirs.
    ASSERT_EQ(out.acks.size(), 2u);
    EXPECT_EQ(out.acks[0].ack, (AckInfo{62, 64, bits({1})}));
    EXPECT_EQ(out.acks[1].ack, (AckInfo{62, 128, bits({2})}));
    // 63 arrives: cum moves to 63 (65 still waits for 64) and nothing else
    // is new: a bare cumulative ACK.
    r.on_data(kPeer, kP1, 63, 200);
    r.on_timer(r.exact_deadline());
    ASSERT_EQ(out.acks.size(), 3u);
    EXPECT_EQ(out.acks[2].ack, (AckInfo{63, 0, 0}));
}

TEST(ChannelReceiver, DuplicateIsReackedAtOnceAndNeverRedelivered) {
    Rec out;
    ReliableChannel r(test_params(), out);
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    EXPECT_EQ(r.on_data(kPeer, kP1, 1, 0), Verdict::Deliver);
    EXPECT_TRUE(out.acks.empty());
    EXPECT_EQ(r.on_data(kPeer, kP1, 1, 5), Verdict::Duplicate);
    ASSERT_EQ(out.acks.size(), 1u);
    EXPECT_EQ(out.acks[0].ack.cum_seq, 1u);
    // Out of order: 5 opens a gap and is acknowledged at once; 5 again is
    // re-acked, both with 5's bit.
    EXPECT_EQ(r.on_data(kPeer, kP1, 5, 6), Verdict::Deliver);
    ASSERT_EQ(out.acks.size(), 2u);
    EXPECT_EQ(out.acks[1].ack, (AckInfo{1, 0, bits({0, 1, 5})}));
    EXPECT_EQ(r.on_data(kPeer, kP1, 5, 7), Verdict::Duplicate);
    ASSERT_EQ(out.acks.size(), 3u);
    EXPECT_EQ(out.acks[2].ack, (AckInfo{1, 0, bits({0, 1, 5})}));
    EXPECT_EQ(r.counters(kPeer)->duplicates_dropped, 2u);
    EXPECT_EQ(r.counters(kPeer)->frames_delivered, 2u);
    // seq 0 is never data.
    EXPECT_EQ(r.on_data(kPeer, kP1, 0, 8), Verdict::Drop);
    EXPECT_EQ(r.counters(kPeer)->bad_seq, 1u);
    // Unknown peers are dropped.
    EXPECT_EQ(r.on_data(7, kP1, 1, 8), Verdict::Drop);
}

// In-order arrivals on the path last used take the short way through the
// receiver; everything past a gap, on another path or across the wrap must
// answer exactly as the general checks would.
TEST(ChannelReceiver, InOrderArrivalsAroundGapsPathsAndTheWrapAreDeliveredOnce) {
    ChannelParams p = test_params();  // window 64, ack_every 4
    p.first_seq = 0xFFFF'FFFCu;
    p.ack_every = 1000;
    Rec out;
    ReliableChannel r(p, out);
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    r.add_path(kPeer, kP2);
    std::map<std::uint32_t, int> delivered;
    const auto arrive = [&](std::uint32_t seq, PathId path) {
        const Verdict v = r.on_data(kPeer, path, seq, 0, 10);
        if (v == Verdict::Deliver)
            ++delivered[seq];
        return v;
    };
    // In order up to and across the wrap (0 is skipped): each once.
    for (const std::uint32_t seq : {0xFFFF'FFFCu, 0xFFFF'FFFDu, 0xFFFF'FFFEu, 0xFFFF'FFFFu, 1u})
        EXPECT_EQ(arrive(seq, kP1), Verdict::Deliver) << seq;
    EXPECT_EQ(r.ack_seq(kPeer), 1u);
    // A gap: 3 and 4 wait past it, 2 fills it; their copies are duplicates,
    // in order (5) or not (4, after the gap closed).
    EXPECT_EQ(arrive(3, kP1), Verdict::Deliver);
    EXPECT_EQ(arrive(4, kP1), Verdict::Deliver);
    EXPECT_EQ(arrive(4, kP1), Verdict::Duplicate);
    EXPECT_EQ(arrive(2, kP1), Verdict::Deliver);
    EXPECT_EQ(r.ack_seq(kPeer), 4u);
    EXPECT_EQ(arrive(3, kP1), Verdict::Duplicate);
    EXPECT_EQ(arrive(5, kP1), Verdict::Deliver);
    EXPECT_EQ(arrive(5, kP1), Verdict::Duplicate);
    // Another path, then back: the ACK follows the data.
    EXPECT_EQ(arrive(6, kP2), Verdict::Deliver);
    EXPECT_EQ(arrive(7, kP2), Verdict::Deliver);
    EXPECT_EQ(arrive(8, kP1), Verdict::Deliver);
    EXPECT_EQ(arrive(0xFFFF'FFFFu, kP1), Verdict::Duplicate);
    for (const auto& [seq, times] : delivered)
        EXPECT_EQ(times, 1) << "seq " << seq;
    EXPECT_EQ(delivered.size(), 12u);
    const PeerCounters& c = *r.counters(kPeer);
    EXPECT_EQ(c.frames_delivered, 12u);
    EXPECT_EQ(c.bytes_delivered, 120u);
    EXPECT_EQ(c.duplicates_dropped, 4u);
    EXPECT_EQ(r.path_counters(kPeer, kP1)->frames_received, 10u);
    EXPECT_EQ(r.path_counters(kPeer, kP2)->frames_received, 2u);
    r.flush_acks(1);
    ASSERT_FALSE(out.acks.empty());
    EXPECT_EQ(out.acks.back().ack, (AckInfo{8, 0, 0}));
    EXPECT_EQ(out.acks.back().path, kP1);
}

TEST(ChannelReceiver, TheFirstArrivalPastAGapIsAcknowledgedAtOnce) {
    ChannelParams p = test_params();
    p.ack_every = 1000;  // only the gap and the delay send ACKs
    Rec out;
    ReliableChannel r(p, out);
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    EXPECT_EQ(r.on_data(kPeer, kP1, 1, 0), Verdict::Deliver);
    EXPECT_EQ(r.on_data(kPeer, kP1, 2, 0), Verdict::Deliver);
    EXPECT_TRUE(out.acks.empty()) << "in order: coalesced";
    // 3 is missing: 4 says so at once, with its bit, so the sender resends 3.
    EXPECT_EQ(r.on_data(kPeer, kP1, 4, 1), Verdict::Deliver);
    ASSERT_EQ(out.acks.size(), 1u);
    EXPECT_EQ(out.acks[0].ack, (AckInfo{2, 0, bits({0, 1, 2, 4})}));
    // More past the same gap coalesce again.
    EXPECT_EQ(r.on_data(kPeer, kP1, 5, 2), Verdict::Deliver);
    EXPECT_EQ(out.acks.size(), 1u);
    // The gap closes: in order again, nothing at once.
    EXPECT_EQ(r.on_data(kPeer, kP1, 3, 3), Verdict::Deliver);
    EXPECT_EQ(r.on_data(kPeer, kP1, 6, 4), Verdict::Deliver);
    EXPECT_EQ(out.acks.size(), 1u);
    EXPECT_EQ(r.ack_seq(kPeer), 6u);
    // A new gap is reported at once again.
    EXPECT_EQ(r.on_data(kPeer, kP1, 8, 5), Verdict::Deliver);
    ASSERT_EQ(out.acks.size(), 2u);
    EXPECT_EQ(out.acks[1].ack, (AckInfo{6, 0, bits({0, 1, 2, 3, 4, 5, 6, 8})}));
}

TEST(ChannelReceiver, AckNowIsNotCoalesced) {
    Rec out;
    ReliableChannel r(test_params(), out);  // ack_every 4, ack_delay 100
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    EXPECT_EQ(r.on_data(kPeer, kP1, 1, 0), Verdict::Deliver);
    EXPECT_TRUE(out.acks.empty());  // waits for more or for ack_delay
    EXPECT_EQ(r.on_data(kPeer, kP1, 2, 1, 0, AckTiming::Now), Verdict::Deliver);
    ASSERT_EQ(out.acks.size(), 1u);  // the flagged frame is acknowledged at once, with 1
    EXPECT_EQ(out.acks[0].ack.cum_seq, 2u);
    EXPECT_EQ(r.exact_deadline(), kNever);  // nothing left owed
}

// A credit-starved frame: its ACK waits for the engine's answer, even when
// ack_every is reached, and that ACK is marked as the answer and carries
// the credit as it is when the ACK leaves.
TEST(ChannelReceiver, HeldAckGoesWithTheCreditAnswer) {
    struct Credit : AckCredit {
        std::uint64_t released = 0;
        std::uint64_t report_credit(PeerId) override { return released; }
    } credit;
    Rec out;
    ReliableChannel r(test_params(), out);  // ack_every 4, ack_delay 100
    r.set_ack_credit(&credit);
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    for (std::uint32_t seq = 1; seq <= 3; ++seq)
        EXPECT_EQ(r.on_data(kPeer, kP1, seq, 0), Verdict::Deliver);
    EXPECT_EQ(r.on_data(kPeer, kP1, 4, 1, 0, AckTiming::Held), Verdict::Deliver);
    EXPECT_TRUE(out.acks.empty());  // the fourth, but held
    credit.released = 2048;         // the engine took it
    r.answer_credit(kPeer, 2);
    ASSERT_EQ(out.acks.size(), 1u);
    EXPECT_EQ(out.acks[0].ack.cum_seq, 4u);
    EXPECT_TRUE(out.acks[0].ack.credit_answer);
    EXPECT_EQ(out.acks[0].ack.released_total, 2048u);
    EXPECT_EQ(r.exact_deadline(), kNever);  // nothing left owed

    // Unanswered (the engine dropped the frame), ack_delay still bounds it;
    // an ACK that is not an answer is not marked.
    EXPECT_EQ(r.on_data(kPeer, kP1, 5, 10, 0, AckTiming::Held), Verdict::Deliver);
    EXPECT_EQ(out.acks.size(), 1u);
    EXPECT_EQ(r.exact_deadline(), 110);
    r.on_timer(110);
    ASSERT_EQ(out.acks.size(), 2u);
    EXPECT_EQ(out.acks[1].ack.cum_seq, 5u);
    EXPECT_FALSE(out.acks[1].ack.credit_answer);
    EXPECT_EQ(out.acks[1].ack.released_total, 2048u);
}

TEST(ChannelReceiver, FlushAcksSendsWhatIsOwedNow) {
    Rec out;
    ReliableChannel r(test_params(), out);  // ack_every 4, ack_delay 100
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    r.flush_acks(0);
    EXPECT_TRUE(out.acks.empty());  // nothing owed, nothing sent
    EXPECT_EQ(r.on_data(kPeer, kP1, 1, 0), Verdict::Deliver);
    EXPECT_EQ(r.on_data(kPeer, kP1, 2, 1), Verdict::Deliver);
    EXPECT_TRUE(out.acks.empty());  // coalescing
    r.flush_acks(2);                // finalize: do not wait for ack_delay
    ASSERT_EQ(out.acks.size(), 1u);
    EXPECT_EQ(out.acks[0].ack.cum_seq, 2u);
    EXPECT_EQ(r.exact_deadline(), kNever);
}

TEST(ChannelReceiver, IsFreshAnswersWithoutRecording) {
    Rec out;
    ReliableChannel r(test_params(), out);  // window 64
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    EXPECT_TRUE(r.is_fresh(kPeer, 1));
    EXPECT_TRUE(r.is_fresh(kPeer, 1));  // asking changes nothing
    EXPECT_FALSE(r.is_fresh(kPeer, 0));
    EXPECT_FALSE(r.is_fresh(kPeer, 65));  // beyond the window
    EXPECT_FALSE(r.is_fresh(7, 1));       // unknown peer
    EXPECT_EQ(r.on_data(kPeer, kP1, 3, 0), Verdict::Deliver);
    EXPECT_FALSE(r.is_fresh(kPeer, 3));
    EXPECT_TRUE(r.is_fresh(kPeer, 2));
    EXPECT_EQ(r.on_data(kPeer, kP1, 1, 0), Verdict::Deliver);
    EXPECT_FALSE(r.is_fresh(kPeer, 1));  // at or below the cumulative seq
    EXPECT_EQ(r.counters(kPeer)->frames_delivered, 2u);
}

TEST(ChannelReceiver, TooFarAheadIsDroppedUnacked) {
    Rec out;
    ReliableChannel r(test_params(), out);  // window 64
    r.add_peer(kPeer);
    EXPECT_EQ(r.on_data(kPeer, kP1, 65, 0), Verdict::Drop);
    EXPECT_EQ(r.on_data(kPeer, kP1, 0x7FFFFFFFu, 0), Verdict::Drop);
    EXPECT_EQ(r.exact_deadline(), kNever);
    EXPECT_TRUE(out.acks.empty());
    EXPECT_EQ(r.counters(kPeer)->too_far_dropped, 2u);
    EXPECT_EQ(r.on_data(kPeer, kP1, 64, 0), Verdict::Deliver);  // the window's far edge
    EXPECT_EQ(r.on_data(kPeer, kP1, 64, 0), Verdict::Duplicate);
}

TEST(ChannelReceiver, AckAvoidsAPathDeclaredFailed) {
    Rec out;
    ReliableChannel r(test_params(), out);
    out.ch = &r;
    r.add_peer(kPeer);
    r.add_path(kPeer, kP1);
    r.add_path(kPeer, kP2);
    r.remove_path(kPeer, kP1, 0);
    r.on_data(kPeer, kP1, 1, 0);
    r.on_data(kPeer, kP1, 1, 0);
    ASSERT_EQ(out.acks.size(), 1u);
    EXPECT_EQ(out.acks[0].path, kP2);
}

// ---------------------------------------------------------------- timers

TEST(ChannelBackoff, LinearTable) {
    EXPECT_EQ(backoff(10, 0), 10);
    EXPECT_EQ(backoff(10, 1), 20);
    EXPECT_EQ(backoff(10, 2), 30);
    EXPECT_EQ(backoff(10, 3), 40);
    EXPECT_EQ(backoff(0, 3), 0);
    EXPECT_EQ(time_to_fail(10, 0), 10);
    EXPECT_EQ(time_to_fail(10, 3), 100);
    EXPECT_EQ(time_to_fail(1000, 2), 6000);
    EXPECT_EQ(backoff(kNever / 2, 5), kNever);
    EXPECT_EQ(time_to_fail(kNever / 2, 5), kNever);
    EXPECT_EQ(add_saturating(kNever, 1), kNever);
    EXPECT_EQ(add_saturating(5, 7), 12);
    static_assert(backoff(10 * plugin::common::kSeconds, 2) == 30 * plugin::common::kSeconds);
}

// PROBEs sent on `path` (not answers).
std::size_t probes_on(const Rec& out, PathId path) {
    return static_cast<std::size_t>(
        std::count_if(out.probes.begin(), out.probes.end(),
                      [path](const Rec::Probe& pr) { return pr.path == path && !pr.reply; }));
}

TEST(ChannelRecovery, PtoProbesOnThePathThenElsewhereThenFailsItWhenThePeerAnswersThere) {
    Sender s;  // PTO 400, 800, then the cap 1000; ack_retries 2
    s.submit(1, kP1);
    EXPECT_EQ(s.ch.exact_deadline(), 400);
    // The peer is alive and talks to us over kP2 (before the probes: that
    // alone blames nothing).
    EXPECT_EQ(s.ch.on_data(kPeer, kP2, 1, 300), Verdict::Deliver);
    s.run_timers(399);
    EXPECT_TRUE(s.out.probes.empty());
    // Expiry 1: a PROBE on the same path, no data resent.
    s.run_timers(400);
    EXPECT_EQ(probes_on(s.out, kP1), 1u);
    EXPECT_EQ(s.out.tx.size(), 1u);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Suspect);
    EXPECT_FALSE(s.ch.path_preferred(kPeer, kP1)) << "kP2 is alive";
    EXPECT_EQ(s.ch.exact_deadline(), 1200);  // the PTO doubled
    // Expiry 2: another PROBE, and a copy of the frame on the other path.
    s.run_timers(1200);
    EXPECT_EQ(probes_on(s.out, kP1), 2u);
    ASSERT_EQ(s.out.tx.size(), 2u);
    EXPECT_EQ(s.out.tx[1].path, kP2);
    EXPECT_TRUE(s.out.tx[1].retx);
    EXPECT_EQ(s.ch.exact_deadline(), 2200);  // capped at ack_timeout
    // Expiry 3 (past the retries): nothing heard since the last probe: kept.
    s.run_timers(2200);
    EXPECT_TRUE(s.out.failed.empty());
    EXPECT_EQ(s.ch.counters(kPeer)->silent_expiries, 1u);
    // The peer answers on kP2 now, never on kP1: failed at the next expiry,
    // the frame re-driven on kP2.
    EXPECT_EQ(s.ch.on_data(kPeer, kP2, 2, 2300), Verdict::Deliver);
    s.run_timers(3199);
    EXPECT_TRUE(s.out.failed.empty());
    const std::size_t before = s.out.tx.size();
    s.run_timers(3200);
    ASSERT_EQ(s.out.failed, (std::vector<PathId>{kP1}));
    EXPECT_EQ(s.out.failed_at[0], 3200);
    ASSERT_EQ(s.out.tx.size(), before + 1);
    EXPECT_EQ(s.out.tx.back().path, kP2);
    const PeerCounters& c = *s.ch.counters(kPeer);
    EXPECT_EQ(c.ack_timeouts, 4u);
    EXPECT_EQ(c.timeout_retransmits, 0u);
    EXPECT_EQ(c.probe_retransmits, 2u);
    EXPECT_EQ(c.failover_retransmits, 1u);
    EXPECT_EQ(c.paths_lost, 1u);
    // Acknowledged over kP2: what is left is the failed path's probe timer.
    s.ack(1, 0, 0, kP2);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1}));
    EXPECT_EQ(s.ch.exact_deadline(), 3200 + 100 * plugin::common::kMillis);
}

TEST(ChannelRecovery, APeerThatOnlyDidNotCallMpiCostsAProbeNotAResend) {
    Sender s(test_params(), false);
    s.submit(1);
    s.run_timers(400);  // the peer is busy: no ACK within the PTO
    EXPECT_EQ(s.out.probes.size(), 1u);
    // It comes back: its ACK (sent before its answer) covers the frame.
    s.ack(1);
    s.ch.on_probe_ack(kPeer, kP1, s.out.probes[0].id, 450);
    EXPECT_EQ(s.out.tx.size(), 1u) << "nothing resent";
    EXPECT_EQ(s.ch.counters(kPeer)->retransmits, 0u);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
}

// A compute phase: both processes leave MPI right after the last exchange,
// with an ACK still owed, and come back seconds later. The sender's timers
// run first on its return (the worst order): they are found a PTO late, so
// nothing expires before the ACK waiting for it is read.
TEST(ChannelAbsence, AComputePhaseCostsNoProbeAndNoResend) {
    constexpr Micros kBack = 5 * plugin::common::kSeconds;
    Pair w(test_params());
    for (FrameToken t = 1; t <= 3; ++t)
        ASSERT_TRUE(w.a.submit(kPeer, t, 0, 100).ok());
    w.now = 5;
    w.pump();  // B takes them; its ACK is owed (ack_delay 100)
    ASSERT_TRUE(w.b_out.acks.empty());
    const Micros srtt = w.a.path_counters(kPeer, kP1)->srtt;
    w.now = kBack;
    w.a_out.now = w.b_out.now = kBack;
    w.a.on_timer(kBack);  // A first: its PTO fell due 5 s ago
    EXPECT_TRUE(w.a_out.probes.empty()) << "a probe before the waiting ACK was read";
    w.b.on_timer(kBack);  // B's owed ACK goes
    w.pump();
    for (int i = 0; i < 50 && w.step_timer(); ++i)
        w.pump();
    EXPECT_TRUE(w.a_out.probes.empty());
    EXPECT_EQ(w.a.counters(kPeer)->ack_timeouts, 0u);
    EXPECT_EQ(w.a.counters(kPeer)->retransmits, 0u);
    EXPECT_EQ(w.a.counters(kPeer)->absences, 1u);
    EXPECT_EQ(w.a.unacked(kPeer), 0u);
    EXPECT_EQ(w.a.path_counters(kPeer, kP1)->srtt, srtt) << "the absence is no RTT sample";
}

// The peer stays away after our return: one PTO later it is probed, as it
// would have been had we never left.
TEST(ChannelAbsence, APeerStillAwayIsProbedOnePtoAfterOurReturn) {
    constexpr Micros kBack = 5 * plugin::common::kSeconds;
    Sender s(test_params(), false);
    s.submit(1);
    s.out.now = kBack;
    s.ch.on_timer(kBack);
    EXPECT_TRUE(s.out.probes.empty());
    EXPECT_EQ(s.ch.next_deadline(), kBack + 400);  // one PTO from our return
    s.run_timers(kBack + 400);
    ASSERT_EQ(s.out.probes.size(), 1u);
    EXPECT_EQ(s.out.probes[0].at, kBack + 400);
    EXPECT_EQ(s.ch.counters(kPeer)->ack_timeouts, 1u);
}

// A process that polls more slowly than the PTO is late at every visit: the
// deferral is once until the peer's next acknowledgement, so a lost frame
// is still recovered (one PTO later than by a process that polls often).
TEST(ChannelAbsence, PollingSlowerThanThePtoStillProbes) {
    Sender s(test_params(), false);
    s.submit(1);
    Micros t = 0;
    std::size_t visits_before_probe = 0;
    while (s.out.probes.empty() && visits_before_probe < 10) {
        t += 2000;  // five PTOs between visits
        s.out.now = t;
        s.ch.on_timer(t);
        ++visits_before_probe;
    }
    EXPECT_EQ(visits_before_probe, 2u);
    EXPECT_EQ(s.ch.counters(kPeer)->absences, 1u);
}

// A busy process is late at every visit while a path goes silent and the
// peer keeps acknowledging on the other (a black-holed rail): the silent
// path's timers are deferred once, not again at every late visit because
// the other path made progress, so its expiries go on (and it can fail).
TEST(ChannelAbsence, ASilentPathStillExpiresWhenEveryVisitIsLate) {
    Sender s;  // PTO 400, 800, then the cap 1000
    s.submit(1, kP1);
    Micros t = 0;
    std::uint64_t acked = 0;
    for (int visit = 0; visit < 10; ++visit) {
        t += 3000;  // three capped PTOs between visits
        s.out.now = t;
        s.ch.on_timer(t);
        // The peer acknowledges, over kP2, a frame that went there.
        const std::uint32_t seq = s.submit(static_cast<FrameToken>(100 + visit), kP2);
        ASSERT_EQ(s.out.tx.back().path, kP2);
        acked |= std::uint64_t{1} << seq;  // sack_base 0: seqs 1..63
        s.ch.on_ack(kPeer, kP2, AckInfo{0, 0, acked}, t);
    }
    EXPECT_GT(s.ch.counters(kPeer)->absences, 0u);
    EXPECT_GE(s.ch.path_counters(kPeer, kP1)->ack_timeouts, 2u) << "deferred at every visit";
}

// A sender away from MPI for longer than peer_dead_timeout does not declare
// its peer dead before it has read what the peer sent meanwhile; a peer that
// really died meanwhile is declared dead one longest PTO after the return.
TEST(ChannelAbsence, ASenderAwayLongerThanPeerDeadTimeoutJudgesThePeerAfterReturning) {
    for (const bool answers : {true, false}) {
        SCOPED_TRACE(answers ? "the peer answers" : "the peer died");
        ChannelParams p = test_params();
        p.peer_dead_timeout = 100'000;
        Sender s(p, false);
        s.submit(1);
        const Micros back = 2 * p.peer_dead_timeout;
        s.out.now = back;
        s.ch.on_timer(back);
        EXPECT_TRUE(s.out.dead.empty()) << "declared dead before reading what waits";
        if (answers)
            s.ack(1);
        s.run_timers(back + 10 * p.peer_dead_timeout);
        if (answers) {
            EXPECT_TRUE(s.out.dead.empty());
            EXPECT_EQ(s.ch.peer_state(kPeer), PeerState::Alive);
        } else {
            ASSERT_EQ(s.out.dead.size(), 1u);
            EXPECT_EQ(s.out.dead_at[0], back + p.ack_timeout);
        }
    }
}

// An ACK the receiver says it held seconds past its bound (it was away from
// MPI) measures its absence, not the network: no RTT sample.
TEST(ChannelAbsence, AnAckHeldPastItsBoundIsNoRttSample) {
    Sender s(test_params(), false);
    s.submit(1);
    s.out.now = 50;
    s.ch.on_ack(kPeer, kP1, AckInfo{1, 0, 0, 10, 100}, s.out.now);
    const PathCounters before = *s.ch.path_counters(kPeer, kP1);
    ASSERT_EQ(before.rtt_samples, 1u);
    s.submit(2);
    s.out.now = 5 * plugin::common::kSeconds;
    s.ch.on_ack(kPeer, kP1, AckInfo{2, 0, 0, s.out.now - 60, 100}, s.out.now);
    EXPECT_EQ(s.ch.unacked(kPeer), 0u);
    EXPECT_EQ(s.ch.path_counters(kPeer, kP1)->rtt_samples, 1u);
    EXPECT_EQ(s.ch.path_counters(kPeer, kP1)->srtt, before.srtt);
}

TEST(ChannelRecovery, AFailedPathIsProbedWhileThereIsTrafficAndTakenBackWhenItAnswers) {
    ChannelParams p = test_params();
    p.initial_rtt = 200'000;  // kP2 stays alive (its first PTO: 600 ms) throughout
    p.ack_timeout = 10'000'000;
    Sender s(p);
    s.submit(1, kP1);
    s.ch.remove_path(kPeer, kP1, 0);  // the BTL reported an error
    ASSERT_EQ(s.ch.path_state(kPeer, kP1), PathState::Failed);
    s.out.probes.clear();
    // Probed at the first interval while frame 1 is in flight (kP2, which
    // carries it now, is probed by its PTO: only kP1's count here).
    s.run_timers(100 * plugin::common::kMillis);
    ASSERT_EQ(probes_on(s.out, kP1), 1u);
    std::erase_if(s.out.probes, [](const Rec::Probe& pr) { return pr.path != kP1; });
    const Rec::Probe probe = s.out.probes[0];
    EXPECT_FALSE(probe.reply);
    // Unanswered: the next one after twice the interval.
    s.run_timers(300 * plugin::common::kMillis - 1);
    EXPECT_EQ(probes_on(s.out, kP1), 1u);
    s.run_timers(300 * plugin::common::kMillis);
    ASSERT_EQ(probes_on(s.out, kP1), 2u);
    std::erase_if(s.out.probes, [](const Rec::Probe& pr) { return pr.path != kP1; });
    // A late answer to the first probe, and one that is not ours: nothing.
    s.ch.on_probe_ack(kPeer, kP1, probe.id, s.out.now);
    s.ch.on_probe_ack(kPeer, kP1, 12345, s.out.now);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Failed);
    EXPECT_EQ(s.ch.counters(kPeer)->stale_probes, 2u);
    // The answer to the latest: taken back; new traffic may use it again.
    s.ch.on_probe_ack(kPeer, kP1, s.out.probes[1].id, s.out.now + 30);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
    EXPECT_EQ(s.ch.counters(kPeer)->paths_readmitted, 1u);
    EXPECT_EQ(s.ch.path_counters(kPeer, kP1)->paths_readmitted, 1u);
    EXPECT_EQ(s.ch.path_counters(kPeer, kP1)->rtt_samples, 1u);
    EXPECT_EQ(s.ch.path_counters(kPeer, kP1)->srtt, 30) << "the probe's round trip, in the stats";
    s.submit(2, kP1);
    EXPECT_EQ(s.out.tx.back().path, kP1);
    // A second failure of the same path is handled the same way.
    s.ch.remove_path(kPeer, kP1, s.out.now);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Failed);
    EXPECT_EQ(s.ch.counters(kPeer)->paths_lost, 2u);
}

TEST(ChannelRecovery, WithNoPathAliveTheFailedOnesAreProbedAtOnceAndOneAnsweringTakesTheFrames) {
    Sender s;  // PTO 400, 800, then the cap 1000; ack_retries 2
    s.submit(1, kP2);
    s.ch.remove_path(kPeer, kP1, 0);  // kP1 failed; frame 1 only on kP2
    // kP1's first probe is due at 100 ms; after it, kP2 (silent past its
    // retries, nothing heard elsewhere: kept) expires every 1000 us with no
    // path alive, and each expiry probes kP1 again at once instead of at
    // the doubled interval (200 ms).
    s.run_timers(200 * plugin::common::kMillis);
    EXPECT_EQ(s.ch.path_state(kPeer, kP2), PathState::Suspect);
    EXPECT_GE(probes_on(s.out, kP1), 90u);
    const std::size_t before = probes_on(s.out, kP1);
    s.run_timers(s.ch.next_deadline());
    EXPECT_GT(probes_on(s.out, kP1), before);
    EXPECT_TRUE(s.out.failed == (std::vector<PathId>{kP1}));
    // kP1 answers: taken back, and kP2, silent past its retries, fails now:
    // frame 1 moves to kP1 at once.
    std::uint32_t id = 0;
    for (const auto& pr : s.out.probes)
        if (pr.path == kP1 && !pr.reply)
            id = pr.id;
    const std::size_t tx = s.out.tx.size();
    s.ch.on_probe_ack(kPeer, kP1, id, s.out.now);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
    EXPECT_EQ(s.ch.path_state(kPeer, kP2), PathState::Failed);
    ASSERT_GT(s.out.tx.size(), tx);
    EXPECT_EQ(s.out.tx.back().path, kP1);
    EXPECT_EQ(s.out.tx.back().ref.seq, 1u);
}

TEST(ChannelRecovery, AnIdlePeerIsNotProbedUntilItHasTrafficAgain) {
    Sender s;
    s.submit(1, kP1);
    s.ch.remove_path(kPeer, kP1, 0);
    s.ack(1, 0, 0, kP2);
    s.run_timers(10 * plugin::common::kSeconds);
    EXPECT_TRUE(s.out.probes.empty()) << "nothing in flight: no probe";
    EXPECT_EQ(s.ch.exact_deadline(), kNever);
    s.submit(2);  // traffic again: the paused probing resumes at once
    s.run_timers(s.out.now);
    ASSERT_EQ(s.out.probes.size(), 1u);
    EXPECT_EQ(s.out.probes[0].path, kP1);
}

TEST(ChannelRecovery, TheReceiverAnswersAProbeOnThePathItCameBy) {
    Sender s;
    s.ch.on_probe(kPeer, kP2, 77, 0);
    s.ch.on_probe(kPeer, kP2, 0, 0);  // id 0 is never valid
    ASSERT_EQ(s.out.probes.size(), 1u);
    EXPECT_EQ(s.out.probes[0].path, kP2);
    EXPECT_EQ(s.out.probes[0].id, 77u);
    EXPECT_TRUE(s.out.probes[0].reply);
}

TEST(ChannelRecovery, ASuspectPathThatWentIdleIsProbedAndAnAnswerRevivesIt) {
    Sender s;
    s.submit(1, kP1);
    s.run_timers(1200);  // two expiries: a copy went on kP2
    ASSERT_EQ(s.out.tx.size(), 2u);
    s.submit(2);  // traffic goes on: avoids the suspect kP1
    EXPECT_EQ(s.out.tx.back().path, kP2);
    // Frame 1 acknowledged (which copy did it? neither path is credited).
    s.ack(1, 0, 0, kP2);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Suspect);
    s.out.probes.clear();
    s.run_timers(s.out.now);  // idle and suspect: a PROBE at once
    ASSERT_EQ(probes_on(s.out, kP1), 1u);
    s.ch.on_probe_ack(kPeer, kP1, s.out.probes[0].id, s.out.now + 20);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
    EXPECT_TRUE(s.ch.path_preferred(kPeer, kP1));
}

TEST(ChannelRecovery, RttSamplesComeFromFramesSentOnceAndSetThePto) {
    Sender s(test_params(), false);
    s.submit(1);
    s.out.now = 30;
    s.ch.on_ack(kPeer, kP1, AckInfo{1, 0, 0, 10, 100}, s.out.now);  // 30 us, 10 of them held
    const PathCounters& pc = *s.ch.path_counters(kPeer, kP1);
    EXPECT_EQ(pc.rtt_samples, 1u);
    EXPECT_EQ(pc.srtt, 30);  // the first sample is taken whole
    EXPECT_EQ(pc.min_rtt, 30);
    s.submit(2);
    // PTO = srtt + max(4 rttvar, granularity) + max_ack_delay = 30 + 60 + 100
    EXPECT_EQ(s.ch.exact_deadline(), 30 + 190);
    // A resent frame gives no sample (Karn): the PROBE's answer shows it
    // missing, it is resent, then acknowledged.
    s.run_timers(30 + 190);
    ASSERT_EQ(s.out.probes.size(), 1u);
    s.ch.on_probe_ack(kPeer, kP1, s.out.probes[0].id, 300);
    EXPECT_EQ(pc.rtt_samples, 2u);  // the probe's round trip
    EXPECT_EQ(s.out.retransmitted_seqs(), (std::vector<std::uint32_t>{2}));
    s.ch.on_ack(kPeer, kP1, AckInfo{2, 0, 0, 0, 100}, 1000);
    EXPECT_EQ(pc.rtt_samples, 2u);
}

TEST(ChannelRecovery, ATailProbesAckRevealsEveryFrameLostBeforeIt) {
    Sender s(test_params(), false);
    for (FrameToken t = 1; t <= 4; ++t)
        s.submit(t);
    // 2, 3 and 4 are lost at the tail; 1 arrives. The PTO sends a PROBE.
    s.out.now = 50;
    s.ack(1);
    const std::size_t before = s.out.tx.size();
    s.run_timers(s.ch.next_deadline());
    ASSERT_EQ(s.out.probes.size(), 1u);
    EXPECT_TRUE(s.out.retransmitted_seqs(before).empty());
    // The peer's ACK (cum 1, sent before its answer on the same path) and
    // the answer: everything sent before the probe and unacknowledged was
    // lost, resent at once.
    s.ch.on_ack(kPeer, kP1, AckInfo{1, 0, 0, 0, 100}, s.out.now + 10);
    s.ch.on_probe_ack(kPeer, kP1, s.out.probes[0].id, s.out.now + 10);
    EXPECT_EQ(s.out.retransmitted_seqs(before), (std::vector<std::uint32_t>{2, 3, 4}));
}

TEST(ChannelFailover, RemovePathRedrivesEveryUnackedFrameOnTheNextPath) {
    Sender s;
    for (FrameToken t = 1; t <= 6; ++t)
        s.submit(t, kP1);
    s.ack(2);
    const std::size_t before = s.out.tx.size();
    s.ch.remove_path(kPeer, kP1, 50);
    EXPECT_EQ(s.out.failed, (std::vector<PathId>{kP1}));
    EXPECT_EQ(s.out.retransmitted_seqs(before), (std::vector<std::uint32_t>{3, 4, 5, 6}));
    for (std::size_t i = before; i < s.out.tx.size(); ++i)
        EXPECT_EQ(s.out.tx[i].path, kP2);
    EXPECT_EQ(s.ch.path_counters(kPeer, kP1)->redriven, 4u);
    // New frames avoid the failed path even when it is hinted.
    s.submit(7, kP1);
    EXPECT_EQ(s.out.tx.back().path, kP2);
    // Completions from the failed path are stale now.
    s.ch.on_local_complete(kPeer, kP1, FrameRef{3, 3}, true, 60);
    EXPECT_EQ(s.ch.counters(kPeer)->stale_completions, 1u);
    // Re-adding revives it.
    EXPECT_TRUE(s.ch.add_path(kPeer, kP1));
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
}

// ---------------------------------------------------------------- peer death

TEST(ChannelPeerDeath, APeerSilentOnEveryPathKeepsItsPathsUntilPeerDeadTimeout) {
    // A rank computing outside MPI acknowledges nothing, exactly like a dead
    // network: no path is blamed for it, the frames are resent at the
    // longest back-off, and only peer_dead_timeout gives up on the peer.
    ChannelParams p = test_params();  // ack_timeout 1000, 2 retries
    p.peer_dead_timeout = 60'000;
    Sender s(p);
    s.submit(1, kP1);
    s.submit(2, kP2);
    s.submit(3, kP1);
    s.run_timers(59'999);
    EXPECT_TRUE(s.out.failed.empty()) << "silence everywhere blames no path";
    EXPECT_TRUE(s.out.dead.empty());
    const PeerCounters& c = *s.ch.counters(kPeer);
    EXPECT_GT(c.silent_expiries, 0u);
    // Each path probes once per longest back-off (the 1000 us cap): about
    // 60 expiries per path, each a PROBE; no data is resent on a guess.
    EXPECT_GE(c.probes_sent, 2u * 55u);
    EXPECT_LE(c.probes_sent, 2u * 62u);
    EXPECT_EQ(c.timeout_retransmits, 0u);
    // Back in time, the peer answers everything: nothing was lost on the way.
    s.run_timers(60'000);
    ASSERT_EQ(s.out.dead.size(), 1u);
    EXPECT_EQ(s.out.dead_at[0], 60'000);
    std::vector<FrameToken> ab = s.out.abandoned_tokens;
    std::sort(ab.begin(), ab.end());
    EXPECT_EQ(ab, (std::vector<FrameToken>{1, 2, 3}));
    EXPECT_EQ(s.ch.peer_state(kPeer), PeerState::Dead);
    EXPECT_EQ(s.ch.exact_deadline(), kNever);
    EXPECT_EQ(s.ch.submit(kPeer, 9, s.out.now).status, SubmitStatus::PeerDead);
    EXPECT_EQ(s.ch.on_data(kPeer, kP1, 1, s.out.now), Verdict::Drop);
}

TEST(ChannelPeerDeath, APathIsFailedOnlyWhenThePeerWasHeardElsewhereSinceItStalled) {
    Sender s;  // ack_timeout 1000, 2 retries
    // Heard on kP2 before kP1's frame went out: says nothing about kP1.
    EXPECT_EQ(s.ch.on_data(kPeer, kP2, 1, 0), Verdict::Deliver);
    s.out.now = 10;
    s.submit(1, kP1);  // sent at 10, never answered on kP1
    s.run_timers(10 + time_to_fail(1000, 2));
    EXPECT_TRUE(s.out.failed.empty());
    // Heard on kP2 after: the peer is alive and ignores kP1.
    EXPECT_EQ(s.ch.on_data(kPeer, kP2, 2, 7000), Verdict::Deliver);
    s.run_timers(100'000);
    EXPECT_EQ(s.out.failed, (std::vector<PathId>{kP1}));
    EXPECT_TRUE(s.out.dead.empty()) << "kP2 carries the frame now";
    s.ack(1, 0, 0, kP2);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1}));
}

TEST(ChannelPeerDeath, PeerDeadTimeoutFiresFirstWhenShorter) {
    ChannelParams p = test_params();
    p.peer_dead_timeout = 2500;
    Sender s(p);
    s.out.now = 100;
    s.submit(1);
    s.run_timers(100'000);
    ASSERT_EQ(s.out.dead_at.size(), 1u);
    EXPECT_EQ(s.out.dead_at[0], 2600);
    EXPECT_EQ(s.out.abandoned_tokens, (std::vector<FrameToken>{1}));
    EXPECT_TRUE(s.out.failed.empty()) << "paths are not blamed for a dead peer";
}

TEST(ChannelPeerDeath, RemovingTheLastPathKillsAtOnce) {
    Sender s;
    s.submit(1);
    s.submit(2);
    s.ack(1);
    s.ch.remove_path(kPeer, kP1, 10);
    EXPECT_TRUE(s.out.dead.empty());
    s.ch.remove_path(kPeer, kP2, 11);
    EXPECT_EQ(s.out.dead, (std::vector<PeerId>{kPeer}));
    EXPECT_EQ(s.out.abandoned_tokens, (std::vector<FrameToken>{2}));
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1}));
    EXPECT_EQ(s.ch.counters(kPeer)->frames_abandoned, 1u);
}

TEST(ChannelPeerDeath, DeclaredDeadFromOutsideAbandonsWhatIsUnacknowledged) {
    // The runtime reports the process dead: no timer or path is waited for.
    Sender s;
    s.submit(1);
    s.submit(2);
    s.submit(3);
    // Recorded, not applied yet (carried acks are settled in batches): the
    // frame it acknowledges must be reported acked, not abandoned.
    s.ch.on_carried_ack(kPeer, kP1, 1, 5);
    s.ch.declare_dead(kPeer, "the runtime reported it aborted");
    EXPECT_EQ(s.out.dead, (std::vector<PeerId>{kPeer}));
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1}));
    EXPECT_EQ(s.out.abandoned_tokens, (std::vector<FrameToken>{2, 3}));
    EXPECT_EQ(s.ch.peer_state(kPeer), PeerState::Dead);
    EXPECT_EQ(s.ch.exact_deadline(), kNever);
    EXPECT_EQ(s.ch.submit(kPeer, 9, s.out.now).status, SubmitStatus::PeerDead);
    EXPECT_EQ(s.ch.on_data(kPeer, kP1, 1, s.out.now), Verdict::Drop);
    s.ch.declare_dead(kPeer, "again");  // once only
    s.ch.declare_dead(kPeer + 7, "unknown");
    EXPECT_EQ(s.out.dead.size(), 1u);
}

// ---------------------------------------------------------------- window

TEST(ChannelWindow, BackPressureWhenFullAndReliefOnRelease) {
    Sender s(test_params(), false);  // window 64
    for (FrameToken t = 1; t <= 64; ++t)
        s.submit(t);
    EXPECT_FALSE(s.ch.can_submit(kPeer));
    const SubmitResult full = s.ch.submit(kPeer, 65, 0);
    EXPECT_EQ(full.status, SubmitStatus::WindowFull);
    EXPECT_EQ(s.ch.counters(kPeer)->window_full, 1u);
    // A frame in the middle acked selectively is released (acked fires) but
    // the window still starts at the oldest unacked frame.
    s.ack(0, 0, bits({5}));
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{5}));
    EXPECT_FALSE(s.ch.can_submit(kPeer));
    s.ack(1);
    EXPECT_TRUE(s.ch.can_submit(kPeer));
    EXPECT_EQ(s.submit(65), 65u);
    EXPECT_FALSE(s.ch.can_submit(kPeer));
}

TEST(ChannelWindow, GlueMaySubmitFromInsideAcked) {
    Sender s(test_params(), false);
    std::vector<FrameToken> queue = {100, 101, 102};
    s.out.on_acked = [&](FrameToken) {
        if (!queue.empty() && s.ch.can_submit(kPeer)) {
            s.ch.submit(kPeer, queue.front(), s.out.now);
            queue.erase(queue.begin());
        }
    };
    for (FrameToken t = 1; t <= 64; ++t)
        s.submit(t);
    s.ack(3);
    EXPECT_TRUE(queue.empty());
    ASSERT_EQ(s.out.tx.size(), 67u);
    EXPECT_EQ(s.out.tx.back().ref, (FrameRef{67, 102}));
}

TEST(ChannelWindow, SubmitWithoutPathsOrForUnknownPeer) {
    Rec out;
    ReliableChannel ch(test_params(), out);
    EXPECT_EQ(ch.submit(3, 1, 0).status, SubmitStatus::UnknownPeer);
    ch.add_peer(3);
    EXPECT_EQ(ch.submit(3, 1, 0).status, SubmitStatus::NoPath);
    EXPECT_FALSE(ch.can_submit(3));
}

// ---------------------------------------------------------------- local completion

TEST(ChannelLocal, AckedWaitsForTheLocalCompletion) {
    Sender s;
    s.out.auto_complete = false;
    const std::uint32_t seq = s.submit(1, kP1);
    s.ack(seq);
    EXPECT_TRUE(s.out.acked_tokens.empty()) << "the BTL still holds the frame";
    EXPECT_EQ(s.ch.unreleased(kPeer), 1u);
    EXPECT_EQ(s.ch.unacked(kPeer), 0u);
    s.ch.on_local_complete(kPeer, kP1, FrameRef{seq, 1}, true, 5);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1}));
    // A second completion for it is stale.
    s.ch.on_local_complete(kPeer, kP1, FrameRef{seq, 1}, true, 6);
    EXPECT_EQ(s.ch.counters(kPeer)->stale_completions, 1u);
}

TEST(ChannelLocal, InlineCompletionOwesNothingAndNeedsNoWatchdog) {
    Sender s;
    s.out.auto_complete = false;
    s.out.inline_complete = true;
    const std::uint32_t seq = s.submit(1, kP1);
    EXPECT_EQ(s.ch.unacked(kPeer), 1u);
    // Nothing is owed: a completion for it is stale, the watchdog stays off.
    s.ch.on_local_complete(kPeer, kP1, FrameRef{seq, 1}, true, 5);
    EXPECT_EQ(s.ch.counters(kPeer)->stale_completions, 1u);
    s.run_timers(5000);  // past the watchdog (500), short of the ACK retries
    EXPECT_EQ(s.ch.counters(kPeer)->watchdog_timeouts, 0u);
    // The ACK releases it at once; the ACK timer's resend went out inline too.
    s.ack(seq);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1}));
    EXPECT_EQ(s.ch.unreleased(kPeer), 0u);
}

TEST(ChannelLocal, CompletionWithErrorFailsThePathAndRedrives) {
    Sender s;
    s.out.auto_complete = false;
    const std::uint32_t seq = s.submit(1, kP1);
    s.ch.on_local_complete(kPeer, kP1, FrameRef{seq, 1}, false, 5);
    EXPECT_EQ(s.out.failed, (std::vector<PathId>{kP1}));
    ASSERT_EQ(s.out.tx.size(), 2u);
    EXPECT_EQ(s.out.tx[1].path, kP2);
    EXPECT_TRUE(s.out.tx[1].retx);
    EXPECT_EQ(s.ch.counters(kPeer)->local_errors, 1u);
}

TEST(ChannelLocal, WatchdogFailsAPathThatNeverCompletes) {
    ChannelParams p = test_params();
    p.initial_rtt = 10'000;  // the PTO stays out of the way
    p.ack_timeout = 100'000;
    Sender s(p);  // watchdog 500, 1 retry: expiries at 500 (suspect) and 1500 (failed)
    s.out.auto_complete = false;
    s.submit(1, kP1);
    s.run_timers(499);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
    s.run_timers(500);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Suspect);
    EXPECT_EQ(s.out.tx.size(), 1u) << "never a second descriptor for a frame the BTL holds";
    s.run_timers(1500);
    ASSERT_EQ(s.out.failed, (std::vector<PathId>{kP1}));
    EXPECT_EQ(s.out.failed_at[0], time_to_fail(500, 1));
    ASSERT_EQ(s.out.tx.size(), 2u);
    EXPECT_EQ(s.out.tx[1].path, kP2);
    EXPECT_EQ(s.ch.counters(kPeer)->watchdog_timeouts, 2u);
}

TEST(ChannelLocal, AckTimerDoesNotResendWhatTheBtlStillHolds) {
    ChannelParams p = test_params();
    p.watchdog_timeout = 100'000;
    Sender s(p, false);
    s.out.auto_complete = false;
    s.submit(1);
    s.run_timers(5000);
    EXPECT_EQ(s.out.tx.size(), 1u);
    EXPECT_TRUE(s.out.failed.empty()) << "expiries with nothing to resend do not count";
    s.ch.on_local_complete(kPeer, kP1, FrameRef{1, 1}, true, 5000);
    // Now a PROBE's answer shows the frame missing: resent.
    s.run_timers(6000);
    ASSERT_FALSE(s.out.probes.empty());
    s.ch.on_probe_ack(kPeer, kP1, s.out.probes.back().id, 6000);
    EXPECT_EQ(s.out.tx.size(), 2u);
}

// ---------------------------------------------------------------- memory, names, params

TEST(ChannelMemory, StateSizeDoesNotGrowWithFramesSent) {
    ChannelParams p = test_params();
    p.window = 256;
    p.ack_every = 16;
    Pair w(p);
    std::size_t mem_a = 0;
    std::size_t mem_b = 0;
    FrameToken token = 1;
    for (int round = 0; round < 2000; ++round) {
        for (int i = 0; i < 100; ++i)
            ASSERT_TRUE(w.a.submit(kPeer, token++, w.now).ok());
        // Lose some, so NACKs, timers and the rx bitmap all get exercised.
        w.pump([round](const Rec::Tx& t) { return !t.retx && (t.ref.seq + round) % 13 == 0; });
        while (w.a.unreleased(kPeer) > 0 && w.step_timer())
            w.pump();
        ASSERT_EQ(w.a.unreleased(kPeer), 0u) << "round " << round;
        if (round == 10) {
            mem_a = w.a.memory_bytes();
            mem_b = w.b.memory_bytes();
        }
        w.a_out.tx.clear();  // the test's own record must not be what grows
        w.b_out.acks.clear();
        w.a_out.acked_tokens.clear();
        w.tx_done = w.ack_done = 0;
    }
    EXPECT_EQ(w.delivered, 200'000u);
    EXPECT_EQ(w.a.memory_bytes(), mem_a);
    EXPECT_EQ(w.b.memory_bytes(), mem_b);
    EXPECT_LT(mem_a, 64u * 1024u);
}

TEST(ChannelNames, StateMachinesHaveNamesAndCheckedTransitions) {
    EXPECT_EQ(to_string(PathState::Alive), "alive");
    EXPECT_EQ(to_string(PathState::Suspect), "suspect");
    EXPECT_EQ(to_string(PathState::Failed), "failed");
    EXPECT_EQ(to_string(PeerState::Dead), "dead");
    EXPECT_EQ(to_string(FrameState::InFlight), "in_flight");
    EXPECT_EQ(to_string(Verdict::Duplicate), "duplicate");
    EXPECT_EQ(to_string(SubmitStatus::WindowFull), "window_full");
    EXPECT_TRUE(transition_allowed(PathState::Alive, PathState::Failed));
    EXPECT_TRUE(transition_allowed(PathState::Failed, PathState::Alive));
    EXPECT_FALSE(transition_allowed(PathState::Failed, PathState::Suspect));
    EXPECT_FALSE(transition_allowed(PeerState::Dead, PeerState::Alive));
    EXPECT_FALSE(transition_allowed(FrameState::Free, FrameState::Acked));
    EXPECT_FALSE(transition_allowed(FrameState::Acked, FrameState::InFlight));
}

struct CaptureLog : plugin::common::LogSink {
    std::vector<std::string> lines;
    [[nodiscard]] bool enabled(plugin::common::LogLevel level) const noexcept override {
        return static_cast<int>(level) <= static_cast<int>(plugin::common::LogLevel::Info);
    }
    void write(plugin::common::LogLevel, const char* m) noexcept override { lines.emplace_back(m); }
};

TEST(ChannelNames, TransitionsAreLoggedWithReason) {
    CaptureLog log;
    Rec out;
    ReliableChannel ch(test_params(), out, log);
    ch.add_peer(kPeer);
    ch.add_path(kPeer, kP1);
    ch.remove_path(kPeer, kP1, 0);
    ASSERT_FALSE(log.lines.empty());
    EXPECT_NE(log.lines.back().find("alive -> dead (no path left)"), std::string::npos)
        << log.lines.back();
}

TEST(ChannelParamsTest, ValidationAndMappingFromConfig) {
    ChannelParams p;
    EXPECT_EQ(validate(p), "");
    p.window = 100;
    EXPECT_NE(validate(p), "");
    p = ChannelParams{};
    p.first_seq = 0;
    EXPECT_NE(validate(p), "");
    p = ChannelParams{};
    p.max_paths = 33;
    EXPECT_NE(validate(p), "");
    p = ChannelParams{};
    p.ack_timeout = 0;
    EXPECT_NE(validate(p), "");
    p = ChannelParams{};
    p.settle_every = 0;
    EXPECT_NE(validate(p), "");
    Config c;
    c.ack_timeout = 7;
    c.ack_retries = 9;
    c.watchdog_timeout = 3;
    c.watchdog_retries = 4;
    c.peer_dead_timeout = 11;
    const ChannelParams m = channel_params(c);
    EXPECT_EQ(m.ack_timeout, 7);
    EXPECT_EQ(m.ack_retries, 9u);
    EXPECT_EQ(m.watchdog_timeout, 3);
    EXPECT_EQ(m.watchdog_retries, 4u);
    EXPECT_EQ(m.peer_dead_timeout, 11);
    EXPECT_EQ(validate(m), "");
    // An ACK frame after a quarter of the window; carried acks in batches of 16.
    EXPECT_EQ(m.ack_every, 64u);
    EXPECT_EQ(m.settle_every, 16u);
    c.window = 64;
    EXPECT_EQ(channel_params(c).ack_every, 16u);
    c.window = 4096;
    EXPECT_EQ(channel_params(c).ack_every, 1024u);
}

}  // namespace
