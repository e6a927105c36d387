// Resting peers (issue 27: an active peer's state returns to a few bytes
// after an idle period): a peer quiet both ways for window_idle_release
// keeps only its sequence numbers and counters, and its next use carries on
// from them.
#include <gtest/gtest.h>

#include <vector>

#include "channel_fixture.hpp"

namespace {

using namespace channel_fixture;

// Offers kP1 (and kP2 when two_paths) for any peer, as the glue does.
struct Offering : Rec {
    bool two_paths = false;
    void offer_paths(PeerId, std::vector<PathOffer>& out) override {
        out.push_back({kP1, false});
        if (two_paths)
            out.push_back({kP2, false});
    }
};

struct PmlDrChannelRest : ::testing::Test {
    ChannelParams params = test_params();
    Offering out;
    ReliableChannel ch{params, out};
    const std::uint32_t first = params.first_seq;
    PmlDrChannelRest() { out.ch = &ch; }

    std::uint32_t submit(FrameToken token) {
        const SubmitResult r = ch.submit(kPeer, token, out.now, 100);
        EXPECT_TRUE(r.ok()) << to_string(r.status);
        return r.seq;
    }
    void ack(std::uint32_t cum) { ch.on_ack(kPeer, kP1, AckInfo{cum, 0, 0}, out.now); }
    Verdict arrive(std::uint32_t seq) { return ch.on_data(kPeer, kP1, seq, out.now, 100); }
    void run_timers(Micros until) { channel_fixture::run_timers(ch, out.now, until); }
    // Two frames each way, everything acknowledged, by time 100.
    void talk() {
        ack(submit(1));
        ack(submit(2));
        out.now = 100;
        ASSERT_EQ(arrive(first), Verdict::Deliver);
        ASSERT_EQ(arrive(first + 1), Verdict::Deliver);
        ch.flush_acks(out.now);  // the owed ACK goes
        ASSERT_EQ(ch.unacked(kPeer), 0u);
    }
};

TEST_F(PmlDrChannelRest, AQuietPeerRestsAndCarriesOnItsSequencesBothWays) {
    const std::size_t bare = ch.memory_bytes();
    talk();
    const std::size_t awake = ch.memory_bytes();
    run_timers(100 + params.window_idle_release - 1);
    EXPECT_TRUE(ch.has_peer(kPeer)) << "not idle long enough";
    run_timers(100 + params.window_idle_release);
    EXPECT_FALSE(ch.has_peer(kPeer));
    EXPECT_TRUE(ch.resting(kPeer));
    EXPECT_EQ(ch.peer_state(kPeer), PeerState::Alive);
    EXPECT_FALSE(ch.left(kPeer));
    EXPECT_EQ(ch.exact_deadline(), kNever) << "a resting peer times nothing";
    EXPECT_LT(ch.memory_bytes(), bare + 100) << "was " << awake;
    // Its traffic counters stay; the routine ones are in the channel's total.
    const PeerCounters c = ch.counters_of(kPeer);
    EXPECT_EQ(c.frames_sent, 2u);
    EXPECT_EQ(c.frames_delivered, 2u);
    EXPECT_EQ(c.acks_received, 0u);
    EXPECT_EQ(ch.rest_counters().rests, 1u);
    EXPECT_EQ(ch.rest_counters().folded.acks_received, 2u);
    EXPECT_EQ(ch.rest_counters().folded.acks_sent, 1u);

    // Late news of old frames does not wake it.
    ack(first + 1);
    ch.on_nack(kPeer, kP1, first, out.now);
    ch.flush_acks(out.now);
    EXPECT_TRUE(ch.resting(kPeer));
    EXPECT_TRUE(out.tx.size() == 2 && out.acks.size() == 1);

    // Its next frame from us carries on its sequence...
    EXPECT_EQ(submit(3), first + 2);
    EXPECT_FALSE(ch.resting(kPeer));
    EXPECT_EQ(ch.rest_counters().wakes, 1u);
    EXPECT_EQ(ch.counters(kPeer)->frames_sent, 3u);
    ack(first + 2);
    EXPECT_EQ(out.acked_tokens, (std::vector<FrameToken>{1, 2, 3}));
    // ... and so does its next frame to us; an old one is a duplicate.
    EXPECT_EQ(arrive(first + 1), Verdict::Duplicate);
    EXPECT_EQ(arrive(first + 2), Verdict::Deliver);
    EXPECT_EQ(ch.counters(kPeer)->frames_delivered, 3u);
}

TEST_F(PmlDrChannelRest, AnArrivalWakesARestingPeerWithItsReceiveSequence) {
    talk();
    run_timers(100 + params.window_idle_release);
    ASSERT_TRUE(ch.resting(kPeer));
    EXPECT_EQ(arrive(first + 3), Verdict::Deliver) << "ahead of a gap: kept, reported";
    EXPECT_FALSE(ch.resting(kPeer));
    EXPECT_EQ(arrive(first + 2), Verdict::Deliver);
    EXPECT_EQ(arrive(first + 1), Verdict::Duplicate);
    EXPECT_EQ(ch.ack_seq(kPeer), first + 3);
}

// The RTT it had learnt is the first sample of its paths when it wakes:
// a frame's probe timeout is as short as before the rest, not initial_rtt's.
TEST_F(PmlDrChannelRest, AWokenPeerRemembersItsRoundTripTime) {
    const auto pto_after_submit = [this](FrameToken token) {
        const Micros at = out.now;
        (void)submit(token);
        return ch.next_deadline() - at;
    };
    // A fresh peer: initial_rtt (100 us in these parameters).
    const Micros fresh = pto_after_submit(1);
    out.now += 40;  // a 40 us round trip
    ack(first);
    for (FrameToken t = 2; t <= 8; ++t) {
        (void)submit(t);
        out.now += 40;
        ack(first + static_cast<std::uint32_t>(t) - 1);
    }
    const Micros learnt = pto_after_submit(9);
    out.now += 40;
    ack(first + 8);
    ASSERT_LT(learnt, fresh);
    run_timers(out.now + params.window_idle_release);
    ASSERT_TRUE(ch.resting(kPeer));
    const Micros woken = pto_after_submit(10);
    EXPECT_LT(woken, fresh) << "not initial_rtt's";
    // A first sample of the remembered 40 us (kept in 16 us units, rounded
    // up): srtt + 4 x srtt / 2 + the ACK delay.
    EXPECT_LE(woken, 3 * (40 + 16) + params.ack_delay);
}

TEST_F(PmlDrChannelRest, APeerOwedOrOwingStaysAwake) {
    (void)submit(1);  // never acknowledged: probes, then the path is suspect
    run_timers(10 * params.window_idle_release);
    EXPECT_TRUE(ch.has_peer(kPeer));
    EXPECT_FALSE(ch.resting(kPeer));
    EXPECT_EQ(ch.rest_counters().rests, 0u);
}

TEST_F(PmlDrChannelRest, APathThatFailedKeepsThePeerAwake) {
    out.two_paths = true;
    talk();
    ch.remove_path(kPeer, kP2, out.now);
    run_timers(10 * params.window_idle_release);
    EXPECT_TRUE(ch.has_peer(kPeer)) << "what was learnt about its paths is kept";
}

TEST_F(PmlDrChannelRest, APeerThatSawTroubleKeepsAllItsCounters) {
    const std::uint32_t s = submit(1);
    ch.on_nack(kPeer, kP1, s, out.now);  // resent once
    ack(s);
    out.now = 100;
    run_timers(100 + params.window_idle_release);
    ASSERT_TRUE(ch.resting(kPeer));
    EXPECT_EQ(ch.counters_of(kPeer).retransmits, 1u);
    EXPECT_EQ(ch.counters_of(kPeer).acks_received, 1u);
    EXPECT_EQ(ch.rest_counters().folded.acks_received, 0u) << "nothing folded";
    (void)submit(2);
    EXPECT_EQ(ch.counters(kPeer)->retransmits, 1u);
    EXPECT_EQ(ch.counters(kPeer)->nacks_received, 1u);
}

TEST_F(PmlDrChannelRest, ARestingPeerIsOwedOurByeAndWakesForItsOwn) {
    talk();
    run_timers(100 + params.window_idle_release);
    ASSERT_TRUE(ch.resting(kPeer));
    ch.on_bye(kPeer, kP1, out.now);  // it leaves first
    EXPECT_TRUE(ch.has_peer(kPeer));
    EXPECT_EQ(ch.counters(kPeer)->byes_received, 1u);
    ch.leave(out.now);
    ASSERT_EQ(out.byes.size(), 1u);
    EXPECT_TRUE(ch.left(kPeer));

    // A peer resting when we leave first gets our BYE.
    Offering out2;
    ReliableChannel ch2{params, out2};
    out2.ch = &ch2;
    ASSERT_TRUE(ch2.submit(kPeer, 1, 0, 100).ok());
    ch2.on_ack(kPeer, kP1, AckInfo{first, 0, 0}, 0);
    ch2.on_timer(params.window_idle_release);
    ASSERT_TRUE(ch2.resting(kPeer));
    ch2.leave(params.window_idle_release);
    ASSERT_EQ(out2.byes.size(), 1u);
    EXPECT_EQ(ch2.leaving(params.window_idle_release), 1u) << "waits for its BYE";
    ch2.on_bye(kPeer, kP1, params.window_idle_release);
    EXPECT_TRUE(ch2.left(kPeer));
}

TEST_F(PmlDrChannelRest, NoPeerRestsOnceLeaveBegan) {
    talk();
    ch.leave(out.now);
    run_timers(10 * params.window_idle_release);
    EXPECT_FALSE(ch.resting(kPeer));
}

TEST_F(PmlDrChannelRest, RemovingARestingPeerDropsItsRecord) {
    talk();
    run_timers(100 + params.window_idle_release);
    ASSERT_TRUE(ch.resting(kPeer));
    ch.remove_peer(kPeer);
    EXPECT_FALSE(ch.resting(kPeer));
    EXPECT_EQ(ch.counters_of(kPeer).frames_sent, 0u);
    EXPECT_TRUE(ch.active_peers().empty());
}

TEST(PmlDrChannelRestAdded, APeerAddedWithoutAnOfferNeverRests) {
    // Nothing could make its state again.
    Sender s(test_params(), false);
    s.ack(s.submit(1));
    s.run_timers(10 * test_params().window_idle_release);
    EXPECT_TRUE(s.ch.has_peer(kPeer));
    EXPECT_FALSE(s.ch.resting(kPeer));
}

}  // namespace
