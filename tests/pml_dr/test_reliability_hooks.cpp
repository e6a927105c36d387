// The core pieces the reliability glue stands on: stamping a built frame with
// its channel seq, the engine's gate (every intact frame passes it once;
// ACKs go to it), failing what waits on a dead peer, and fault injection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine.hpp"
#include "frame_gate.hpp"
#include "fault.hpp"
#include "frame_util.hpp"

namespace {

using namespace pml::dr::core;
using namespace pml_dr_test;
using plugin::common::FaultCounters;
using plugin::common::FaultInjector;
using plugin::common::FaultPlan;

constexpr std::uint32_t kJob = 7;
constexpr std::uint32_t kCid = 1;

// ---------------------------------------------------------------- stamp

TEST(WireStamp, SetsSeqAndFlagsAndReseals) {
    const auto payload = pattern(100, 1, 0);
    auto f = match_frame(kJob, 1, kCid, 1, 5, 3, payload);
    ASSERT_TRUE(stamp(f, 0xDEADBEEF, 0xC0FFEE, kFlagAckNow | kFlagRetransmit).has_value());
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << d.error().message;
    const Common& c = common_of(d->header);
    EXPECT_EQ(c.frame_seq, 0xDEADBEEFu);
    EXPECT_EQ(c.ack_seq, 0xC0FFEEu);
    EXPECT_EQ(ack_seq_of(f), 0xC0FFEEu);
    EXPECT_EQ(c.flags, kFlagPayloadCsum | kFlagAckNow | kFlagRetransmit);
    EXPECT_EQ(c.src_vpid, 1u);  // everything else untouched
    EXPECT_EQ(std::get<MatchHdr>(d->header).match.msg_seq, 3u);
    EXPECT_EQ(std::vector<std::uint8_t>(d->payload.begin(), d->payload.end()), payload);
    // Restamping (a resend) replaces the seq and the ack_seq; flags only accumulate.
    ASSERT_TRUE(stamp(f, 9, 3, 0).has_value());
    d = decode(f);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(common_of(d->header).frame_seq, 9u);
    EXPECT_EQ(common_of(d->header).ack_seq, 3u);
    EXPECT_EQ(common_of(d->header).flags, kFlagPayloadCsum | kFlagAckNow | kFlagRetransmit);
}

TEST(WireStamp, RejectsWhatIsNotAHeader) {
    std::vector<std::uint8_t> shortf(10, 0);
    EXPECT_FALSE(stamp(shortf, 1, 0, 0).has_value());
    EXPECT_EQ(ack_seq_of(shortf), 0u);
    auto f = match_frame(kJob, 1, kCid, 1, 5, 3, {});
    auto truncated = std::vector<std::uint8_t>(f.begin(), f.begin() + kCommonHeaderSize + 4);
    EXPECT_FALSE(stamp(truncated, 1, 0, 0).has_value());
    f[1] = 0x7F;  // unknown type
    EXPECT_FALSE(stamp(f, 1, 0, 0).has_value());
    auto g = match_frame(kJob, 1, kCid, 1, 5, 3, {});
    EXPECT_FALSE(stamp(g, 1, 0, 0x8000).has_value());  // unknown flag
}

// ---------------------------------------------------------------- gate

struct Sink : EngineSink {
    int matches = 0;
    int ctss = 0;
    int frags = 0;
    bool can_place = false;
    std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(256, 0);  // the "user buffer"
    int placed_calls = 0;
    std::vector<std::pair<std::uint64_t, std::size_t>> accounted;  // on_frag_placed
    bool place_frag(Handle, std::uint64_t offset, std::span<const std::uint8_t> payload,
                    std::uint32_t& crc) override {
        if (!can_place)
            return false;
        ++placed_calls;
        std::copy(payload.begin(), payload.end(), buffer.begin() + static_cast<long>(offset));
        crc = plugin::common::crc32c(payload);
        return true;
    }
    void on_frag_placed(Handle, PeerId, std::uint64_t offset, std::size_t len) override {
        accounted.emplace_back(offset, len);
    }
    void on_match(Handle, const MessageInfo&, std::span<const std::uint8_t>) override { ++matches; }
    void on_cts(Handle, PeerId, const CtsHdr&) override { ++ctss; }
    void on_frag(Handle, PeerId, std::uint64_t, std::span<const std::uint8_t>) override { ++frags; }
    std::vector<std::uint64_t> credits;  // CREDIT frames asked for (released totals)
    void on_credit(PeerId, std::uint64_t total) override { credits.push_back(total); }
};

struct Gate : FrameGate {
    std::vector<std::uint32_t> seen;  // frame seqs admitted or refused
    std::vector<AckHdr> acks;
    std::vector<std::uint64_t> paths;
    bool verdict = true;
    bool is_fresh = true;
    [[nodiscard]] bool fresh(PeerId, std::uint32_t) const override { return is_fresh; }
    bool admit(PeerId, std::uint64_t path, const Common& c, std::size_t) override {
        carried.push_back(c.ack_seq);
        seen.push_back(c.frame_seq);
        paths.push_back(path);
        return verdict;
    }
    void on_ack(PeerId, std::uint64_t path, const AckHdr& a) override {
        acks.push_back(a);
        paths.push_back(path);
    }
    std::vector<std::uint32_t> carried;  // ack_seqs of sequenced frames, in arrival order
    void on_carried_ack(PeerId, std::uint64_t, std::uint32_t ack_seq) override {
        carried.push_back(ack_seq);
    }
    std::vector<std::uint32_t> nacks;
    std::vector<std::uint32_t> damaged;
    std::vector<std::pair<std::uint32_t, bool>> probes;
    void on_nack(PeerId, std::uint64_t, std::uint32_t seq) override { nacks.push_back(seq); }
    void on_probe(PeerId, std::uint64_t, std::uint32_t id, bool reply) override {
        probes.emplace_back(id, reply);
    }
    void on_damaged(PeerId, std::uint64_t, std::uint32_t seq) override { damaged.push_back(seq); }
    std::vector<std::uint64_t> byes;  // paths a BYE came in on
    void on_bye(PeerId, std::uint64_t path) override { byes.push_back(path); }
    std::vector<PeerId> answers;  // answer_credit() calls
    void answer_credit(PeerId peer) override { answers.push_back(peer); }
};

class GateTest : public ::testing::Test {
  protected:
    Config cfg;
    plugin::common::NullLogSink log;
    Engine e{cfg, log};
    Sink sink;
    Gate gate;
    PeerId pa = 0, pb = 0;
    void SetUp() override {
        pa = e.add_peer({kJob, 0});
        pb = e.add_peer({kJob, 1});
        e.set_gate(&gate);
    }
    static std::vector<std::uint8_t> with_seq(std::vector<std::uint8_t> f, std::uint32_t seq) {
        EXPECT_TRUE(stamp(f, seq, seq + 100, 0).has_value());
        return f;
    }
};

TEST_F(GateTest, AdmittedFramesAreProcessedRefusedOnesCounted) {
    e.add_comm(kCid, {pa, pb}, sink);
    EXPECT_EQ(e.post_recv(kCid, 10, 1, 5, sink), nullptr);
    e.on_frame(with_seq(match_frame(kJob, 1, kCid, 1, 5, 0, pattern(8, 1, 0)), 1), sink, 42);
    EXPECT_EQ(sink.matches, 1);
    gate.verdict = false;  // e.g. a duplicate
    e.on_frame(with_seq(match_frame(kJob, 1, kCid, 1, 5, 1, pattern(8, 1, 1)), 2), sink, 42);
    EXPECT_EQ(sink.matches, 1);
    EXPECT_EQ(e.rx().not_admitted, 1u);
    EXPECT_EQ(gate.seen, (std::vector<std::uint32_t>{1, 2}));
    EXPECT_EQ(gate.paths, (std::vector<std::uint64_t>{42, 42}));
    // Every sequenced frame's ack_seq reaches the gate before it is admitted,
    // also that of a refused one (its acknowledgement is true all the same).
    EXPECT_EQ(gate.carried, (std::vector<std::uint32_t>{101, 102}));
}

// With a reliability layer, credit reports ride on ACK frames: an arriving
// frame's release waits for the ACK owed for it, a starved frame is answered
// at once, a later release worth a quarter window asks for an ACK now. A
// peer that sends over trusted local paths (no ACKs) gets CREDIT frames.
TEST(GateCredit, ReportsRideOnAcksExceptForTrustedLocalPeers) {
    Config cfg;
    cfg.unexpected_limit = 4096;  // two peers: a window of 2048, batches of 512
    plugin::common::NullLogSink log;
    Engine e{cfg, log};
    const PeerId pa = e.add_peer({kJob, 0});
    const PeerId pb = e.add_peer({kJob, 1});
    Gate gate;
    e.set_gate(&gate);
    Sink sink;
    e.add_comm(kCid, {pa, pb}, sink);
    auto frame = [](std::uint16_t msg_seq, std::size_t bytes, std::uint16_t flags,
                    std::uint32_t seq) {
        const auto payload = pattern(bytes, 1, msg_seq);
        MatchHdr h = match_hdr(kJob, 1, kCid, 1, 5, msg_seq, payload);
        h.common.flags = static_cast<std::uint16_t>(h.common.flags | flags);
        auto f = frame_of(h, payload);
        EXPECT_TRUE(stamp(f, seq, 0, 0).has_value());
        return f;
    };
    // Starved, matched on arrival: answered now, by ACK.
    EXPECT_EQ(e.post_recv(kCid, 10, 1, 5, sink), nullptr);
    e.on_frame(frame(0, 1000, kFlagCreditStarved, 1), sink, 3);
    EXPECT_EQ(sink.matches, 1);
    EXPECT_EQ(gate.answers, (std::vector<PeerId>{pb}));
    EXPECT_EQ(e.report_credit(pb), 1000u);  // what that ACK carries
    // Not starved, unexpected: nothing now (its owed ACK reports later).
    e.on_frame(frame(1, 1000, 0, 2), sink, 3);
    EXPECT_EQ(gate.answers.size(), 1u);
    // Released by a posted receive, past a quarter window: an ACK now.
    EXPECT_NE(e.post_recv(kCid, 11, 1, 5, sink), nullptr);
    EXPECT_EQ(gate.answers.size(), 2u);
    EXPECT_EQ(e.report_credit(pb), 2000u);
    EXPECT_TRUE(sink.credits.empty());

    // A peer whose LOCAL_MATCH frames we take: CREDIT frames, as without a gate.
    e.set_trust(pb, LocalTrust::Accept);
    e.on_frame(frame(2, 1000, 0, 3), sink, 3);
    EXPECT_NE(e.post_recv(kCid, 12, 1, 5, sink), nullptr);
    EXPECT_EQ(sink.credits, (std::vector<std::uint64_t>{3000}));
    EXPECT_EQ(gate.answers.size(), 2u);
    // ... but a starved frame (it came through the gate) is answered by ACK.
    e.on_frame(frame(3, 1000, kFlagCreditStarved, 4), sink, 3);
    EXPECT_EQ(gate.answers.size(), 3u);
}

// Without a gate (no ACKs to answer in) a sender never asks.
TEST(GateCredit, AGatelessSenderNeverAsks) {
    Config cfg;
    cfg.unexpected_limit = 4096;
    plugin::common::NullLogSink log;
    Engine e{cfg, log};
    (void)e.add_peer({kJob, 0});
    const PeerId pb = e.add_peer({kJob, 1});
    EXPECT_EQ(e.grant_eager(pb, 1500), EagerGrant::Send);
    EXPECT_EQ(e.grant_eager(pb, 1500), EagerGrant::NoRoom);
    EXPECT_FALSE(e.waits_for_credit(pb));
}

TEST_F(GateTest, AcksGoToTheGateOnly) {
    AckHdr a;
    a.common.src_jobid = kJob;
    a.common.src_vpid = 1;
    a.common.ack_seq = 17;
    a.sack_base = 64;
    a.sack_mask = 0x5;
    e.on_frame(frame_of(a), sink, 3);
    ASSERT_EQ(gate.acks.size(), 1u);
    EXPECT_EQ(gate.acks[0].common.ack_seq, 17u);
    EXPECT_TRUE(gate.carried.empty()) << "an ACK's ack_seq is its cumulative part";
    EXPECT_EQ(gate.acks[0].sack_base, 64u);
    EXPECT_EQ(gate.acks[0].sack_mask, 0x5u);
    EXPECT_TRUE(gate.seen.empty());
}

TEST_F(GateTest, BadFramesNeverReachTheGate) {
    // A corrupted frame must not be acknowledged: the sender has to resend it.
    auto f = with_seq(match_frame(kJob, 1, kCid, 1, 5, 0, pattern(64, 1, 0)), 7);
    f.back() ^= 1;  // payload bit: the header is intact, so it is reported damaged
    e.on_frame(f, sink);
    auto g = with_seq(match_frame(kJob, 1, kCid, 1, 5, 0, pattern(64, 1, 0)), 8);
    g[10] ^= 1;  // header bit: nothing can be believed, nothing is reported
    e.on_frame(g, sink);
    // From a process we do not know.
    e.on_frame(with_seq(match_frame(kJob, 9, kCid, 1, 5, 0, {}), 1), sink);
    auto h = with_seq(match_frame(kJob, 9, kCid, 1, 5, 0, pattern(64, 1, 0)), 9);
    h.back() ^= 1;  // damaged, but from a stranger: not reported
    e.on_frame(h, sink);
    EXPECT_TRUE(gate.seen.empty());
    EXPECT_TRUE(gate.carried.empty()) << "nothing of a damaged frame is believed but its seq";
    EXPECT_EQ(gate.damaged, (std::vector<std::uint32_t>{7}));
    EXPECT_EQ(e.rx().checksum_errors + e.rx().decode_errors, 3u);
    EXPECT_EQ(e.rx().unknown_peer, 1u);
}

TEST_F(GateTest, NacksGoToTheGate) {
    NackHdr n;
    n.common.src_jobid = kJob;
    n.common.src_vpid = 1;
    n.seq = 42;
    n.common.ack_seq = 9;
    e.on_frame(frame_of(n), sink, 3);
    EXPECT_EQ(gate.nacks, (std::vector<std::uint32_t>{42}));
    EXPECT_EQ(gate.carried, (std::vector<std::uint32_t>{9}));
    EXPECT_TRUE(gate.seen.empty());
}

TEST_F(GateTest, ByesGoToTheGateWithTheirCarriedAck) {
    ByeHdr b;
    b.common.src_jobid = kJob;
    b.common.src_vpid = 1;
    b.common.ack_seq = 12;
    e.on_frame(frame_of(b), sink, 5);
    EXPECT_EQ(gate.byes, (std::vector<std::uint64_t>{5}));
    EXPECT_EQ(gate.carried, (std::vector<std::uint32_t>{12}));
    EXPECT_TRUE(gate.seen.empty()) << "a BYE is not sequenced";
    // From a process we do not know: dropped before the gate.
    b.common.src_vpid = 9;
    e.on_frame(frame_of(b), sink, 5);
    EXPECT_EQ(gate.byes.size(), 1u);
    EXPECT_EQ(e.rx().unknown_peer, 1u);
}

TEST_F(GateTest, ParkedFramesPassTheGateOnce) {
    // A message for a communicator that does not exist yet is admitted (and
    // acknowledged) on arrival; replaying it later must not ask again.
    e.on_frame(with_seq(match_frame(kJob, 1, kCid, 1, 5, 0, pattern(8, 1, 0)), 1), sink);
    EXPECT_EQ(gate.seen.size(), 1u);
    e.add_comm(kCid, {pa, pb}, sink);
    EXPECT_EQ(gate.seen.size(), 1u);
    EXPECT_EQ(e.post_recv(kCid, 10, 1, 5, sink) != nullptr, true);
}

TEST_F(GateTest, FailPeerTakesEverythingWaitingOnIt) {
    e.add_comm(kCid, {pa, pb}, sink);
    EXPECT_EQ(e.post_recv(kCid, 10, 1, 5, sink), nullptr);           // names the dead peer
    EXPECT_EQ(e.post_recv(kCid, 11, 0, 5, sink), nullptr);           // another peer
    EXPECT_EQ(e.post_recv(kCid, 12, kAnySource, 5, sink), nullptr);  // wildcard: stays
    const std::uint64_t rid = e.register_recv(20, pb, 100);
    const std::uint64_t sid = e.register_send(30, pb);
    (void)e.register_send(31, pa);
    const PeerWaiters w = e.fail_peer(pb);
    EXPECT_EQ(w.posted_recvs, (std::vector<Handle>{10}));
    EXPECT_EQ(w.active_recvs, (std::vector<Handle>{20}));
    EXPECT_EQ(w.sends, (std::vector<Handle>{30}));
    EXPECT_EQ(e.comm(kCid)->posted_count(), 2u);
    // The ids are gone: a late CTS for the failed send is an unknown request.
    e.set_gate(nullptr);
    CtsHdr c;
    c.common.src_jobid = kJob;
    c.common.src_vpid = 1;
    c.send_req = sid;
    c.recv_req = rid;
    e.on_frame(frame_of(c), sink);
    EXPECT_EQ(sink.ctss, 0);
    EXPECT_EQ(e.rx().unknown_request, 1u);
    // Idempotent.
    const PeerWaiters again = e.fail_peer(pb);
    EXPECT_TRUE(again.posted_recvs.empty() && again.active_recvs.empty() && again.sends.empty());
}

// A peer declared dead stays dead for what is posted later: a receive or
// probe naming it can only take what arrived before (source_dead), and a
// wildcard receive waits only while a live process other than this one may
// still send.
TEST_F(GateTest, ADeadPeerStaysDeadForLaterReceives) {
    const PeerId pc = e.add_peer({kJob, 2});
    e.set_local({kJob, 0});  // pa is this process
    constexpr std::uint32_t kPair = kCid, kTrio = 2, kSelf = 3, kLater = 4;
    e.add_comm(kPair, {pa, pb}, sink);
    e.add_comm(kTrio, {pa, pb, pc}, sink);
    e.add_comm(kSelf, {pa}, sink);
    for (std::uint32_t cid : {kPair, kTrio, kSelf})
        EXPECT_FALSE(e.source_dead(cid, kAnySource)) << cid;
    EXPECT_FALSE(e.source_dead(kPair, 1));
    // Data that arrived from pb before it died stays deliverable.
    e.on_frame(with_seq(match_frame(kJob, 1, kPair, 1, 5, 0, pattern(8, 1, 0)), 1), sink);
    EXPECT_EQ(e.post_recv(kPair, 10, kAnySource, 9, sink), nullptr);
    EXPECT_EQ(e.post_recv(kTrio, 11, kAnySource, 9, sink), nullptr);
    EXPECT_EQ(e.post_recv(kSelf, 12, kAnySource, 9, sink), nullptr);
    EXPECT_EQ(e.post_recv(kTrio, 13, 1, 9, sink), nullptr);
    const PeerWaiters w = e.fail_peer(pb);
    // The pair's wildcard has nobody left to hear from but itself; the trio
    // still has pc, and the self communicator lost nobody.
    EXPECT_EQ(w.posted_recvs, (std::vector<Handle>{10, 13}));
    EXPECT_EQ(e.comm(kTrio)->posted_count(), 1u);
    EXPECT_EQ(e.comm(kSelf)->posted_count(), 1u);
    EXPECT_TRUE(e.peer_dead(pb));
    EXPECT_FALSE(e.peer_dead(pa));
    EXPECT_FALSE(e.peer_dead(pc));
    EXPECT_TRUE(e.source_dead(kPair, 1));
    EXPECT_FALSE(e.source_dead(kPair, 0));
    EXPECT_TRUE(e.source_dead(kPair, kAnySource));
    EXPECT_TRUE(e.source_dead(kTrio, 1));
    EXPECT_FALSE(e.source_dead(kTrio, 2));
    EXPECT_FALSE(e.source_dead(kTrio, kAnySource));
    EXPECT_FALSE(e.source_dead(kSelf, kAnySource));
    EXPECT_FALSE(e.source_dead(99, 1)) << "unknown communicator";
    EXPECT_FALSE(e.source_dead(kPair, 7)) << "rank out of range";
    const UnexpectedPtr before = e.take_unexpected(kPair, 1, 5, sink);
    ASSERT_NE(before, nullptr);
    EXPECT_EQ(before->data, pattern(8, 1, 0));
    // A communicator created after the death knows it at once.
    e.add_comm(kLater, {pa, pb}, sink);
    EXPECT_TRUE(e.source_dead(kLater, 1));
    EXPECT_TRUE(e.source_dead(kLater, kAnySource));
    // The trio's last other process dies: its wildcard goes too.
    const PeerWaiters w2 = e.fail_peer(pc);
    EXPECT_EQ(w2.posted_recvs, (std::vector<Handle>{11}));
    EXPECT_TRUE(e.source_dead(kTrio, kAnySource));
    EXPECT_TRUE(e.fail_peer(pc).posted_recvs.empty());
}

// Without set_local (or in a group without this process) a wildcard fails
// only once every member is dead.
TEST_F(GateTest, AWildcardWithoutTheLocalProcessFailsWhenAllAreDead) {
    e.add_comm(kCid, {pa, pb}, sink);
    EXPECT_EQ(e.post_recv(kCid, 10, kAnySource, 9, sink), nullptr);
    EXPECT_TRUE(e.fail_peer(pa).posted_recvs.empty());
    EXPECT_FALSE(e.source_dead(kCid, kAnySource));
    EXPECT_EQ(e.fail_peer(pb).posted_recvs, (std::vector<Handle>{10}));
    EXPECT_TRUE(e.source_dead(kCid, kAnySource));
}

// FRAG payloads are copied to their place while checksummed, before the gate
// admits them: only fresh frames, and only right ones are accounted.
TEST_F(GateTest, FragsArePlacedInOnePassOnlyWhenFreshAndIntact) {
    sink.can_place = true;
    const std::uint64_t rid = e.register_recv(20, pb, 256);
    auto frag = [&](std::uint64_t offset, std::span<const std::uint8_t> payload,
                    std::uint32_t seq) {
        FragHdr h;
        h.common.flags = kFlagPayloadCsum;
        h.common.src_jobid = kJob;
        h.common.src_vpid = 1;
        h.common.frame_seq = seq;
        h.recv_req = rid;
        h.offset = offset;
        h.payload_len = static_cast<std::uint32_t>(payload.size());
        h.payload_crc = plugin::common::crc32c(payload);
        return frame_of(h, payload);
    };
    const auto a = pattern(64, 1, 1);
    e.on_frame(frag(0, a, 1), sink);
    EXPECT_EQ(sink.placed_calls, 1);
    ASSERT_EQ(sink.accounted.size(), 1u);
    EXPECT_EQ(sink.accounted[0], (std::pair<std::uint64_t, std::size_t>{0, 64}));
    EXPECT_EQ(sink.frags, 0);  // never copied a second time
    EXPECT_TRUE(std::equal(a.begin(), a.end(), sink.buffer.begin()));
    // Damaged: copied (it is not accounted, the resend overwrites it), reported.
    auto bad = frag(64, pattern(64, 1, 2), 2);
    bad.back() ^= 0x10;
    e.on_frame(bad, sink);
    EXPECT_EQ(sink.placed_calls, 2);
    EXPECT_EQ(sink.accounted.size(), 1u);
    EXPECT_EQ(gate.damaged, (std::vector<std::uint32_t>{2}));
    EXPECT_EQ(e.rx().checksum_errors, 1u);
    // A copy of a frame already delivered, even a damaged one, is never
    // copied over the data: it takes the normal path (checked, then refused).
    gate.is_fresh = false;
    gate.verdict = false;
    auto dup = frag(0, a, 1);
    dup.back() ^= 0x01;
    e.on_frame(dup, sink);
    e.on_frame(frag(0, a, 1), sink);
    EXPECT_EQ(sink.placed_calls, 2);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), sink.buffer.begin()));
    EXPECT_EQ(e.rx().checksum_errors, 2u);
    EXPECT_EQ(e.rx().not_admitted, 1u);
}

TEST_F(GateTest, FindPeer) {
    PeerId id = 99;
    EXPECT_TRUE(e.find_peer({kJob, 1}, id));
    EXPECT_EQ(id, pb);
    EXPECT_FALSE(e.find_peer({kJob, 5}, id));
}

// ---------------------------------------------------------------- faults

TEST(FaultInjector, OffByDefault) {
    FaultInjector f;
    EXPECT_FALSE(f.enabled());
    const FaultPlan p = f.next(100);
    EXPECT_FALSE(p.drop || p.corrupt || p.duplicate);
}

TEST(FaultInjector, RatesAndDeterminism) {
    FaultInjector a(0.1, 0.05, 0.02, 42);
    FaultInjector b(0.1, 0.05, 0.02, 42);
    FaultInjector c(0.1, 0.05, 0.02, 43);
    constexpr int kN = 200000;
    int differ = 0;
    for (int i = 0; i < kN; ++i) {
        const FaultPlan pa = a.next(1000);
        const FaultPlan pb = b.next(1000);
        const FaultPlan pc = c.next(1000);
        ASSERT_EQ(pa.drop, pb.drop);
        ASSERT_EQ(pa.corrupt, pb.corrupt);
        ASSERT_EQ(pa.byte, pb.byte);
        ASSERT_EQ(pa.mask, pb.mask);
        ASSERT_EQ(pa.duplicate, pb.duplicate);
        if (pa.drop != pc.drop || pa.corrupt != pc.corrupt)
            ++differ;
        if (pa.corrupt) {
            ASSERT_LT(pa.byte, 1000u);
            ASSERT_EQ(__builtin_popcount(pa.mask), 1);
        }
        ASSERT_FALSE(pa.drop && (pa.corrupt || pa.duplicate));
    }
    EXPECT_GT(differ, 0);  // another seed, other faults
    const FaultCounters& k = a.counters();
    EXPECT_NEAR(static_cast<double>(k.dropped) / kN, 0.1, 0.005);
    // Corruption and duplication apply to the frames not dropped.
    EXPECT_NEAR(static_cast<double>(k.corrupted) / kN, 0.9 * 0.05, 0.003);
    EXPECT_NEAR(static_cast<double>(k.duplicated) / kN, 0.9 * 0.02, 0.002);
}

TEST(FaultInjector, ClampsAndNeverCorruptsEmptyFrames) {
    FaultInjector f(-1.0, 2.0, 0.0, 1);
    for (int i = 0; i < 100; ++i) {
        const FaultPlan p = f.next(0);
        EXPECT_FALSE(p.drop);
        EXPECT_FALSE(p.corrupt);
    }
    EXPECT_TRUE(f.next(10).corrupt);  // probability clamped to 1
}

}  // namespace
