// ReliableChannel: a peer's state is made on its first use from the paths
// the output offers (ChannelOutput::offer_paths), never for a peer that is
// only known (issue 27: nothing per remote process until the first frame to
// or from it).
#include <gtest/gtest.h>

#include <vector>

#include "channel_fixture.hpp"

namespace {

using namespace channel_fixture;

// A recording output that offers the same paths for every peer.
struct Offering : Rec {
    std::vector<PathOffer> offers{{kP1, false}};
    int asked = 0;
    void offer_paths(PeerId, std::vector<PathOffer>& out) override {
        ++asked;
        out = offers;
    }
};

struct LazyChannel {
    Offering out;
    ReliableChannel ch{test_params(), out};
    LazyChannel() { out.ch = &ch; }
};

TEST(ChannelLazy, NothingForAPeerUntilItIsFirstSentTo) {
    LazyChannel c;
    const std::size_t before = c.ch.memory_bytes();
    EXPECT_FALSE(c.ch.has_peer(3));
    EXPECT_EQ(c.out.asked, 0);
    EXPECT_EQ(c.ch.memory_bytes(), before);

    const SubmitResult r = c.ch.submit(3, 77, 0, 100);
    ASSERT_TRUE(r.ok()) << to_string(r.status);
    EXPECT_EQ(c.out.asked, 1);
    EXPECT_TRUE(c.ch.has_peer(3));
    EXPECT_EQ(r.seq, test_params().first_seq);
    ASSERT_EQ(c.out.tx.size(), 1u);
    EXPECT_EQ(c.out.tx[0].path, kP1);
    EXPECT_GT(c.ch.memory_bytes(), before);
    // Made once.
    ASSERT_TRUE(c.ch.submit(3, 78, 0, 100).ok());
    EXPECT_EQ(c.out.asked, 1);
    EXPECT_FALSE(c.ch.has_peer(2));  // its neighbours stay unmade
}

TEST(ChannelLazy, AFirstArrivalMakesTheSendersState) {
    LazyChannel c;
    const std::uint32_t first = test_params().first_seq;
    EXPECT_EQ(c.ch.on_sequenced(5, kP1, first, first - 1, 10, 100, AckTiming::Delayed),
              Verdict::Deliver);
    EXPECT_TRUE(c.ch.has_peer(5));
    EXPECT_EQ(c.ch.ack_seq(5), first);
    // A duplicate is known as one.
    EXPECT_EQ(c.ch.on_sequenced(5, kP1, first, first - 1, 11, 100, AckTiming::Delayed),
              Verdict::Duplicate);
}

TEST(ChannelLazy, APeerNothingIsOfferedForStaysUnknown) {
    LazyChannel c;
    c.out.offers.clear();
    EXPECT_EQ(c.ch.submit(4, 1, 0, 100).status, SubmitStatus::UnknownPeer);
    EXPECT_EQ(c.ch.on_sequenced(4, kP1, 1, 0, 0, 100, AckTiming::Delayed), Verdict::Drop);
    EXPECT_FALSE(c.ch.ensure_peer(4));
    EXPECT_FALSE(c.ch.has_peer(4));
    EXPECT_EQ(c.ch.peer_state(4), PeerState::Dead);  // unknown peers read as dead
    EXPECT_TRUE(c.out.tx.empty());
}

TEST(ChannelLazy, AnUnusedPeerDeclaredDeadIsReportedDead) {
    // Its posted receives must fail, though nothing was ever sent to it.
    LazyChannel c;
    c.ch.declare_dead(7, "the runtime says so");
    ASSERT_EQ(c.out.dead.size(), 1u);
    EXPECT_EQ(c.out.dead[0], 7u);
    EXPECT_EQ(c.ch.peer_state(7), PeerState::Dead);
}

TEST(ChannelLazy, ABtlGoneLeavesPeersWithoutStateAlone) {
    LazyChannel c;
    ASSERT_TRUE(c.ch.submit(1, 5, 0, 100).ok());
    c.ch.remove_path_everywhere(kP1, 10);
    ASSERT_EQ(c.out.failed.size(), 1u);  // peer 1's path; nobody else made
    EXPECT_EQ(c.out.failed[0], kP1);
    EXPECT_FALSE(c.ch.has_peer(0));
    EXPECT_FALSE(c.ch.has_peer(2));
}

TEST(ChannelLazy, StandbyOffersStandBehindTheOthers) {
    // Offered first, a standby path still stands by for the BML's path.
    LazyChannel c;
    c.out.offers = {{kP2, true}, {kP1, false}};
    ASSERT_TRUE(c.ch.ensure_peer(6));
    EXPECT_EQ(c.ch.path_state(6, kP1), PathState::Alive);
    EXPECT_EQ(c.ch.path_state(6, kP2), PathState::Standby);
}

TEST(ChannelLazy, APeerAddedByHandIsNeverOffered) {
    LazyChannel c;
    c.ch.add_peer(8);
    EXPECT_TRUE(c.ch.add_path(8, kP2));
    ASSERT_TRUE(c.ch.submit(8, 9, 0, 100).ok());
    EXPECT_EQ(c.out.asked, 0);
    EXPECT_EQ(c.out.tx[0].path, kP2);
}

}  // namespace
