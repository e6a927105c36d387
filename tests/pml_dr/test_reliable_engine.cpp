// ReliableEngine: the engine and the channel as one object under one clock.
// Two of them, ranks 0 and 1 of one job, joined by hand: a MATCH goes from
// rank 0 to rank 1, is taken once (a copy of it is not), rank 1's ACK comes
// back and releases rank 0's frame; timers report their deadline once per
// change; a BTL lost for every peer fails their paths.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "channel_fixture.hpp"
#include "frame_util.hpp"
#include "reliable_engine.hpp"

namespace {

using namespace pml::dr::core;
using channel_fixture::Rec;
using plugin::common::kNever;
using pml_dr_test::frame_of;
using pml_dr_test::match_frame;

constexpr std::uint32_t kJob = 42;
constexpr std::uint32_t kCid = 0;
constexpr PathId kPath = 7;

struct Sink : EngineSink {
    std::vector<MessageInfo> unexpected;
    void on_match(Handle, const MessageInfo&, std::span<const std::uint8_t>) override {
        ADD_FAILURE() << "no receive was posted";
    }
    void on_unexpected(const Unexpected& u) override { unexpected.push_back(u.info); }
    void on_cts(Handle, PeerId, const CtsHdr&) override { ADD_FAILURE() << "unexpected CTS"; }
    void on_frag(Handle, PeerId, std::uint64_t, std::span<const std::uint8_t>) override {
        ADD_FAILURE() << "unexpected FRAG";
    }
};

// Rank `me` of a two-rank job, its peer (the other rank) on kPath.
struct Rank {
    Rec out;
    ReliableEngine rel;
    Sink sink;
    explicit Rank(std::uint32_t me, Config cfg = {})
        : rel(cfg, channel_fixture::test_params(), out, plugin::common::NullLogSink::instance()) {
        out.ch = &rel.channel();
        for (std::uint32_t r = 0; r < 2; ++r)
            EXPECT_EQ(rel.engine().add_peer({kJob, r}), static_cast<PeerId>(r));
        rel.engine().set_local({kJob, me});
        const PeerId other = 1 - me;
        rel.channel().add_peer(other);
        EXPECT_TRUE(rel.channel().add_path(other, kPath));
        rel.engine().add_comm(kCid, {0, 1}, sink);
    }
};

TEST(ReliableEngine, AFrameIsTakenOnceAndItsAckReleasesTheSendersCopy) {
    Rank a(0);
    Rank b(1);
    const std::vector<std::uint8_t> payload = {1, 2, 3, 4, 5};
    std::vector<std::uint8_t> frame = match_frame(kJob, 0, kCid, 0, 9, 0, payload);

    // Rank 0 submits it; the channel puts it on the path with its seq.
    const auto token = reinterpret_cast<FrameToken>(&frame);
    ASSERT_TRUE(a.rel.channel().submit(1, token, 0, frame.size()).ok());
    ASSERT_EQ(a.out.tx.size(), 1u);
    const FrameRef sent = a.out.tx[0].ref;
    ASSERT_TRUE(stamp(frame, sent.seq, a.rel.channel().ack_seq(1), 0).has_value());

    // Rank 1 takes it once: unexpected (nothing posted); the copy is refused.
    EXPECT_TRUE(b.rel.on_frame(frame, b.sink, kPath, 10));
    ASSERT_EQ(b.sink.unexpected.size(), 1u);
    EXPECT_EQ(b.sink.unexpected[0].tag, 9);
    EXPECT_EQ(b.sink.unexpected[0].msg_len, payload.size());
    EXPECT_FALSE(b.rel.on_frame(frame, b.sink, kPath, 11));
    EXPECT_EQ(b.sink.unexpected.size(), 1u);
    EXPECT_EQ(b.rel.engine().rx().not_admitted, 1u);

    // Its ACK is due by a timer (one frame is below ack_every): the deadline
    // is reported once, then not again until it changes.
    const std::optional<Micros> due = b.rel.deadline_change();
    ASSERT_TRUE(due.has_value());
    ASSERT_NE(*due, kNever);
    EXPECT_EQ(b.rel.deadline_change(), std::nullopt);
    EXPECT_EQ(b.rel.deadline_change(true), due);
    b.rel.on_timer(*due);
    ASSERT_EQ(b.out.acks.size(), 1u);
    EXPECT_EQ(b.out.acks[0].ack.cum_seq, sent.seq);

    // The ACK reaches rank 0 (not a sequenced frame: nothing "taken") and
    // releases the kept copy.
    AckHdr ack;
    ack.common.type = FrameType::Ack;
    ack.common.src_jobid = kJob;
    ack.common.src_vpid = 1;
    ack.common.ack_seq = b.out.acks[0].ack.cum_seq;
    ack.sack_base = b.out.acks[0].ack.sack_base;
    ack.sack_mask = b.out.acks[0].ack.sack_mask;
    EXPECT_FALSE(a.rel.on_frame(frame_of(ack), a.sink, kPath, 20));
    a.rel.settle_batches();
    ASSERT_EQ(a.out.acked_tokens.size(), 1u);
    EXPECT_EQ(a.out.acked_tokens[0], token);
    EXPECT_TRUE(a.out.abandoned_tokens.empty());
}

// The ACK frame rank `from` sent last, as it goes on the wire.
std::vector<std::uint8_t> last_ack(const Rank& from, std::uint32_t vpid) {
    const AckInfo& info = from.out.acks.back().ack;
    AckHdr ack;
    ack.common.type = FrameType::Ack;
    ack.common.flags = info.credit_answer ? kFlagCreditAnswer : 0;
    ack.common.src_jobid = kJob;
    ack.common.src_vpid = vpid;
    ack.common.ack_seq = info.cum_seq;
    ack.sack_base = info.sack_base;
    ack.sack_mask = info.sack_mask;
    ack.released_total = info.released_total;
    return frame_of(ack);
}

// A MATCH of `bytes` from rank 0 with `flags`, submitted to the channel and
// stamped as it goes out.
std::vector<std::uint8_t> sent_match(Rank& a, std::size_t bytes, std::uint16_t flags,
                                     std::uint16_t msg_seq, FrameToken token) {
    const std::vector<std::uint8_t> payload(bytes, 0x5A);
    MatchHdr h = pml_dr_test::match_hdr(kJob, 0, kCid, 0, 3, msg_seq, payload, true);
    h.common.flags = static_cast<std::uint16_t>(h.common.flags | flags);
    std::vector<std::uint8_t> frame = frame_of(h, payload);
    const std::size_t before = a.out.tx.size();
    EXPECT_TRUE(a.rel.channel().submit(1, token, 0, frame.size()).ok());
    EXPECT_EQ(a.out.tx.size(), before + 1);
    EXPECT_TRUE(stamp(frame, a.out.tx.back().ref.seq, a.rel.channel().ack_seq(1), 0).has_value());
    return frame;
}

// The eager window of a rank of a two-rank job: 3000 bytes.
Config small_window() {
    Config cfg;
    cfg.unexpected_limit = 6000;
    return cfg;
}

// A window that holds one 2 KB message: the first is sent and asks; the
// second waits for the answer, which the receiver's ACK carries right after
// it took the first (not before: the ACK holds its release); then it fits.
TEST(ReliableEngine, ASenderShortOfCreditWaitsForTheAnswerInTheAck) {
    Rank a(0, small_window());
    Rank b(1, small_window());
    ASSERT_EQ(a.rel.engine().eager_window(), 3000u);
    ASSERT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::SendAndAsk);
    EXPECT_TRUE(a.rel.engine().waits_for_credit(1));
    const auto first = sent_match(a, 2048, kFlagCreditStarved, 0, 1);
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::Wait);
    EXPECT_EQ(a.rel.grant_eager(1, 900), EagerGrant::Send);  // what fits goes, unflagged
    a.rel.engine().uncharge_eager(1, 900);

    // Rank 1 posted the receive: the message leaves its store at once, and
    // the one ACK it sends (now, not after ack_delay) reports the release.
    EXPECT_EQ(b.rel.engine().post_recv(kCid, 1, 0, 3, b.sink), nullptr);
    struct Matched : Sink {
        int matched = 0;
        void on_match(Handle, const MessageInfo&, std::span<const std::uint8_t>) override {
            ++matched;
        }
    } matched;
    EXPECT_TRUE(b.rel.on_frame(first, matched, kPath, 10));
    EXPECT_EQ(matched.matched, 1);
    ASSERT_EQ(b.out.acks.size(), 1u);
    EXPECT_TRUE(b.out.acks[0].ack.credit_answer);
    EXPECT_EQ(b.out.acks[0].ack.released_total, 2048u);
    EXPECT_EQ(b.rel.engine().flow(0)->reported, 2048u);

    // The answer reaches rank 0: the wait ends and the window is whole again.
    EXPECT_FALSE(a.rel.on_frame(last_ack(b, 1), a.sink, kPath, 20));
    EXPECT_FALSE(a.rel.engine().waits_for_credit(1));
    EXPECT_EQ(a.rel.engine().flow(1)->released_by_peer, 2048u);
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::SendAndAsk);
}

// The receive is not posted: the answer says nothing was released, and
// what did not fit goes without data (RNDV) from then on, without waiting.
TEST(ReliableEngine, AnAnswerWithoutRoomEndsTheWait) {
    Rank a(0, small_window());
    Rank b(1, small_window());
    ASSERT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::SendAndAsk);
    const auto first = sent_match(a, 2048, kFlagCreditStarved, 0, 1);
    EXPECT_TRUE(b.rel.on_frame(first, b.sink, kPath, 10));
    ASSERT_EQ(b.sink.unexpected.size(), 1u);
    ASSERT_EQ(b.out.acks.size(), 1u);
    EXPECT_TRUE(b.out.acks[0].ack.credit_answer);
    EXPECT_EQ(b.out.acks[0].ack.released_total, 0u);
    EXPECT_FALSE(a.rel.on_frame(last_ack(b, 1), a.sink, kPath, 20));
    EXPECT_FALSE(a.rel.engine().waits_for_credit(1));
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::NoRoom);
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::NoRoom);
}

// The answering ACK is lost and the frame is acknowledged otherwise (a
// later ACK without the flag): nothing is in flight, so no answer can come
// any more; the sender stops waiting instead of holding its message forever.
TEST(ReliableEngine, ALostAnswerDoesNotHoldTheSenderForever) {
    Rank a(0, small_window());
    Rank b(1, small_window());
    ASSERT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::SendAndAsk);
    const auto first = sent_match(a, 2048, kFlagCreditStarved, 0, 1);
    EXPECT_TRUE(b.rel.on_frame(first, b.sink, kPath, 10));
    ASSERT_EQ(b.out.acks.size(), 1u);
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::Wait);  // in flight: the answer may come
    // A plain cumulative ACK acknowledges the frame (the answer was lost).
    AckHdr plain;
    plain.common.type = FrameType::Ack;
    plain.common.src_jobid = kJob;
    plain.common.src_vpid = 1;
    plain.common.ack_seq = b.out.acks[0].ack.cum_seq;
    EXPECT_FALSE(a.rel.on_frame(frame_of(plain), a.sink, kPath, 30));
    a.rel.settle_batches();
    EXPECT_EQ(a.rel.channel().unacked(1), 0u);
    EXPECT_TRUE(a.rel.engine().waits_for_credit(1));
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::NoRoom);
    EXPECT_FALSE(a.rel.engine().waits_for_credit(1));
}

// A peer on trusted local paths has no ACK to answer: it never asks.
TEST(ReliableEngine, ATrustedLocalPeerNeverAsks) {
    Rank a(0, small_window());
    a.rel.engine().set_trust(1, LocalTrust::AcceptAndSend);
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::Send);
    EXPECT_EQ(a.rel.grant_eager(1, 2048), EagerGrant::NoRoom);
    EXPECT_FALSE(a.rel.engine().waits_for_credit(1));
}

TEST(ReliableEngine, ADamagedFrameIsNotTaken) {
    Rank b(1);
    const std::vector<std::uint8_t> payload(64, 0xAB);
    std::vector<std::uint8_t> frame = match_frame(kJob, 0, kCid, 0, 1, 0, payload);
    ASSERT_TRUE(stamp(frame, 1, 0, 0).has_value());
    frame.back() ^= 0x01;  // payload checksum fails
    EXPECT_FALSE(b.rel.on_frame(frame, b.sink, kPath, 10));
    EXPECT_TRUE(b.sink.unexpected.empty());
    EXPECT_EQ(b.rel.engine().rx().checksum_errors, 1u);
}

TEST(ReliableEngine, ABtlLostForEveryPeerFailsTheirPaths) {
    Rank a(0);
    a.rel.path_lost_to_all(kPath, 5);
    ASSERT_EQ(a.out.failed.size(), 1u);
    EXPECT_EQ(a.out.failed[0], kPath);
    EXPECT_EQ(a.rel.channel().live_paths(1), 0u);
}

TEST(ReliableEngine, AfterAllPeersAreRemovedFramesFromThemAreDropped) {
    Rank b(1);
    b.rel.remove_all_peers();
    std::vector<std::uint8_t> frame = match_frame(kJob, 0, kCid, 0, 1, 0, {});
    ASSERT_TRUE(stamp(frame, 1, 0, 0).has_value());
    EXPECT_FALSE(b.rel.on_frame(frame, b.sink, kPath, 10));
    EXPECT_TRUE(b.sink.unexpected.empty());
}

}  // namespace
