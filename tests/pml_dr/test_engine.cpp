// Engine: validation and dispatch of arriving frames, request-id tables,
// parking of frames for communicators that do not exist yet.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine.hpp"
#include "frame_util.hpp"

namespace {

using namespace pml::dr::core;
using namespace pml_dr_test;

constexpr std::uint32_t kJob = 7;
constexpr std::uint32_t kCid = 1;

struct MatchRec {
    Handle recv;
    MessageInfo info;
    std::vector<std::uint8_t> data;
};
struct CtsRec {
    Handle send;
    PeerId peer;
    CtsHdr cts;
};
struct FragRec {
    Handle recv;
    PeerId peer;
    std::uint64_t offset;
    std::vector<std::uint8_t> data;
};

struct Sink : EngineSink {
    std::vector<std::pair<PeerId, std::uint64_t>> credits;
    std::vector<MatchRec> matches;
    std::vector<MessageInfo> unexpected;
    std::vector<CtsRec> ctss;
    std::vector<FragRec> frags;
    void on_match(Handle recv, const MessageInfo& info,
                  std::span<const std::uint8_t> eager) override {
        matches.push_back(MatchRec{recv, info, {eager.begin(), eager.end()}});
    }
    void on_unexpected(const Unexpected& u) override { unexpected.push_back(u.info); }
    void on_cts(Handle send, PeerId peer, const CtsHdr& cts) override {
        ctss.push_back(CtsRec{send, peer, cts});
    }
    void on_frag(Handle recv, PeerId peer, std::uint64_t offset,
                 std::span<const std::uint8_t> payload) override {
        frags.push_back(FragRec{recv, peer, offset, {payload.begin(), payload.end()}});
    }
    void on_credit(PeerId peer, std::uint64_t released_total) override {
        credits.emplace_back(peer, released_total);
    }
    std::vector<std::pair<Handle, PutHdr>> puts;
    std::vector<std::pair<Handle, std::uint64_t>> puts_done;  // (recv, path)
    std::vector<std::optional<std::uint32_t>> puts_done_crc;
    void on_put(Handle send, PeerId, const PutHdr& put, std::uint64_t) override {
        puts.emplace_back(send, put);
    }
    void on_put_done(Handle recv, PeerId, std::uint64_t path,
                     std::optional<std::uint32_t> data_crc) override {
        puts_done.emplace_back(recv, path);
        puts_done_crc.push_back(data_crc);
    }
    [[nodiscard]] std::size_t calls() const {
        return matches.size() + unexpected.size() + ctss.size() + frags.size() + credits.size() +
               puts.size() + puts_done.size();
    }
};

// The drop counters, in a form that can be compared and printed.
using Drops = std::array<std::uint64_t, 9>;
constexpr std::array<const char*, 9> kDropNames = {
    "decode_errors", "checksum_errors",      "unknown_peer",         "bad_rank",  "unknown_request",
    "duplicates",    "pending_unknown_comm", "dropped_unknown_comm", "bad_credit"};
Drops drops(const RxCounters& rx) {
    return {
        rx.decode_errors,   rx.checksum_errors, rx.unknown_peer,         rx.bad_rank,
        rx.unknown_request, rx.duplicates,      rx.pending_unknown_comm, rx.dropped_unknown_comm,
        rx.bad_credit};
}
std::string describe(const Drops& d) {
    std::string s;
    for (std::size_t i = 0; i < d.size(); ++i)
        if (d[i] != 0)
            s += std::string(kDropNames[i]) + "=" + std::to_string(d[i]) + " ";
    return s.empty() ? "none" : s;
}
std::size_t index_of(std::string_view name) {
    for (std::size_t i = 0; i < kDropNames.size(); ++i)
        if (name == kDropNames[i])
            return i;
    ADD_FAILURE() << "no counter " << name;
    return 0;
}

class EngineTest : public ::testing::Test {
  protected:
    Config cfg;
    plugin::common::NullLogSink log;
    std::unique_ptr<Engine> e;
    Sink sink;
    PeerId pa = 0, pb = 0, pc = 0;  // ranks 0, 1, 2 of kCid

    void SetUp() override { make_engine(cfg); }
    void make_engine(const Config& c) {
        e = std::make_unique<Engine>(c, log);
        pa = e->add_peer({kJob, 0});
        pb = e->add_peer({kJob, 1});
        pc = e->add_peer({kJob, 2});
        e->add_comm(kCid, {pa, pb, pc}, sink);
    }

    // Feeds one frame that must be dropped, exactly into counter `name`, with
    // no call into the sink.
    void expect_dropped(const std::vector<std::uint8_t>& f, std::string_view name) {
        const Drops before = drops(e->rx());
        const std::size_t calls = sink.calls();
        e->on_frame(f, sink);
        Drops want = before;
        ++want[index_of(name)];
        EXPECT_EQ(describe(drops(e->rx())), describe(want)) << "expected one drop in " << name;
        EXPECT_EQ(sink.calls(), calls) << "a dropped frame reached the sink";
    }
    void expect_accepted(const std::vector<std::uint8_t>& f, std::uint64_t path = 0) {
        const Drops before = drops(e->rx());
        e->on_frame(f, sink, path);
        EXPECT_EQ(describe(drops(e->rx())), describe(before)) << "frame was dropped";
    }

    static std::vector<std::uint8_t> cts_frame(std::uint32_t vpid, std::uint64_t send_req,
                                               std::uint64_t recv_req, std::uint64_t offset,
                                               std::uint64_t want_len) {
        CtsHdr h;
        h.common.src_jobid = kJob;
        h.common.src_vpid = vpid;
        h.send_req = send_req;
        h.recv_req = recv_req;
        h.offset = offset;
        h.want_len = want_len;
        return frame_of(h);
    }
    static std::vector<std::uint8_t> frag_frame(std::uint32_t vpid, std::uint64_t recv_req,
                                                std::uint64_t offset,
                                                std::span<const std::uint8_t> payload) {
        FragHdr h;
        h.common.flags = kFlagPayloadCsum;
        h.common.src_jobid = kJob;
        h.common.src_vpid = vpid;
        h.recv_req = recv_req;
        h.offset = offset;
        h.payload_len = static_cast<std::uint32_t>(payload.size());
        h.payload_crc = plugin::common::crc32c(payload);
        return frame_of(h, payload);
    }
};

TEST_F(EngineTest, PeerTable) {
    EXPECT_EQ(e->peer_count(), 3u);
    EXPECT_EQ(e->add_peer({kJob, 1}), pb);  // idempotent
    EXPECT_EQ(e->peer_count(), 3u);
    const PeerId other = e->add_peer({kJob + 1, 1});  // same vpid, other job: another peer
    EXPECT_NE(other, pb);
    ASSERT_NE(e->peer_name(pc), nullptr);
    EXPECT_EQ(e->peer_name(pc)->vpid, 2u);
    EXPECT_EQ(e->peer_name(other)->jobid, kJob + 1);
    EXPECT_EQ(e->peer_name(99), nullptr);
}

TEST_F(EngineTest, ValidMatchReachesPostedReceive) {
    EXPECT_EQ(e->post_recv(kCid, 10, 1, 5, sink), nullptr);
    const auto payload = pattern(300, 1, 0);
    expect_accepted(match_frame(kJob, 1, kCid, 1, 5, 0, payload), 77);
    ASSERT_EQ(sink.matches.size(), 1u);
    const auto& m = sink.matches[0];
    EXPECT_EQ(m.recv, 10u);
    EXPECT_EQ(m.info.peer, pb);
    EXPECT_EQ(m.info.src, 1);
    EXPECT_EQ(m.info.tag, 5);
    EXPECT_FALSE(m.info.rndv);
    EXPECT_EQ(m.info.msg_len, payload.size());
    EXPECT_EQ(m.info.path, 77u);
    EXPECT_EQ(m.data, payload);
    EXPECT_EQ(e->rx().frames, 1u);
    EXPECT_EQ(e->rx().bytes, kMatchHeaderSize + payload.size());
    EXPECT_EQ(e->held_bytes(), 0u);
}

TEST_F(EngineTest, RndvInfoPassedThrough) {
    const auto payload = pattern(64, 2, 0);
    RndvHdr h;
    h.common.flags = kFlagPayloadCsum | kFlagSync;
    h.common.src_jobid = kJob;
    h.common.src_vpid = 2;
    h.match.cid = kCid;
    h.match.src_rank = 2;
    h.match.tag = 11;
    h.match.payload_len = 64;
    h.match.payload_crc = plugin::common::crc32c(payload);
    h.msg_len = 1 << 20;
    h.send_req = 0xABCDEF;
    EXPECT_EQ(e->post_recv(kCid, 5, kAnySource, kAnyTag, sink), nullptr);
    expect_accepted(frame_of(h, payload), 3);
    ASSERT_EQ(sink.matches.size(), 1u);
    const auto& i = sink.matches[0].info;
    EXPECT_TRUE(i.rndv);
    EXPECT_TRUE(i.sync);
    EXPECT_FALSE(i.rget);
    EXPECT_EQ(i.msg_len, 1u << 20);
    EXPECT_EQ(i.send_req, 0xABCDEFu);
    EXPECT_EQ(i.peer, pc);
    EXPECT_EQ(i.path, 3u);
    EXPECT_EQ(sink.matches[0].data, payload);
    // RGET variant: handle bytes and remote address reach the glue.
    h.common.flags = kFlagPayloadCsum | kFlagRget;
    h.match.msg_seq = 1;
    h.remote_addr = 0x7000'0000;
    EXPECT_EQ(e->post_recv(kCid, 6, 2, 11, sink), nullptr);
    expect_accepted(frame_of(h, payload));
    ASSERT_EQ(sink.matches.size(), 2u);
    EXPECT_TRUE(sink.matches[1].info.rget);
    EXPECT_FALSE(sink.matches[1].info.sync);
    EXPECT_EQ(sink.matches[1].info.remote_addr, 0x7000'0000u);
}

TEST_F(EngineTest, UnknownPeerDropped) {
    const auto p = pattern(10, 0, 0);
    expect_dropped(match_frame(kJob + 1, 0, kCid, 0, 5, 0, p), "unknown_peer");  // other job
    expect_dropped(match_frame(kJob, 3, kCid, 0, 5, 0, p), "unknown_peer");      // no such vpid
    expect_dropped(cts_frame(9, 1, 1, 0, 0), "unknown_peer");
    AckHdr ack;
    ack.common.src_jobid = 0;
    expect_dropped(frame_of(ack), "unknown_peer");
    EXPECT_EQ(e->comm(kCid)->unexpected_count(), 0u);
    EXPECT_EQ(e->held_bytes(), 0u);
}

TEST_F(EngineTest, ACreditStarvedMatchIsAnsweredAtOnceEitherWay) {
    // No gate (no ACK to carry the release): a starved sender's release is
    // reported by CREDIT right away, however small, whether its message met
    // its receive on the direct path or on the general one.
    const auto p = pattern(16, 0, 0);
    auto starved = [&](std::uint16_t seq) {
        MatchHdr h = match_hdr(kJob, 0, kCid, 0, 5, seq, p);
        h.common.flags |= kFlagCreditStarved;
        return frame_of(h, p);
    };
    EXPECT_EQ(e->post_recv(kCid, 1, 0, 5, sink), nullptr);
    expect_accepted(starved(0));
    ASSERT_EQ(sink.matches.size(), 1u);
    ASSERT_EQ(sink.credits.size(), 1u) << "the direct path answers the starved sender";
    EXPECT_EQ(sink.credits[0].second, p.size());
    EXPECT_EQ(e->post_recv(kCid, 2, kAnySource, 5, sink), nullptr);  // the general way
    expect_accepted(starved(1));
    ASSERT_EQ(sink.matches.size(), 2u);
    ASSERT_EQ(sink.credits.size(), 2u);
    EXPECT_EQ(sink.credits[1].second, 2 * p.size());
}

TEST_F(EngineTest, SpoofedRankDroppedWhileItsReceiveWaits) {
    // The direct path (a receive first in line for the claimed rank) checks
    // the sender as the general one does.
    const auto p = pattern(10, 0, 0);
    EXPECT_EQ(e->post_recv(kCid, 1, 0, 5, sink), nullptr);
    expect_dropped(match_frame(kJob, 1, kCid, 0, 5, 0, p), "bad_rank");  // B claims rank 0
    EXPECT_EQ(e->comm(kCid)->posted_count(), 1u);
    expect_accepted(match_frame(kJob, 0, kCid, 0, 5, 0, p));
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].recv, 1u);
    EXPECT_EQ(sink.matches[0].info.src, 0);
    EXPECT_EQ(e->comm(kCid)->posted_count(), 0u);
}

TEST_F(EngineTest, SpoofedRankDropped) {
    const auto p = pattern(10, 0, 0);
    // B (rank 1) claims to be rank 0.
    expect_dropped(match_frame(kJob, 1, kCid, 0, 5, 0, p), "bad_rank");
    // Ranks outside the communicator.
    expect_dropped(match_frame(kJob, 0, kCid, 3, 5, 0, p), "bad_rank");
    expect_dropped(match_frame(kJob, 0, kCid, -1, 5, 0, p), "bad_rank");
    expect_dropped(match_frame(kJob, 0, kCid, INT32_MIN, 5, 0, p), "bad_rank");
    // A known process that is not in this communicator at all.
    const PeerId outsider = e->add_peer({kJob, 9});
    (void)outsider;
    expect_dropped(match_frame(kJob, 9, kCid, 2, 5, 0, p), "bad_rank");
    EXPECT_EQ(e->comm(kCid)->unexpected_count(), 0u);
    EXPECT_EQ(e->held_bytes(), 0u);
    // The spoofed seq 0 did not consume rank 0's sequence: the real one matches.
    EXPECT_EQ(e->post_recv(kCid, 1, 0, 5, sink), nullptr);
    expect_accepted(match_frame(kJob, 0, kCid, 0, 5, 0, p));
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].info.peer, pa);
}

TEST_F(EngineTest, SpoofedRndvDropped) {
    RndvHdr h;
    h.common.src_jobid = kJob;
    h.common.src_vpid = 2;
    h.match.cid = kCid;
    h.match.src_rank = 1;
    h.msg_len = 1000;
    expect_dropped(frame_of(h), "bad_rank");
}

TEST_F(EngineTest, CorruptAndMalformedFramesDropped) {
    auto f = match_frame(kJob, 0, kCid, 0, 5, 0, pattern(40, 0, 0));
    auto flipped = f;
    flipped[10] ^= 1;
    expect_dropped(flipped, "checksum_errors");
    auto payload_flip = f;
    payload_flip.back() ^= 0x80;
    expect_dropped(payload_flip, "checksum_errors");
    expect_dropped(std::vector<std::uint8_t>(f.begin(), f.begin() + 30), "decode_errors");
    expect_dropped(std::vector<std::uint8_t>(f.begin(), f.end() - 1), "decode_errors");
    expect_dropped({}, "decode_errors");
    auto version = f;
    version[0] = kWireVersion + 1;
    reseal(version);
    expect_dropped(version, "decode_errors");
    EXPECT_EQ(e->rx().frames, 6u);
    // None of them consumed rank 0's seq 0.
    expect_accepted(f);
    EXPECT_EQ(e->comm(kCid)->unexpected_count(), 1u);
}

TEST_F(EngineTest, DuplicateMatchDropped) {
    const auto f = match_frame(kJob, 0, kCid, 0, 5, 0, pattern(10, 0, 0));
    expect_accepted(f);
    EXPECT_EQ(sink.unexpected.size(), 1u);
    expect_dropped(f, "duplicates");
    EXPECT_EQ(e->comm(kCid)->unexpected_count(), 1u);
    EXPECT_EQ(e->held_bytes(), 10u);
}

TEST_F(EngineTest, UnknownRequestIdsDropped) {
    expect_dropped(cts_frame(0, 999, 5, 0, 100), "unknown_request");
    expect_dropped(frag_frame(0, 999, 0, pattern(8, 0, 0)), "unknown_request");
    expect_dropped(cts_frame(0, 0, 5, 0, 100), "unknown_request");  // 0 is never issued
    // Released ids are stale.
    const auto s = e->register_send(1000, pa);
    const auto r = e->register_recv(2000, pa, 64);
    EXPECT_NE(s, r);
    e->release_send(s);
    e->release_recv(r);
    expect_dropped(cts_frame(0, s, 1, 0, 64), "unknown_request");
    expect_dropped(frag_frame(0, r, 0, pattern(8, 0, 0)), "unknown_request");
    // A CTS carries our send id in send_req; our recv id in the CTS means nothing.
    const auto r2 = e->register_recv(3000, pa, 64);
    expect_dropped(cts_frame(0, r2, r2, 0, 64), "unknown_request");
}

TEST_F(EngineTest, ForeignPeerCannotUseAnotherPeersRequestId) {
    const auto s = e->register_send(111, pa);
    const auto r = e->register_recv(222, pa, 100);
    expect_dropped(cts_frame(1, s, 7, 0, 100), "unknown_request");  // B uses A's send id
    expect_dropped(frag_frame(1, r, 0, pattern(10, 1, 0)),
                   "unknown_request");  // B uses A's recv id
    expect_dropped(frag_frame(2, r, 90, pattern(10, 2, 0)), "unknown_request");  // so does C
    // A itself may.
    expect_accepted(cts_frame(0, s, 7, 0, 100));
    expect_accepted(frag_frame(0, r, 0, pattern(10, 0, 0)));
    ASSERT_EQ(sink.ctss.size(), 1u);
    ASSERT_EQ(sink.frags.size(), 1u);
    EXPECT_EQ(sink.ctss[0].send, 111u);
    EXPECT_EQ(sink.frags[0].recv, 222u);
}

TEST_F(EngineTest, FragBeyondWantLenDropped) {
    const auto r = e->register_recv(5, pb, 100);
    expect_dropped(frag_frame(1, r, 81, pattern(20, 0, 0)), "decode_errors");  // ends at 101
    expect_dropped(frag_frame(1, r, 101, {}), "decode_errors");  // starts past the end
    expect_dropped(frag_frame(1, r, ~0ull, pattern(5, 0, 0)), "decode_errors");  // would wrap
    expect_dropped(frag_frame(1, r, ~0ull - 2, pattern(5, 0, 0)), "decode_errors");
    expect_dropped(frag_frame(1, r, 0, pattern(101, 0, 0)), "decode_errors");
    EXPECT_TRUE(sink.frags.empty());
    // Exactly up to the end is fine, as is an empty frag at the end.
    expect_accepted(frag_frame(1, r, 80, pattern(20, 0, 0)));
    expect_accepted(frag_frame(1, r, 100, {}));
    expect_accepted(frag_frame(1, r, 0, pattern(100, 0, 0)));
    EXPECT_EQ(sink.frags.size(), 3u);
    // A zero-length receive accepts nothing but empty frags.
    const auto z = e->register_recv(6, pb, 0);
    expect_dropped(frag_frame(1, z, 0, pattern(1, 0, 0)), "decode_errors");
    expect_accepted(frag_frame(1, z, 0, {}));
}

TEST_F(EngineTest, CtsAndFragDispatchToTheirHandles) {
    const auto s1 = e->register_send(0x1111, pa);
    const auto s2 = e->register_send(0x2222, pb);
    const auto r1 = e->register_recv(0x3333, pc, 1000);
    const auto r2 = e->register_recv(0x4444, pa, 1000);
    expect_accepted(cts_frame(1, s2, 0xBEEF, 10, 900));
    expect_accepted(cts_frame(0, s1, 0xF00D, 0, 5));
    ASSERT_EQ(sink.ctss.size(), 2u);
    EXPECT_EQ(sink.ctss[0].send, 0x2222u);
    EXPECT_EQ(sink.ctss[0].peer, pb);
    EXPECT_EQ(sink.ctss[0].cts.send_req, s2);
    EXPECT_EQ(sink.ctss[0].cts.recv_req, 0xBEEFu);
    EXPECT_EQ(sink.ctss[0].cts.offset, 10u);
    EXPECT_EQ(sink.ctss[0].cts.want_len, 900u);
    EXPECT_EQ(sink.ctss[1].send, 0x1111u);
    EXPECT_EQ(sink.ctss[1].peer, pa);
    const auto p1 = pattern(33, 2, 1);
    const auto p2 = pattern(44, 0, 2);
    expect_accepted(frag_frame(0, r2, 500, p2));
    expect_accepted(frag_frame(2, r1, 7, p1));
    ASSERT_EQ(sink.frags.size(), 2u);
    EXPECT_EQ(sink.frags[0].recv, 0x4444u);
    EXPECT_EQ(sink.frags[0].peer, pa);
    EXPECT_EQ(sink.frags[0].offset, 500u);
    EXPECT_EQ(sink.frags[0].data, p2);
    EXPECT_EQ(sink.frags[1].recv, 0x3333u);
    EXPECT_EQ(sink.frags[1].peer, pc);
    EXPECT_EQ(sink.frags[1].offset, 7u);
    EXPECT_EQ(sink.frags[1].data, p1);
    EXPECT_TRUE(sink.matches.empty());
    // Ids stay valid for many frags until released.
    expect_accepted(frag_frame(2, r1, 40, p1));
    EXPECT_EQ(sink.frags.size(), 3u);
}

// RPUT: a PUT reaches the send it names (only from that send's peer); a
// PUT-done FRAG reaches its receive only at the accepted length.
TEST_F(EngineTest, PutAndPutDoneDispatchToTheirHandles) {
    const auto s = e->register_send(0x1111, pb);
    const auto r = e->register_recv(0x3333, pc, 1000);
    PutHdr put;
    put.common.src_jobid = kJob;
    put.common.src_vpid = 1;
    put.send_req = s;
    put.recv_req = 0xBEEF;
    put.offset = 10;
    put.want_len = 900;
    put.remote_addr = 0x7000'0000;
    expect_accepted(frame_of(put), 42);
    ASSERT_EQ(sink.puts.size(), 1u);
    EXPECT_EQ(sink.puts[0].first, 0x1111u);
    EXPECT_EQ(sink.puts[0].second.remote_addr, 0x7000'0000u);
    put.common.src_vpid = 2;  // another peer naming pb's send
    expect_dropped(frame_of(put), "unknown_request");

    FragHdr done;
    done.common.flags = kFlagPutDone;
    done.common.src_jobid = kJob;
    done.common.src_vpid = 2;
    done.recv_req = r;
    done.offset = 999;  // short of the accepted length
    expect_dropped(frame_of(done), "decode_errors");
    done.offset = 1000;
    expect_accepted(frame_of(done), 7);
    ASSERT_EQ(sink.puts_done.size(), 1u);
    EXPECT_EQ(sink.puts_done[0], (std::pair<Handle, std::uint64_t>{0x3333, 7}));
    EXPECT_FALSE(sink.puts_done_crc[0].has_value());
    EXPECT_TRUE(sink.frags.empty()) << "a PUT-done is not data";
    // With the checksum flag, payload_crc is the CRC of the bytes put.
    done.common.flags = kFlagPutDone | kFlagPayloadCsum;
    done.payload_crc = 0xCAFEF00Du;
    expect_accepted(frame_of(done), 7);
    ASSERT_EQ(sink.puts_done_crc.size(), 2u);
    EXPECT_EQ(sink.puts_done_crc[1], std::optional<std::uint32_t>(0xCAFEF00Du));
}

TEST_F(EngineTest, AckFromKnownPeerIsNotADrop) {
    AckHdr h;
    h.common.src_jobid = kJob;
    h.common.src_vpid = 2;
    h.common.ack_seq = 5;
    expect_accepted(frame_of(h));
    EXPECT_EQ(sink.calls(), 0u);
}

TEST_F(EngineTest, CreditValidatedAgainstWhatWasSent) {
    auto credit = [](std::uint32_t vpid, std::uint64_t total) {
        CreditHdr c;
        c.common.src_jobid = kJob;
        c.common.src_vpid = vpid;
        c.released_total = total;
        return frame_of(c);
    };
    // Nothing sent to B yet: any release is a lie.
    expect_dropped(credit(1, 1), "bad_credit");
    expect_dropped(credit(77, 0), "unknown_peer");
    ASSERT_TRUE(e->try_charge_eager(pb, 1000));
    expect_accepted(credit(1, 600));
    ASSERT_NE(e->flow(pb), nullptr);
    EXPECT_EQ(e->flow(pb)->released_by_peer, 600u);
    expect_accepted(credit(1, 500));  // stale (reordered) report: never moves back
    EXPECT_EQ(e->flow(pb)->released_by_peer, 600u);
    expect_dropped(credit(1, 1001), "bad_credit");
    // Credits are per peer: A's report cannot release B's bytes.
    expect_dropped(credit(0, 1000), "bad_credit");
    expect_accepted(credit(1, 1000));
    EXPECT_EQ(e->flow(pb)->released_by_peer, 1000u);
    EXPECT_EQ(e->flow(pa)->released_by_peer, 0u);
    EXPECT_EQ(e->flow(99), nullptr);
    EXPECT_EQ(sink.calls(), 0u);
}

TEST_F(EngineTest, HeldBytesAccounting) {
    expect_accepted(match_frame(kJob, 0, kCid, 0, 1, 0, pattern(100, 0, 0)));
    expect_accepted(match_frame(kJob, 1, kCid, 1, 2, 0, pattern(50, 1, 0)));
    expect_accepted(match_frame(kJob, 2, kCid, 2, 3, 1, pattern(25, 2, 1)));  // out of order: held
    EXPECT_EQ(e->held_bytes(), 175u);
    EXPECT_EQ(e->held_bytes(), e->comm(kCid)->held_bytes());
    auto u = e->post_recv(kCid, 1, kAnySource, 1, sink);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->data, pattern(100, 0, 0));
    EXPECT_EQ(e->held_bytes(), 75u);
    auto t = e->take_unexpected(kCid, 1, kAnyTag, sink);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(e->held_bytes(), 25u);
    EXPECT_EQ(e->take_unexpected(kCid, 2, 3, sink), nullptr);  // still held out of order
    EXPECT_EQ(e->post_recv(kCid, 2, 2, 3, sink), nullptr);     // queued
    expect_accepted(match_frame(kJob, 2, kCid, 2, 3, 0,
                                pattern(10, 2, 0)));  // seq 0 -> recv 2, then 1 released
    EXPECT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(e->held_bytes(), 25u);
    auto v = e->take_unexpected(kCid, kAnySource, 3, sink);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->info.seq, 1u);
    EXPECT_EQ(e->held_bytes(), 0u);
    // del_comm drops what is left, and its bytes.
    expect_accepted(match_frame(kJob, 0, kCid, 0, 1, 1, pattern(60, 0, 1)));
    EXPECT_EQ(e->held_bytes(), 60u);
    e->del_comm(kCid, sink);
    EXPECT_EQ(e->held_bytes(), 0u);
    EXPECT_EQ(e->comm(kCid), nullptr);
    EXPECT_EQ(e->post_recv(kCid, 3, 0, 1, sink), nullptr);
    EXPECT_EQ(e->take_unexpected(kCid, 0, 1, sink), nullptr);
    e->del_comm(kCid, sink);  // twice is harmless
}

TEST_F(EngineTest, ParkedFramesReplayedInOrderByAddComm) {
    constexpr std::uint32_t kNew = 9;
    // Frames for communicator 9, whose remote group is {C, A}: C is rank 0.
    std::vector<std::vector<std::uint8_t>> frames = {
        match_frame(kJob, 2, kNew, 0, 3, 1, pattern(11, 0, 1)),  // C seq 1 (ahead of its turn)
        match_frame(kJob, 0, kNew, 1, 3, 0, pattern(12, 1, 0)),  // A seq 0
        match_frame(kJob, 2, kNew, 0, 3, 0, pattern(13, 0, 0)),  // C seq 0
        match_frame(kJob, 1, kNew, 0, 3, 2, pattern(14, 0, 2)),  // B spoofing rank 0
        match_frame(kJob, 0, kNew, 1, 4, 1, pattern(15, 1, 1)),  // A seq 1
    };
    std::uint64_t total_bytes = 0;
    for (const auto& f : frames) {
        expect_dropped(f, "pending_unknown_comm");
        total_bytes += f.size();
    }
    EXPECT_EQ(e->comm(kNew), nullptr);
    EXPECT_EQ(e->post_recv(kNew, 1, kAnySource, kAnyTag, sink),
              nullptr);  // no comm: nothing happens
    EXPECT_EQ(sink.calls(), 0u);
    EXPECT_EQ(e->held_bytes(), 0u);  // parked frames are not matcher bytes

    const Drops before = drops(e->rx());
    e->add_comm(kNew, {pc, pa}, sink);
    // Unexpected in the order they became matchable: A0, then C0 which frees C1, then A1.
    ASSERT_EQ(sink.unexpected.size(), 4u);
    std::vector<std::pair<std::int32_t, std::uint16_t>> order;
    for (const auto& i : sink.unexpected)
        order.emplace_back(i.src, i.seq);
    EXPECT_EQ(order, (std::vector<std::pair<std::int32_t, std::uint16_t>>{
                         {1, 0}, {0, 0}, {0, 1}, {1, 1}}));
    EXPECT_EQ(sink.unexpected[1].peer, pc);
    Drops want = before;
    ++want[index_of("bad_rank")];  // the spoof is caught on replay
    EXPECT_EQ(describe(drops(e->rx())), describe(want));
    EXPECT_EQ(e->held_bytes(), 12u + 13u + 11u + 15u);
    // Replay is not a second arrival: frames/bytes count what the BTLs delivered.
    EXPECT_EQ(e->rx().frames, frames.size());
    EXPECT_EQ(e->rx().bytes, total_bytes);
    // Payload survived parking.
    auto u = e->take_unexpected(kNew, 0, 3, sink);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->data, pattern(13, 0, 0));
    // Replayed once only: a second add_comm of another cid replays nothing more.
    e->add_comm(10, {pa}, sink);
    EXPECT_EQ(sink.unexpected.size(), 4u);
}

TEST_F(EngineTest, ParkingKeepsOtherCommunicators) {
    expect_dropped(match_frame(kJob, 0, 20, 0, 1, 0, pattern(5, 0, 0)), "pending_unknown_comm");
    expect_dropped(match_frame(kJob, 0, 21, 0, 1, 0, pattern(6, 0, 0)), "pending_unknown_comm");
    expect_dropped(match_frame(kJob, 0, 20, 0, 1, 1, pattern(7, 0, 1)), "pending_unknown_comm");
    EXPECT_EQ(e->post_recv(kCid, 1, 0, 1, sink), nullptr);
    e->add_comm(20, {pa}, sink);
    ASSERT_EQ(sink.unexpected.size(), 2u);
    EXPECT_EQ(sink.unexpected[0].seq, 0u);
    EXPECT_EQ(sink.unexpected[1].seq, 1u);
    EXPECT_TRUE(sink.matches.empty());  // the receive posted on kCid saw none of them
    EXPECT_EQ(e->comm(21), nullptr);
    e->add_comm(21, {pa}, sink);
    ASSERT_EQ(sink.unexpected.size(), 3u);
    auto u = e->take_unexpected(21, 0, 1, sink);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->data, pattern(6, 0, 0));
}

TEST_F(EngineTest, ParkingLimitEnforced) {
    const auto probe = match_frame(kJob, 0, 30, 0, 1, 0, pattern(100, 0, 0));
    const std::size_t fsize = probe.size();
    Config c;
    c.unexpected_limit = 3 * fsize;
    make_engine(c);
    for (std::uint16_t i = 0; i < 3; ++i)
        expect_dropped(match_frame(kJob, 0, 30, 0, 1, i, pattern(100, 0, i)),
                       "pending_unknown_comm");
    for (std::uint16_t i = 3; i < 5; ++i)
        expect_dropped(match_frame(kJob, 0, 30, 0, 1, i, pattern(100, 0, i)),
                       "dropped_unknown_comm");
    // A smaller frame does not fit either: the limit is in bytes.
    expect_dropped(match_frame(kJob, 0, 31, 0, 1, 0, {}), "dropped_unknown_comm");
    e->add_comm(30, {pa}, sink);
    EXPECT_EQ(sink.unexpected.size(), 3u);
    EXPECT_EQ(e->comm(30)->unexpected_count(), 3u);
    // Replay gave the parking space back.
    for (std::uint16_t i = 0; i < 3; ++i)
        expect_dropped(match_frame(kJob, 0, 32, 0, 1, i, pattern(100, 0, i)),
                       "pending_unknown_comm");
    expect_dropped(match_frame(kJob, 0, 32, 0, 1, 3, {}), "dropped_unknown_comm");
}

TEST_F(EngineTest, NonMatchFramesAreNeverParked) {
    // CTS/FRAG name no communicator; unknown ids are dropped, not parked.
    expect_dropped(cts_frame(0, 12345, 1, 0, 10), "unknown_request");
    e->add_comm(40, {pa}, sink);
    EXPECT_EQ(sink.calls(), 0u);
}

}  // namespace
