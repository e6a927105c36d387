// The BYE exchange at finalize (channel_leave.cpp): when the last BYE may go.
#include "channel_fixture.hpp"

using namespace channel_fixture;

namespace {

// A frame that went unacknowledged for a PTO: the path is Suspect and a
// PROBE is out; the frame's ACK then makes the probe moot.
struct MootProbe : ::testing::Test {
    Sender s{test_params(), false};
    std::uint32_t probe = 0;

    void SetUp() override {
        const std::uint32_t seq = s.submit(1);
        s.run_timers(1000);  // the first PTO (400) expires, the next is past 1000
        ASSERT_EQ(s.ch.path_state(kPeer, kP1), PathState::Suspect);
        ASSERT_EQ(s.out.probes.size(), 1u);
        ASSERT_FALSE(s.out.probes.back().reply);
        probe = s.out.probes.back().id;
        s.ack(seq);
        ASSERT_EQ(s.ch.path_state(kPeer, kP1), PathState::Alive);
        s.ch.leave(s.out.now);
        s.ch.on_bye(kPeer, kP1, s.out.now);  // the peer left first: ours is the last BYE
    }
};

// The peer answers every PROBE it receives, before it reads our BYE: an
// answer written to a process that already left is lost, and over stock tcp
// the write error closes the connection with our BYE unread in it.
TEST_F(MootProbe, TheLastByeWaitsForItsAnswer) {
    EXPECT_TRUE(s.out.byes.empty());
    EXPECT_EQ(s.ch.leaving(s.out.now + 10), 1u);
    EXPECT_TRUE(s.out.byes.empty());
    s.ch.on_probe_ack(kPeer, kP1, probe, s.out.now + 10);
    EXPECT_EQ(s.ch.leaving(s.out.now + 10), 0u);
    ASSERT_EQ(s.out.byes.size(), 1u);
    EXPECT_TRUE(s.ch.left(kPeer));
}

// An answer that does not come within a PTO is taken as lost: the BYE goes
// then, and finalize does not wait for its bound.
TEST_F(MootProbe, AnAnswerLostForAPtoHoldsTheByeNoLonger) {
    EXPECT_EQ(s.ch.leaving(s.out.now + 10), 1u);
    EXPECT_EQ(s.ch.leaving(s.out.now + 2 * test_params().ack_timeout), 0u);
    ASSERT_EQ(s.out.byes.size(), 1u);
    EXPECT_TRUE(s.ch.left(kPeer));
}

}  // namespace
