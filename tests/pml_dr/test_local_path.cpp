// Trusted local paths: the LOCAL_MATCH codec, which peers are trusted, and
// the engine taking LOCAL_MATCH frames only on trusted paths from trusted
// peers, in MPI order with the full protocol's frames.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "engine.hpp"
#include "frame_util.hpp"
#include "trust.hpp"
#include "wire_local.hpp"

namespace {

using namespace pml::dr::core;
using namespace pml_dr_test;

constexpr std::uint32_t kJob = 7;
constexpr std::uint32_t kCid = 3;
constexpr std::uint64_t kPath = 0x55;

std::vector<std::uint8_t> local_frame(std::uint32_t cid, std::int32_t rank, std::int32_t tag,
                                      std::uint16_t seq, std::span<const std::uint8_t> payload) {
    std::vector<std::uint8_t> f(kLocalMatchHeaderSize);
    encode_local_match(LocalMatchHdr{cid, rank, tag, seq},
                       std::span<std::uint8_t, kLocalMatchHeaderSize>(f.data(), f.size()));
    f.insert(f.end(), payload.begin(), payload.end());
    return f;
}

// --------------------------------------------------------------- the codec

TEST(WireLocal, RoundTripsEveryField) {
    const auto f = local_frame(0xA1B2C3D4u, -2, 0x7FFFFFFF, 0xBEEF, {});
    ASSERT_EQ(f.size(), kLocalMatchHeaderSize);
    EXPECT_EQ(f[0], kWireVersion);
    EXPECT_EQ(f[1], kLocalMatchType);
    auto h = decode_local_match(f);
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->cid, 0xA1B2C3D4u);
    EXPECT_EQ(h->src_rank, -2);
    EXPECT_EQ(h->tag, 0x7FFFFFFF);
    EXPECT_EQ(h->msg_seq, 0xBEEF);
}

TEST(WireLocal, GoldenBytes) {
    const auto f = local_frame(0x01020304u, 5, 6, 0x0708, {});
    const std::array<std::uint8_t, 16> want = {
        kWireVersion, 12, 0x07, 0x08, 1, 2, 3, 4, 0, 0, 0, 5, 0, 0, 0, 6};
    EXPECT_TRUE(std::equal(f.begin(), f.end(), want.begin()));
}

TEST(WireLocal, RefusesShortOtherVersionOrType) {
    auto f = local_frame(1, 0, 0, 0, {});
    for (std::size_t n = 0; n < kLocalMatchHeaderSize; ++n)
        EXPECT_EQ(decode_local_match(std::span(f).first(n)).error().code,
                  plugin::common::ErrorCode::Truncated)
            << n;
    auto v = f;
    v[0] = kWireVersion + 1;
    EXPECT_EQ(decode_local_match(v).error().code, plugin::common::ErrorCode::BadVersion);
    for (const std::uint8_t type : std::array<std::uint8_t, 5>{0, 1, 11, 13, 255}) {
        auto t = f;
        t[1] = type;
        EXPECT_EQ(decode_local_match(t).error().code, plugin::common::ErrorCode::BadType) << +type;
    }
}

// ------------------------------------------------------------ trust policy

TEST(TrustPolicy, MediumOfBtl) {
    EXPECT_EQ(medium_of_btl("self"), PathMedium::Process);
    EXPECT_EQ(medium_of_btl("vader"), PathMedium::Memory);
    EXPECT_EQ(medium_of_btl("sm"), PathMedium::Memory);
    for (const char* n : {"tcp", "drtcp", "drucx", "openib", "uct", "", "selfish"})
        EXPECT_EQ(medium_of_btl(n), PathMedium::Network) << n;
}

TEST(TrustPolicy, OnlyPeersReachedThroughMemoryAtDefaults) {
    const Config c;  // defaults
    using M = PathMedium;
    using T = LocalTrust;
    EXPECT_EQ(local_trust(c, std::array{M::Process}), T::AcceptAndSend);
    EXPECT_EQ(local_trust(c, std::array{M::Memory}), T::AcceptAndSend);
    EXPECT_EQ(local_trust(c, std::array{M::Memory, M::Memory}), T::AcceptAndSend);
    EXPECT_EQ(local_trust(c, std::array{M::Memory, M::Network}), T::None);
    EXPECT_EQ(local_trust(c, std::array{M::Network}), T::None);
    EXPECT_EQ(local_trust(c, std::span<const M>{}), T::None);
}

TEST(TrustPolicy, ParametersDecideSendingNeverAccepting) {
    // A peer whose parameters differ may still send LOCAL_MATCH frames:
    // refusing them would lose its messages.
    using M = PathMedium;
    using T = LocalTrust;
    Config off;
    off.trust_local = false;
    EXPECT_EQ(local_trust(off, std::array{M::Memory}), T::Accept);
    EXPECT_EQ(local_trust(off, std::array{M::Process}), T::Accept);
    EXPECT_EQ(local_trust(off, std::array{M::Network}), T::None);
    Config csum;
    csum.csum = CsumMode::Always;
    EXPECT_EQ(local_trust(csum, std::array{M::Memory}), T::Accept);
    Config drop;
    drop.fault_drop = 0.01;
    EXPECT_EQ(local_trust(drop, std::array{M::Memory}), T::Accept);
    EXPECT_EQ(local_trust(drop, std::array{M::Process}), T::AcceptAndSend);  // no faults on self
    Config kill;
    kill.fault_fail_btl = "vader";
    kill.fault_fail_after = 100;
    EXPECT_EQ(local_trust(kill, std::array{M::Memory}), T::Accept);
}

// ------------------------------------------------------------------ engine

struct Sink : EngineSink {
    struct Rec {
        Handle recv;
        MessageInfo info;
        std::vector<std::uint8_t> data;
    };
    std::vector<Rec> matches;
    std::vector<MessageInfo> unexpected;
    void on_match(Handle recv, const MessageInfo& info,
                  std::span<const std::uint8_t> eager) override {
        matches.push_back(Rec{recv, info, {eager.begin(), eager.end()}});
    }
    void on_unexpected(const Unexpected& u) override { unexpected.push_back(u.info); }
    void on_cts(Handle, PeerId, const CtsHdr&) override { ADD_FAILURE() << "CTS"; }
    void on_frag(Handle, PeerId, std::uint64_t, std::span<const std::uint8_t>) override {
        ADD_FAILURE() << "FRAG";
    }
};

class LocalEngine : public ::testing::Test {
  protected:
    plugin::common::NullLogSink log;
    Engine e{Config{}, log};
    Sink sink;
    PeerId p0 = e.add_peer({kJob, 0});  // this process, rank 0
    PeerId p1 = e.add_peer({kJob, 1});  // same node: trusted
    PeerId p2 = e.add_peer({kJob, 2});  // another node: full protocol

    void SetUp() override {
        e.set_local({kJob, 0});
        e.set_trust(p0, LocalTrust::AcceptAndSend);
        e.set_trust(p1, LocalTrust::Accept);
        e.add_comm(kCid, {p0, p1, p2}, sink);
    }
    // Feeds a frame that must be refused into exactly `counter`.
    void expect_refused(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload,
                        bool path_trusted, std::uint64_t RxCounters::*counter) {
        const RxCounters before = e.rx();
        const std::size_t calls = sink.matches.size() + sink.unexpected.size();
        e.on_local_frame(header, payload, sink, kPath, path_trusted);
        EXPECT_EQ(e.rx().*counter, before.*counter + 1);
        EXPECT_EQ(
            e.rx().local_frames + e.rx().untrusted_local + e.rx().decode_errors + e.rx().bad_rank,
            before.local_frames + before.untrusted_local + before.decode_errors + before.bad_rank +
                1)
            << "counted once";
        EXPECT_EQ(sink.matches.size() + sink.unexpected.size(), calls) << "reached the sink";
    }
};

TEST_F(LocalEngine, OneSegmentReachesThePostedReceive) {
    EXPECT_EQ(e.post_recv(kCid, 10, 1, 5, sink), nullptr);
    const auto payload = pattern(200, 1, 0);
    const auto f = local_frame(kCid, 1, 5, 0, payload);
    e.on_local_frame(f, {}, sink, kPath, true);
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].recv, 10u);
    EXPECT_EQ(sink.matches[0].info.peer, p1);
    EXPECT_EQ(sink.matches[0].info.src, 1);
    EXPECT_EQ(sink.matches[0].info.tag, 5);
    EXPECT_EQ(sink.matches[0].info.msg_len, payload.size());
    EXPECT_FALSE(sink.matches[0].info.rndv);
    EXPECT_EQ(sink.matches[0].data, payload);
    EXPECT_EQ(e.rx().local_frames, 1u);
    EXPECT_EQ(e.held_bytes(), 0u);
}

TEST_F(LocalEngine, TheDirectPathKeepsPostOrderAndMessageOrder) {
    // A wildcard receive posted before the specific one takes the message
    // (the direct path is only for a source's own oldest receive).
    EXPECT_EQ(e.post_recv(kCid, 1, kAnySource, 5, sink), nullptr);
    EXPECT_EQ(e.post_recv(kCid, 2, 1, 5, sink), nullptr);
    e.on_local_frame(local_frame(kCid, 1, 5, 0, pattern(8, 1, 0)), {}, sink, kPath, true);
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].recv, 1u);
    // The oldest receive naming the source wants another tag: unexpected.
    EXPECT_EQ(e.post_recv(kCid, 3, 1, 7, sink), nullptr);  // behind receive 2 (tag 5)
    e.on_local_frame(local_frame(kCid, 1, 7, 1, pattern(8, 1, 1)), {}, sink, kPath, true);
    ASSERT_EQ(sink.matches.size(), 2u);
    EXPECT_EQ(sink.matches[1].recv, 3u) << "the general way searches past the first receive";
    // Ahead of its turn: held until message 2 comes, then both in order.
    e.on_local_frame(local_frame(kCid, 1, 5, 3, pattern(8, 1, 3)), {}, sink, kPath, true);
    EXPECT_EQ(sink.matches.size(), 2u);
    EXPECT_EQ(e.post_recv(kCid, 4, 1, 5, sink), nullptr);
    e.on_local_frame(local_frame(kCid, 1, 5, 2, pattern(8, 1, 2)), {}, sink, kPath, true);
    ASSERT_EQ(sink.matches.size(), 4u);
    EXPECT_EQ(sink.matches[2].recv, 2u);
    EXPECT_EQ(sink.matches[2].data, pattern(8, 1, 2));
    EXPECT_EQ(sink.matches[3].recv, 4u);
    EXPECT_EQ(sink.matches[3].data, pattern(8, 1, 3));
    // A sequence number already taken is dropped, not matched to a receive.
    EXPECT_EQ(e.post_recv(kCid, 5, 1, 5, sink), nullptr);
    const std::uint64_t dups = e.rx().duplicates;
    e.on_local_frame(local_frame(kCid, 1, 5, 2, pattern(8, 1, 2)), {}, sink, kPath, true);
    EXPECT_EQ(sink.matches.size(), 4u);
    EXPECT_EQ(e.rx().duplicates, dups + 1);
    // Its turn, its receive first and nothing held: the direct path.
    e.on_local_frame(local_frame(kCid, 1, 5, 4, pattern(8, 1, 4)), {}, sink, kPath, true);
    ASSERT_EQ(sink.matches.size(), 5u);
    EXPECT_EQ(sink.matches[4].recv, 5u);
    EXPECT_EQ(sink.matches[4].info.seq, 4u);
    EXPECT_EQ(sink.matches[4].data, pattern(8, 1, 4));
    EXPECT_EQ(e.rx().local_frames, 6u) << "every frame counted once, whichever way it went";
    EXPECT_EQ(e.comm(kCid)->posted_count(), 0u);
    EXPECT_EQ(e.held_bytes(), 0u);
}

TEST_F(LocalEngine, TwoSegmentsAndEmptyPayloads) {
    // self's sendi hands the header and the user's bytes as two segments.
    const auto payload = pattern(40, 0, 1);
    const auto hdr = local_frame(kCid, 0, 9, 0, {});
    e.on_local_frame(hdr, payload, sink, kPath, true);
    e.on_local_frame(local_frame(kCid, 0, 9, 1, {}), {}, sink, kPath, true);  // zero bytes
    ASSERT_EQ(sink.unexpected.size(), 2u);
    auto first = e.post_recv(kCid, 1, 0, 9, sink);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->data, payload);
    auto second = e.post_recv(kCid, 2, 0, 9, sink);
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(second->data.empty());
    EXPECT_EQ(e.held_bytes(), 0u);
}

TEST_F(LocalEngine, MpiOrderHoldsAcrossBothProtocols) {
    // msg_seq 0 goes by the full protocol (a sendi that failed), 1 and 2 as
    // LOCAL_MATCH and arrive first: matching still sees 0, 1, 2.
    const std::uint16_t tag = 4;
    for (const std::uint16_t s : std::array<std::uint16_t, 2>{2, 1})
        e.on_local_frame(local_frame(kCid, 1, tag, s, pattern(8, 1, s)), {}, sink, kPath, true);
    const auto p = pattern(8, 1, 0);
    e.on_frame(match_frame(kJob, 1, kCid, 1, tag, 0, p), sink, kPath);
    for (std::uint32_t i = 0; i < 3; ++i) {
        auto u = e.post_recv(kCid, 100 + i, 1, tag, sink);
        ASSERT_NE(u, nullptr) << i;
        EXPECT_EQ(u->data, pattern(8, 1, i)) << "message " << i << " out of order";
    }
}

TEST_F(LocalEngine, RefusesUntrustedPathsPeersAndBadFrames) {
    const auto payload = pattern(16, 1, 0);
    const auto good = local_frame(kCid, 1, 5, 0, payload);
    // A BTL the receiver does not trust (tcp): whatever the frame says.
    expect_refused(good, {}, false, &RxCounters::untrusted_local);
    // Rank 2 is reached over the network: its LOCAL_MATCH is a forgery.
    expect_refused(local_frame(kCid, 2, 5, 0, payload), {}, true, &RxCounters::untrusted_local);
    expect_refused(local_frame(kCid, 3, 5, 0, payload), {}, true, &RxCounters::bad_rank);
    expect_refused(local_frame(kCid, -1, 5, 0, payload), {}, true, &RxCounters::bad_rank);
    expect_refused(std::span(good).first(15), {}, true, &RxCounters::decode_errors);
    auto bad_type = good;
    bad_type[1] = 1;  // a MATCH's type byte on the local tag
    expect_refused(bad_type, {}, true, &RxCounters::decode_errors);
    // Two segments whose first is not exactly the header.
    expect_refused(good, payload, true, &RxCounters::decode_errors);
    // The good frame is still taken afterwards (nothing was consumed).
    e.on_local_frame(good, {}, sink, kPath, true);
    EXPECT_EQ(sink.unexpected.size(), 1u);
}

TEST_F(LocalEngine, ParkedUntilTheCommunicatorExistsAndCheckedThen) {
    constexpr std::uint32_t kLater = 9;
    const auto payload = pattern(24, 1, 7);
    e.on_local_frame(local_frame(kLater, 1, 3, 0, payload), {}, sink, kPath, true);
    e.on_local_frame(local_frame(kLater, 2, 3, 0, payload), {}, sink, kPath, true);
    EXPECT_EQ(e.rx().pending_unknown_comm, 2u);
    EXPECT_TRUE(sink.unexpected.empty());
    e.add_comm(kLater, {p0, p1, p2}, sink);
    // Rank 1's message is taken; rank 2's (not trusted) is refused now.
    ASSERT_EQ(sink.unexpected.size(), 1u);
    EXPECT_EQ(sink.unexpected[0].peer, p1);
    EXPECT_EQ(e.rx().untrusted_local, 1u);
    auto u = e.post_recv(kLater, 1, 1, 3, sink);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->data, payload);
}

TEST_F(LocalEngine, TrustIsPerPeer) {
    EXPECT_TRUE(e.sends_local(p0));
    EXPECT_TRUE(e.accepts_local(p1));
    EXPECT_FALSE(e.sends_local(p1));
    EXPECT_FALSE(e.accepts_local(p2));
    e.set_trust(p1, LocalTrust::None);
    expect_refused(local_frame(kCid, 1, 5, 0, {}), {}, true, &RxCounters::untrusted_local);
    e.set_trust(99, LocalTrust::AcceptAndSend);  // unknown peer: ignored
    EXPECT_FALSE(e.accepts_local(99));
}

TEST_F(LocalEngine, ADeadPeerIsTrustedNoMore) {
    // Sends to it must fail through the full protocol, not vanish into its
    // shared memory; its late frames are not taken.
    e.fail_peer(p1);
    EXPECT_FALSE(e.accepts_local(p1));
    EXPECT_FALSE(e.sends_local(p1));
    expect_refused(local_frame(kCid, 1, 5, 0, {}), {}, true, &RxCounters::untrusted_local);
    EXPECT_TRUE(e.sends_local(p0));
}

TEST_F(LocalEngine, HostileBytesAreCountedOnce) {
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<std::size_t> len(0, 40);
    constexpr int kFrames = 20000;
    for (int i = 0; i < kFrames; ++i) {
        std::vector<std::uint8_t> f(len(rng));
        for (auto& b : f)
            b = static_cast<std::uint8_t>(byte(rng));
        if (f.size() >= 12 && (i & 1) != 0) {  // half get past the version and type checks
            f[0] = kWireVersion;               // and name this communicator
            f[1] = kLocalMatchType;
            f[4] = f[5] = f[6] = 0;
            f[7] = kCid;
            f[8] = f[9] = f[10] = 0;
            f[11] = static_cast<std::uint8_t>(byte(rng) % 4);  // ranks 0..3
        }
        e.on_local_frame(f, {}, sink, kPath, (i & 2) != 0);
    }
    const RxCounters& rx = e.rx();
    EXPECT_EQ(rx.frames, std::uint64_t{kFrames});
    EXPECT_EQ(rx.decode_errors + rx.untrusted_local + rx.bad_rank + rx.pending_unknown_comm +
                  rx.local_frames,
              std::uint64_t{kFrames})
        << "each frame refused, parked or taken exactly once";
    EXPECT_GT(rx.local_frames, 0u);
    EXPECT_GT(rx.untrusted_local, 0u);
    EXPECT_GT(rx.bad_rank, 0u);
    // Taken frames reach matching at most once each (repeated msg_seqs are
    // duplicates).
    EXPECT_LE(sink.unexpected.size() + sink.matches.size() + rx.duplicates, rx.local_frames);
}

}  // namespace
