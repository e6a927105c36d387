// ReliableChannel::flush_acks visits only the peers owing or owed ACKs
// (issue 27, item 4): finalize calls it in a loop, and most peers of a large
// job never exchanged a frame with this process.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "channel_fixture.hpp"

namespace {

using namespace channel_fixture;

constexpr PathId kPath = 0;
constexpr PeerId kPeers = 10'000;

struct PmlDrChannelActive : ::testing::Test {
    Rec out;
    ReliableChannel ch{test_params(), out};
    PmlDrChannelActive() {
        out.ch = &ch;
        for (PeerId p = 0; p < kPeers; ++p) {
            ch.add_peer(p);
            EXPECT_TRUE(ch.add_path(p, kPath));
        }
    }
    std::vector<PeerId> active() const {
        std::vector<PeerId> v(ch.active_peers().begin(), ch.active_peers().end());
        std::sort(v.begin(), v.end());
        return v;
    }
};

TEST_F(PmlDrChannelActive, FlushVisitsNoPeerWhenNothingWasExchanged) {
    ch.flush_acks(0);
    ch.flush_acks(1);
    EXPECT_EQ(ch.flush_visits(), 0u);
    EXPECT_TRUE(ch.active_peers().empty());
    EXPECT_TRUE(out.acks.empty());
}

TEST_F(PmlDrChannelActive, FlushVisitsOnlyPeersOwingOrOwedAcks) {
    // We send to 3 peers; 2 others send to us (an ACK each is owed).
    std::vector<std::uint32_t> seqs;
    for (const PeerId p : {PeerId{7}, PeerId{5'000}, PeerId{9'999}}) {
        const SubmitResult r = ch.submit(p, p + 1, 0);
        ASSERT_TRUE(r.ok());
        seqs.push_back(r.seq);
    }
    const std::uint32_t first = test_params().first_seq;
    for (const PeerId p : {PeerId{42}, PeerId{8'000}})
        ASSERT_EQ(ch.on_data(p, kPath, first, 0), Verdict::Deliver);
    EXPECT_EQ(active(), (std::vector<PeerId>{7, 42, 5'000, 8'000, 9'999}));

    ch.flush_acks(1);
    EXPECT_EQ(ch.flush_visits(), 5u);
    // The owed ACKs went out at once, and those peers left the set; the
    // peers with frames unacknowledged stay.
    std::vector<PeerId> acked_to;
    for (const auto& a : out.acks)
        acked_to.push_back(a.peer);
    std::sort(acked_to.begin(), acked_to.end());
    EXPECT_EQ(acked_to, (std::vector<PeerId>{42, 8'000}));
    EXPECT_EQ(active(), (std::vector<PeerId>{7, 5'000, 9'999}));

    // Their ACKs come; the next flush visits 3 and leaves nothing.
    std::size_t i = 0;
    for (const PeerId p : {PeerId{7}, PeerId{5'000}, PeerId{9'999}})
        ch.on_ack(p, kPath, AckInfo{seqs[i++], 0, 0}, 2);
    ch.flush_acks(3);
    EXPECT_EQ(ch.flush_visits(), 8u);
    EXPECT_TRUE(ch.active_peers().empty());
    ch.flush_acks(4);
    EXPECT_EQ(ch.flush_visits(), 8u);
    for (const PeerId p : {PeerId{7}, PeerId{5'000}, PeerId{9'999}})
        EXPECT_EQ(ch.unacked(p), 0u);
}

TEST_F(PmlDrChannelActive, RemovedAndReaddedPeerIsListedOnce) {
    ASSERT_TRUE(ch.submit(3, 1, 0).ok());
    ch.remove_peer(3);
    EXPECT_TRUE(ch.active_peers().empty());
    ch.add_peer(3);
    ASSERT_TRUE(ch.add_path(3, kPath));
    ASSERT_TRUE(ch.submit(3, 2, 0).ok());
    EXPECT_EQ(active(), (std::vector<PeerId>{3}));
    ch.flush_acks(1);
    EXPECT_EQ(active(), (std::vector<PeerId>{3}));
    EXPECT_EQ(ch.flush_visits(), 1u);
}

TEST_F(PmlDrChannelActive, DeadPeerLeavesTheSet) {
    ASSERT_TRUE(ch.submit(11, 1, 0).ok());
    ch.declare_dead(11, "test");
    ch.flush_acks(1);
    EXPECT_TRUE(ch.active_peers().empty());
}

// Path slots are sized to the paths a peer has, not to max_paths (issue 27,
// item 1): a peer with one path costs one slot.
TEST(PmlDrChannelMemory, PathSlotsFollowThePathsAPeerHas) {
    Rec out;
    ReliableChannel one{test_params(), out};
    ReliableChannel three{test_params(), out};
    one.add_peer(0);
    three.add_peer(0);
    ASSERT_TRUE(one.add_path(0, 1));
    for (const PathId p : {PathId{1}, PathId{2}, PathId{3}})
        ASSERT_TRUE(three.add_path(0, p));
    const std::size_t slot = (three.memory_bytes() - one.memory_bytes()) / 3;  // 4 - 1 slots
    EXPECT_GT(slot, 0u);
    EXPECT_LT(one.memory_bytes(), 2 * slot + 1024) << "a one-path peer holds about one slot";
    // More paths than the vector had room for keep working.
    ASSERT_TRUE(three.add_path(0, 4));
    ASSERT_TRUE(three.submit(0, 1, 0).ok());
}

// A peer's send window (window x 40 B) is freed once it held nothing for
// window_idle_release, and comes back on the next frame, which carries on
// the peer's sequence.
TEST(PmlDrChannelMemory, AnIdleWindowIsFreedAndComesBack) {
    const ChannelParams p = test_params();
    Sender s(p, false);
    const std::size_t bare = s.ch.memory_bytes();
    const std::uint32_t first = s.submit(1);
    EXPECT_GT(s.ch.memory_bytes(), bare + p.window * 16) << "the window is allocated";
    s.out.now = 50;
    s.ack(first);
    ASSERT_EQ(s.ch.unreleased(kPeer), 0u);
    s.run_timers(50 + p.window_idle_release - 1);
    EXPECT_EQ(s.ch.counters(kPeer)->windows_released, 0u) << "not idle long enough";
    s.run_timers(50 + p.window_idle_release);
    EXPECT_EQ(s.ch.counters(kPeer)->windows_released, 1u);
    EXPECT_EQ(s.ch.memory_bytes(), bare);
    EXPECT_EQ(s.ch.exact_deadline(), kNever);
    // Late news of the old frame finds nothing and is counted.
    s.ack(first);
    s.ch.on_nack(kPeer, kP1, first, s.out.now);
    EXPECT_EQ(s.out.retransmitted_seqs(0), std::vector<std::uint32_t>{});
    // Checking for room allocates nothing; the frame itself does.
    ASSERT_TRUE(s.ch.check_submit_on(kPeer, kP1).ok());
    EXPECT_EQ(s.ch.memory_bytes(), bare);
    const std::uint32_t second = s.submit(2);
    EXPECT_EQ(second, first + 1);
    s.ack(second);
    EXPECT_EQ(s.out.acked_tokens, (std::vector<FrameToken>{1, 2}));
    // A busy peer keeps its window: activity pushes the release back.
    s.out.now += p.window_idle_release / 2;
    s.ack(s.submit(3));
    s.run_timers(s.out.now + p.window_idle_release / 2);
    EXPECT_EQ(s.ch.counters(kPeer)->windows_released, 1u);
}

}  // namespace
