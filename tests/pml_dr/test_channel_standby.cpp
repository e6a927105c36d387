// ReliableChannel standby paths: a path added with add_path(..., standby =
// true) carries nothing while an Alive or Suspect path is left; when
// fail_path() leaves none, the first standby path becomes Alive at once and
// the failed path's frames are re-driven onto it. Time is virtual.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backoff.hpp"
#include "channel.hpp"
#include "channel_fixture.hpp"

namespace {

using namespace pml::dr::core;
using plugin::common::kNever;

using namespace channel_fixture;

constexpr PathId kS1 = 30;  // standby paths, best first
constexpr PathId kS2 = 40;

// A sender towards kPeer with one live path (kP1) and `standbys` standby paths.
struct StandbySender : Sender {
    explicit StandbySender(std::initializer_list<PathId> standbys = {kS1})
        : Sender(test_params(), false) {
        for (const PathId s : standbys) {
            EXPECT_TRUE(ch.add_path(kPeer, s, /*standby=*/true));
        }
    }
    [[nodiscard]] std::vector<PathId> tx_paths(std::size_t from = 0) const {
        std::vector<PathId> paths;
        for (std::size_t i = from; i < out.tx.size(); ++i)
            paths.push_back(out.tx[i].path);
        return paths;
    }
};

TEST(ChannelStandby, CarriesNothingWhileALivePathIsLeft) {
    StandbySender s;
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Standby);
    EXPECT_EQ(s.ch.live_paths(kPeer), 2u) << "a frame can still be re-driven onto it";
    for (FrameToken t = 1; t <= 4; ++t)
        s.submit(t);
    s.submit(5, kS1);  // a hint naming the standby path is not followed
    EXPECT_EQ(s.tx_paths(), (std::vector<PathId>(5, kP1)));
    EXPECT_EQ(s.ch.check_submit_on(kPeer, kS1).status, SubmitStatus::NoPath);
    EXPECT_EQ(s.ch.submit_on(kPeer, kS1, 6, s.out.now).status, SubmitStatus::NoPath);
    EXPECT_TRUE(s.ch.check_submit_on(kPeer, kP1).ok());
    // Timers run on the live path only; the standby path stays out of it.
    s.run_timers(1000);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Suspect);
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Standby);
    // The expiry probed kP1 (a PROBE, no data); nothing went on the standby.
    EXPECT_TRUE(s.tx_paths(5).empty());
    ASSERT_FALSE(s.out.probes.empty());
    for (const auto& pr : s.out.probes)
        EXPECT_EQ(pr.path, kP1);
    EXPECT_EQ(s.ch.path_counters(kPeer, kS1)->frames_sent, 0u);
    EXPECT_EQ(s.ch.counters(kPeer)->standby_promotions, 0u);
}

TEST(ChannelStandby, LastPathFailingPromotesTheStandbyAndRedrivesOntoIt) {
    StandbySender s;
    for (FrameToken t = 1; t <= 6; ++t)
        s.submit(t);
    s.ack(2);
    const std::size_t before = s.out.tx.size();
    s.ch.remove_path(kPeer, kP1, 50);
    EXPECT_EQ(s.out.failed, (std::vector<PathId>{kP1}));
    EXPECT_TRUE(s.out.dead.empty());
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Alive);
    EXPECT_EQ(s.out.retransmitted_seqs(before), (std::vector<std::uint32_t>{3, 4, 5, 6}));
    EXPECT_EQ(s.tx_paths(before), (std::vector<PathId>(4, kS1)));
    const PeerCounters& c = *s.ch.counters(kPeer);
    EXPECT_EQ(c.standby_promotions, 1u);
    EXPECT_EQ(c.failovers, 1u);
    EXPECT_EQ(c.failover_retransmits, 4u);
    // New frames go there too, hinted at the failed path or not.
    s.submit(7, kP1);
    s.submit(8);
    EXPECT_EQ(s.tx_paths(before + 4), (std::vector<PathId>{kS1, kS1}));
    s.ack(8, 0, 0, kS1);
    EXPECT_EQ(s.out.acked_tokens.size(), 8u);
    EXPECT_EQ(s.ch.unreleased(kPeer), 0u);
}

TEST(ChannelStandby, PromotedWhenAckRetriesFailTheLastPath) {
    // The peer's end already moved to the standby network (its own copy of
    // the path failed first): it is heard there while kP1 stays silent.
    StandbySender s;  // PTO 400, 800, then 1000; ack_retries 2
    s.submit(1);
    EXPECT_EQ(s.ch.on_data(kPeer, kS1, 1, 500), Verdict::Deliver);
    s.run_timers(2200);  // expiries at 400, 1200, 2200: no answer since the last probe
    EXPECT_TRUE(s.out.failed.empty());
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Standby) << "an arrival promotes nothing";
    EXPECT_EQ(s.ch.on_data(kPeer, kS1, 2, 2300), Verdict::Deliver);
    s.run_timers(3199);
    EXPECT_TRUE(s.out.failed.empty());
    s.run_timers(3200);
    EXPECT_EQ(s.out.failed, (std::vector<PathId>{kP1}));
    EXPECT_TRUE(s.out.dead.empty());
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Alive);
    ASSERT_FALSE(s.out.tx.empty());
    EXPECT_EQ(s.out.tx.back().path, kS1);
    EXPECT_TRUE(s.out.tx.back().retx);
    EXPECT_EQ(s.out.failed_at[0], 3200) << "promoted at once, no extra wait";
}

TEST(ChannelStandby, PromotedOnlyOnceNoOtherPathIsLeftAndBestFirst) {
    StandbySender s({kS1, kS2});
    ASSERT_TRUE(s.ch.add_path(kPeer, kP2));  // a second live path (BML)
    s.ch.remove_path(kPeer, kP1, 10);
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Standby) << "kP2 still works";
    s.submit(1);
    EXPECT_EQ(s.out.tx.back().path, kP2);
    s.ch.remove_path(kPeer, kP2, 20);
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Alive) << "the first standby added";
    EXPECT_EQ(s.ch.path_state(kPeer, kS2), PathState::Standby);
    EXPECT_EQ(s.out.tx.back().path, kS1);
    // The promoted one fails too: the next standby takes over.
    s.ch.remove_path(kPeer, kS1, 30);
    EXPECT_EQ(s.ch.path_state(kPeer, kS2), PathState::Alive);
    EXPECT_EQ(s.out.tx.back().path, kS2);
    EXPECT_TRUE(s.out.dead.empty());
    EXPECT_EQ(s.ch.counters(kPeer)->standby_promotions, 2u);
    // Nothing left to promote: the peer is dead.
    s.ch.remove_path(kPeer, kS2, 40);
    EXPECT_EQ(s.out.dead, (std::vector<PeerId>{kPeer}));
    EXPECT_EQ(s.out.abandoned_tokens, (std::vector<FrameToken>{1}));
}

TEST(ChannelStandby, AFailedStandbyIsNotPromotedLater) {
    StandbySender s;
    s.submit(1);
    s.ch.remove_path(kPeer, kS1, 10);  // its BTL reported an error
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Failed);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
    EXPECT_EQ(s.out.retransmitted_seqs(), (std::vector<std::uint32_t>{}));
    EXPECT_EQ(s.ch.counters(kPeer)->failovers, 0u);
    s.ch.remove_path(kPeer, kP1, 20);
    EXPECT_EQ(s.out.dead, (std::vector<PeerId>{kPeer}));
    EXPECT_EQ(s.ch.counters(kPeer)->standby_promotions, 0u);
}

TEST(ChannelStandby, AddingAndReAdding) {
    Rec out;
    ReliableChannel ch(test_params(), out);
    out.ch = &ch;
    ch.add_peer(kPeer);
    // Nothing to stand by for: live at once.
    ASSERT_TRUE(ch.add_path(kPeer, kS1, true));
    EXPECT_EQ(ch.path_state(kPeer, kS1), PathState::Alive);
    ASSERT_TRUE(ch.add_path(kPeer, kS2, true));
    EXPECT_EQ(ch.path_state(kPeer, kS2), PathState::Standby);
    // A live path stays live when re-added as standby; a standby one re-added
    // as live (the BML's own) becomes Alive.
    ASSERT_TRUE(ch.add_path(kPeer, kS1, true));
    EXPECT_EQ(ch.path_state(kPeer, kS1), PathState::Alive);
    ASSERT_TRUE(ch.add_path(kPeer, kS2));
    EXPECT_EQ(ch.path_state(kPeer, kS2), PathState::Alive);
    // A failed path re-added as standby stands by while another is live.
    ch.remove_path(kPeer, kS2, 10);
    ASSERT_TRUE(ch.add_path(kPeer, kS2, true));
    EXPECT_EQ(ch.path_state(kPeer, kS2), PathState::Standby);
    EXPECT_EQ(ch.counters(kPeer)->standby_promotions, 0u);
}

TEST(ChannelStandby, StateNameAndTransitions) {
    EXPECT_EQ(to_string(PathState::Standby), "standby");
    EXPECT_TRUE(transition_allowed(PathState::Standby, PathState::Alive));
    EXPECT_TRUE(transition_allowed(PathState::Standby, PathState::Failed));
    EXPECT_TRUE(transition_allowed(PathState::Failed, PathState::Standby));
    EXPECT_FALSE(transition_allowed(PathState::Standby, PathState::Suspect));
    // A promoted standby path stands by again once a better one is back.
    EXPECT_TRUE(transition_allowed(PathState::Alive, PathState::Standby));
    EXPECT_TRUE(transition_allowed(PathState::Suspect, PathState::Standby));
    EXPECT_TRUE(carries_traffic(PathState::Alive));
    EXPECT_TRUE(carries_traffic(PathState::Suspect));
    EXPECT_FALSE(carries_traffic(PathState::Standby));
    EXPECT_FALSE(carries_traffic(PathState::Failed));
}

TEST(ChannelStandby, TransferSurvivesLosingItsOnlyLivePathMidStream) {
    // Both ends keep kS1 as standby. A's kP1 dies after 40 frames (everything
    // on it lost from then on); A promotes kS1, B keeps it as standby but
    // acknowledges there what arrives there. Every frame is delivered once.
    Pair w(test_params());
    ASSERT_TRUE(w.a.add_path(kPeer, kS1, true));
    ASSERT_TRUE(w.b.add_path(kPeer, kS1, true));
    bool cut = false;
    const auto drop = [&cut](const Rec::Tx& t) { return cut && t.path == kP1; };
    FrameToken token = 1;
    for (int round = 0; round < 1000 && (token <= 200 || w.a.unreleased(kPeer) > 0); ++round) {
        while (token <= 200 && w.a.can_submit(kPeer)) {
            ASSERT_TRUE(w.a.submit(kPeer, token, w.now).ok());
            if (++token == 41) {
                cut = true;
                w.a.remove_path(kPeer, kP1, w.now);
            }
        }
        w.pump(drop);
        w.step_timer();
    }
    EXPECT_EQ(w.delivered, 200u);
    for (const auto& [seq, times] : w.deliveries)
        EXPECT_EQ(times, 1) << "seq " << seq;
    EXPECT_EQ(w.a_out.acked_tokens.size(), 200u);
    EXPECT_EQ(w.a.path_state(kPeer, kS1), PathState::Alive);
    EXPECT_EQ(w.b.path_state(kPeer, kS1), PathState::Standby);
    EXPECT_EQ(w.a.counters(kPeer)->standby_promotions, 1u);
    EXPECT_GT(w.b.path_counters(kPeer, kS1)->frames_received, 0u);
    EXPECT_TRUE(w.a_out.dead.empty() && w.b_out.dead.empty());
    // B answered on the path the data came on, its standby.
    EXPECT_TRUE(std::any_of(w.b_out.acks.begin(), w.b_out.acks.end(),
                            [](const Rec::Ack& k) { return k.path == kS1; }));
}

}  // namespace

namespace {

TEST(ChannelStandby, APromotedStandbyStandsByAgainOnceTheFailedPathIsTakenBack) {
    StandbySender s;
    s.submit(1);
    s.ch.remove_path(kPeer, kP1, 0);  // the last BML path fails: kS1 promoted
    ASSERT_EQ(s.ch.path_state(kPeer, kS1), PathState::Alive);
    // kP1 is probed while frame 1 is in flight, and answers.
    s.run_timers(100 * plugin::common::kMillis);
    std::uint32_t id = 0;
    for (const auto& pr : s.out.probes)
        if (pr.path == kP1 && !pr.reply)
            id = pr.id;
    ASSERT_NE(id, 0u);
    s.ch.on_probe_ack(kPeer, kP1, id, s.out.now);
    EXPECT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
    EXPECT_EQ(s.ch.path_state(kPeer, kS1), PathState::Standby) << "stands by again";
    s.submit(2);
    EXPECT_EQ(s.out.tx.back().path, kP1);
}

}  // namespace
