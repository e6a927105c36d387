// CommMatcher: MPI matching semantics for one communicator.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "matching.hpp"

namespace {

using namespace pml::dr::core;
using plugin::common::ErrorCode;

struct Match {
    Handle recv;
    std::int32_t src;
    std::int32_t tag;
    std::uint16_t seq;
    std::vector<std::uint8_t> data;
};

struct RecordingSink : MatchSink {
    std::vector<Match> matches;
    std::vector<std::uint16_t> unexpected_seqs;  // on_unexpected notifications
    void on_match(Handle recv, const MessageInfo& info,
                  std::span<const std::uint8_t> eager) override {
        matches.push_back(Match{recv, info.src, info.tag, info.seq, {eager.begin(), eager.end()}});
    }
    void on_unexpected(const Unexpected& u) override { unexpected_seqs.push_back(u.info.seq); }
};

// A matcher plus the per-source send seqs the senders would stamp.
class MatchingTest : public ::testing::Test {
  protected:
    CommMatcher m{4};
    RecordingSink sink;
    std::size_t held = 0;
    std::uint16_t next_seq[4] = {0, 0, 0, 0};

    static MessageInfo info(std::int32_t src, std::int32_t tag, std::uint16_t seq) {
        MessageInfo i;
        i.peer = static_cast<PeerId>(100 + src);
        i.src = src;
        i.tag = tag;
        i.seq = seq;
        return i;
    }
    static std::vector<std::uint8_t> bytes(std::size_t n, std::uint8_t fill) {
        return std::vector<std::uint8_t>(n, fill);
    }
    plugin::common::Result<void> arrive_seq(std::int32_t src, std::int32_t tag, std::uint16_t seq,
                                            std::vector<std::uint8_t> data = {}) {
        auto r = m.arrive(info(src, tag, seq), data, sink, held);
        EXPECT_EQ(held, m.held_bytes());  // caller's accounting mirrors the matcher's
        return r;
    }
    // Next in-order message from src.
    void send(std::int32_t src, std::int32_t tag, std::vector<std::uint8_t> data = {}) {
        ASSERT_TRUE(arrive_seq(src, tag, next_seq[src]++, std::move(data)).has_value());
    }
    std::vector<Handle> matched_handles() const {
        std::vector<Handle> v;
        for (const auto& x : sink.matches)
            v.push_back(x.recv);
        return v;
    }
    std::vector<std::uint16_t> matched_seqs() const {
        std::vector<std::uint16_t> v;
        for (const auto& x : sink.matches)
            v.push_back(x.seq);
        return v;
    }
};

TEST_F(MatchingTest, InOrderMatching) {
    for (Handle h = 1; h <= 3; ++h)
        EXPECT_EQ(m.post(h, 2, 5), nullptr);
    EXPECT_EQ(m.posted_count(), 3u);
    send(2, 5, bytes(3, 0xA0));
    send(2, 5, bytes(1, 0xA1));
    send(2, 5, {});
    ASSERT_EQ(sink.matches.size(), 3u);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1, 2, 3}));
    EXPECT_EQ(matched_seqs(), (std::vector<std::uint16_t>{0, 1, 2}));
    EXPECT_EQ(sink.matches[0].data, bytes(3, 0xA0));
    EXPECT_EQ(sink.matches[1].data, bytes(1, 0xA1));
    EXPECT_TRUE(sink.matches[2].data.empty());
    EXPECT_TRUE(m.idle());
    EXPECT_EQ(m.stats().matched_posted, 3u);
    EXPECT_EQ(m.stats().queued_unexpected, 0u);
    EXPECT_TRUE(sink.unexpected_seqs.empty());
}

TEST_F(MatchingTest, PostedBeforeArrival) {
    EXPECT_EQ(m.post(7, 1, 3), nullptr);
    EXPECT_TRUE(sink.matches.empty());
    send(1, 3, bytes(10, 0x11));
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].recv, 7u);
    EXPECT_EQ(sink.matches[0].src, 1);
    EXPECT_EQ(sink.matches[0].data, bytes(10, 0x11));
    EXPECT_EQ(held, 0u);
    EXPECT_TRUE(m.idle());
}

TEST_F(MatchingTest, ArrivalBeforePost) {
    send(1, 3, bytes(10, 0x11));
    send(1, 3, bytes(20, 0x22));
    EXPECT_TRUE(sink.matches.empty());
    EXPECT_EQ(sink.unexpected_seqs, (std::vector<std::uint16_t>{0, 1}));
    EXPECT_EQ(m.unexpected_count(), 2u);
    EXPECT_EQ(held, 30u);
    auto a = m.post(1, 1, 3);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->info.seq, 0u);
    EXPECT_EQ(a->data, bytes(10, 0x11));
    auto b = m.post(2, kAnySource, kAnyTag);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->info.seq, 1u);
    EXPECT_EQ(b->data, bytes(20, 0x22));
    EXPECT_EQ(m.posted_count(), 0u);  // satisfied receives are not queued
    EXPECT_EQ(m.unexpected_count(), 0u);
    EXPECT_EQ(m.held_bytes(), 0u);
    EXPECT_TRUE(sink.matches.empty());
}

TEST_F(MatchingTest, SpecificReceiveIgnoresOtherSources) {
    EXPECT_EQ(m.post(1, 0, 5), nullptr);
    send(1, 5);
    EXPECT_TRUE(sink.matches.empty());
    EXPECT_EQ(m.post(2, 0, 5), nullptr);  // the unexpected one is from rank 1
    send(0, 5);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1}));
    EXPECT_EQ(m.posted_count(), 1u);
    EXPECT_EQ(m.unexpected_count(), 1u);
}

TEST_F(MatchingTest, EarliestPostedWinsWildcardFirst) {
    EXPECT_EQ(m.post(1, kAnySource, 5), nullptr);
    EXPECT_EQ(m.post(2, 3, 5), nullptr);
    EXPECT_EQ(m.post(3, kAnySource, 5), nullptr);
    send(3, 5);
    send(3, 5);
    send(3, 5);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1, 2, 3}));
}

TEST_F(MatchingTest, EarliestPostedWinsSpecificFirst) {
    EXPECT_EQ(m.post(1, 3, 5), nullptr);
    EXPECT_EQ(m.post(2, kAnySource, 5), nullptr);
    EXPECT_EQ(m.post(3, 3, kAnyTag), nullptr);
    send(3, 5);
    send(3, 5);
    send(3, 5);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1, 2, 3}));
}

TEST_F(MatchingTest, EarlierNonMatchingReceivesAreSkipped) {
    EXPECT_EQ(m.post(1, kAnySource, 9), nullptr);  // wrong tag
    EXPECT_EQ(m.post(2, 2, 5), nullptr);           // wrong source
    EXPECT_EQ(m.post(3, 3, 5), nullptr);
    EXPECT_EQ(m.post(4, kAnySource, 5), nullptr);
    send(3, 5);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{3}));
    send(2, 5);
    send(0, 5);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{3, 2, 4}));
    EXPECT_EQ(m.posted_count(), 1u);
}

TEST_F(MatchingTest, AnyTagMatchesOnlyNonNegativeTags) {
    EXPECT_EQ(m.post(1, 0, kAnyTag), nullptr);
    EXPECT_EQ(m.post(2, kAnySource, kAnyTag), nullptr);
    send(0, -7);  // a collective's tag: no wildcard takes it
    EXPECT_TRUE(sink.matches.empty());
    EXPECT_EQ(m.unexpected_count(), 1u);
    send(0, 0);
    send(0, 12345);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1, 2}));
    // Neither probe nor post with ANY_TAG sees the negative tag.
    EXPECT_EQ(m.peek(0, kAnyTag), nullptr);
    EXPECT_EQ(m.peek(kAnySource, kAnyTag), nullptr);
    EXPECT_EQ(m.take(kAnySource, kAnyTag), nullptr);
    EXPECT_EQ(m.post(3, 0, kAnyTag), nullptr);
    EXPECT_EQ(m.cancel(3, 0), true);
    // The exact tag does.
    ASSERT_NE(m.peek(0, -7), nullptr);
    auto u = m.post(4, kAnySource, -7);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->info.tag, -7);
    EXPECT_TRUE(m.idle());
}

TEST_F(MatchingTest, NegativeTagsMatchExactly) {
    EXPECT_EQ(m.post(1, 0, -2), nullptr);
    send(0, -3);
    EXPECT_TRUE(sink.matches.empty());
    send(0, -2);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1}));
    EXPECT_EQ(sink.matches[0].seq, 1u);  // overtook seq 0: different tag, allowed
}

TEST_F(MatchingTest, OutOfOrderArrivalDeliveredInSeqOrder) {
    for (Handle h = 1; h <= 3; ++h)
        EXPECT_EQ(m.post(h, 1, 4), nullptr);
    ASSERT_TRUE(arrive_seq(1, 4, 2, bytes(2, 2)).has_value());
    ASSERT_TRUE(arrive_seq(1, 4, 1, bytes(1, 1)).has_value());
    EXPECT_TRUE(sink.matches.empty());  // held until seq 0 shows up
    EXPECT_EQ(m.posted_count(), 3u);
    EXPECT_EQ(m.unexpected_count(), 2u);  // held messages count as queued
    EXPECT_EQ(held, 3u);
    EXPECT_EQ(m.stats().held_out_of_order, 2u);
    EXPECT_EQ(m.peek(1, 4), nullptr);  // held messages are not probe-able yet
    ASSERT_TRUE(arrive_seq(1, 4, 0, bytes(3, 0)).has_value());
    EXPECT_EQ(matched_seqs(), (std::vector<std::uint16_t>{0, 1, 2}));
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1, 2, 3}));
    EXPECT_EQ(sink.matches[1].data, bytes(1, 1));
    EXPECT_EQ(sink.matches[2].data, bytes(2, 2));
    EXPECT_EQ(held, 0u);
    EXPECT_TRUE(m.idle());
}

TEST_F(MatchingTest, OutOfOrderReleasedIntoUnexpectedInSeqOrder) {
    ASSERT_TRUE(arrive_seq(2, 4, 3).has_value());
    ASSERT_TRUE(arrive_seq(2, 4, 1).has_value());
    ASSERT_TRUE(arrive_seq(2, 4, 0).has_value());  // releases 0 and 1; 3 still waits for 2
    EXPECT_EQ(sink.unexpected_seqs, (std::vector<std::uint16_t>{0, 1}));
    ASSERT_TRUE(arrive_seq(2, 4, 2).has_value());
    EXPECT_EQ(sink.unexpected_seqs, (std::vector<std::uint16_t>{0, 1, 2, 3}));
    for (std::uint16_t want = 0; want < 4; ++want) {
        auto u = m.post(want, kAnySource, 4);
        ASSERT_NE(u, nullptr);
        EXPECT_EQ(u->info.seq, want);
    }
}

TEST_F(MatchingTest, OtherSourcesNotBlockedByAGap) {
    EXPECT_EQ(m.post(1, kAnySource, 1), nullptr);
    ASSERT_TRUE(arrive_seq(0, 1, 1).has_value());  // rank 0 has a gap
    send(3, 1);                                    // rank 3 is in order
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].src, 3);
}

TEST_F(MatchingTest, DuplicateAndStaleSeqRejected) {
    send(0, 1, bytes(4, 1));
    auto r = arrive_seq(0, 1, 0, bytes(4, 1));  // already delivered
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, ErrorCode::Duplicate);
    ASSERT_TRUE(arrive_seq(0, 1, 5).has_value());  // held
    auto r2 = arrive_seq(0, 1, 5);                 // duplicate of a held one
    ASSERT_FALSE(r2.has_value());
    EXPECT_EQ(r2.error().code, ErrorCode::Duplicate);
    EXPECT_EQ(m.stats().stale_dropped, 2u);
    EXPECT_EQ(m.unexpected_count(), 2u);  // seq 0 and held seq 5, nothing duplicated
    EXPECT_EQ(held, 4u);
    // Far in the past (more than half the seq space back is "future"; within it, stale).
    auto r3 = arrive_seq(0, 1, static_cast<std::uint16_t>(1 - 30000));
    ASSERT_FALSE(r3.has_value());
    EXPECT_EQ(sink.unexpected_seqs.size(), 1u);
}

TEST_F(MatchingTest, SeqWrapsPast65535) {
    // 70000 in-order messages: msg_seq wraps once; every one matches in order.
    constexpr std::uint32_t kCount = 70'000;
    for (std::uint32_t i = 0; i < kCount; ++i) {
        if (i % 2 == 0) {
            EXPECT_EQ(m.post(i, 1, 9), nullptr);
        }
        ASSERT_TRUE(arrive_seq(1, 9, static_cast<std::uint16_t>(i)).has_value()) << i;
        if (i % 2 == 1) {
            auto u = m.post(i, 1, 9);
            ASSERT_NE(u, nullptr) << i;
            EXPECT_EQ(u->info.seq, static_cast<std::uint16_t>(i));
        }
    }
    ASSERT_EQ(sink.matches.size(), kCount / 2);
    for (std::uint32_t k = 0; k < kCount / 2; ++k) {
        EXPECT_EQ(sink.matches[k].recv, 2 * k);
        EXPECT_EQ(sink.matches[k].seq, static_cast<std::uint16_t>(2 * k));
    }
    EXPECT_TRUE(m.idle());
    EXPECT_EQ(m.stats().stale_dropped, 0u);
}

TEST_F(MatchingTest, OutOfOrderAcrossTheWrap) {
    for (std::uint32_t i = 0; i < 65534; ++i) {
        ASSERT_TRUE(arrive_seq(2, 1, static_cast<std::uint16_t>(i)).has_value());
        auto u = m.take(2, 1);
        ASSERT_NE(u, nullptr);
        ASSERT_EQ(u->info.seq, static_cast<std::uint16_t>(i));
    }
    EXPECT_EQ(m.unexpected_count(), 0u);
    for (Handle h = 1; h <= 4; ++h)
        EXPECT_EQ(m.post(h, 2, 1), nullptr);
    ASSERT_TRUE(arrive_seq(2, 1, 1).has_value());
    ASSERT_TRUE(arrive_seq(2, 1, 0).has_value());
    ASSERT_TRUE(arrive_seq(2, 1, 65535).has_value());
    EXPECT_TRUE(sink.matches.empty());
    ASSERT_TRUE(arrive_seq(2, 1, 65534).has_value());
    EXPECT_EQ(matched_seqs(), (std::vector<std::uint16_t>{65534, 65535, 0, 1}));
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{1, 2, 3, 4}));
    // Just before the wrap is now the past.
    auto r = arrive_seq(2, 1, 65535);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, ErrorCode::Duplicate);
}

TEST_F(MatchingTest, SendSeqPerDestinationAndWraps) {
    EXPECT_EQ(m.next_send_seq(0), 0u);
    EXPECT_EQ(m.next_send_seq(0), 1u);
    EXPECT_EQ(m.next_send_seq(3), 0u);  // independent per destination
    m.undo_send_seq(0);
    EXPECT_EQ(m.next_send_seq(0), 1u);
    for (int i = 2; i < 65536; ++i)
        ASSERT_EQ(m.next_send_seq(0), static_cast<std::uint16_t>(i));
    EXPECT_EQ(m.next_send_seq(0), 0u);  // wrapped
    EXPECT_EQ(m.next_send_seq(3), 1u);
    EXPECT_EQ(m.next_send_seq(-1), 0u);  // bad ranks are harmless
    EXPECT_EQ(m.next_send_seq(4), 0u);
    m.undo_send_seq(99);
    EXPECT_EQ(m.next_send_seq(3), 2u);
}

TEST_F(MatchingTest, CancelRemovesOnlyUnmatched) {
    EXPECT_EQ(m.post(1, 0, 5), nullptr);
    EXPECT_EQ(m.post(2, kAnySource, 5), nullptr);
    EXPECT_EQ(m.post(3, 0, 5), nullptr);
    EXPECT_TRUE(m.cancel(1, 0));
    EXPECT_FALSE(m.cancel(1, 0));  // already gone
    EXPECT_EQ(m.posted_count(), 2u);
    send(0, 5);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{2}));  // not the cancelled one
    EXPECT_FALSE(m.cancel(2, kAnySource));                   // matched: too late
    EXPECT_FALSE(m.cancel(3, 1));                            // not posted to source 1
    EXPECT_FALSE(m.cancel(3, kAnySource));
    EXPECT_TRUE(m.cancel(3, 0));
    EXPECT_FALSE(m.cancel(42, 0));  // never posted
    EXPECT_EQ(m.posted_count(), 0u);
    send(0, 5);
    EXPECT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(m.unexpected_count(), 1u);
}

TEST_F(MatchingTest, CancelWildcard) {
    EXPECT_EQ(m.post(1, kAnySource, kAnyTag), nullptr);
    EXPECT_EQ(m.post(2, 1, kAnyTag), nullptr);
    EXPECT_FALSE(m.cancel(1, 1));  // a wildcard is not in source 1's queue
    EXPECT_TRUE(m.cancel(1, kAnySource));
    send(1, 0);
    EXPECT_EQ(matched_handles(), (std::vector<Handle>{2}));
}

TEST_F(MatchingTest, PeekLeavesTakeRemoves) {
    send(1, 8, bytes(5, 1));
    send(1, 8, bytes(6, 2));
    EXPECT_EQ(m.peek(1, 9), nullptr);  // wrong tag
    EXPECT_EQ(m.peek(2, 8), nullptr);  // wrong source
    const Unexpected* p = m.peek(1, 8);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->info.seq, 0u);
    EXPECT_EQ(p->data.size(), 5u);
    EXPECT_EQ(m.peek(kAnySource, kAnyTag), p);  // same one, still there
    EXPECT_EQ(m.unexpected_count(), 2u);
    EXPECT_EQ(m.held_bytes(), 11u);
    auto t = m.take(1, 8);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t.get(), p);  // the very message peek showed
    EXPECT_EQ(m.unexpected_count(), 1u);
    EXPECT_EQ(m.held_bytes(), 6u);
    const Unexpected* q = m.peek(1, 8);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->info.seq, 1u);
    auto t2 = m.take(kAnySource, 8);
    ASSERT_NE(t2, nullptr);
    EXPECT_EQ(t2->data, bytes(6, 2));
    EXPECT_EQ(m.take(1, 8), nullptr);
    EXPECT_EQ(m.peek(1, 8), nullptr);
}

TEST_F(MatchingTest, AnySourceUnexpectedPicksEarliestArrival) {
    send(1, 5, bytes(1, 1));
    send(0, 5, bytes(1, 0));
    send(2, 5, bytes(1, 2));
    send(0, 6, bytes(1, 9));
    send(1, 5, bytes(1, 3));
    std::vector<std::int32_t> order;
    for (int i = 0; i < 4; ++i) {
        auto u = m.take(kAnySource, 5);
        ASSERT_NE(u, nullptr);
        order.push_back(u->info.src);
    }
    EXPECT_EQ(order, (std::vector<std::int32_t>{1, 0, 2, 1}));
    EXPECT_EQ(m.take(kAnySource, 5), nullptr);
    auto last = m.post(9, kAnySource, kAnyTag);
    ASSERT_NE(last, nullptr);
    EXPECT_EQ(last->info.tag, 6);
}

TEST_F(MatchingTest, AnySourceArrivalOrderCountsReleaseOfHeldMessages) {
    // A held message "arrives" for matching purposes when its gap fills.
    ASSERT_TRUE(arrive_seq(0, 5, 1, bytes(1, 0x01)).has_value());  // held
    send(2, 5, bytes(1, 0x20));
    ASSERT_TRUE(arrive_seq(0, 5, 0, bytes(1, 0x00)).has_value());  // releases 0 then 1
    std::vector<std::uint8_t> order;
    while (auto u = m.take(kAnySource, kAnyTag))
        order.push_back(u->data[0]);
    EXPECT_EQ(order, (std::vector<std::uint8_t>{0x20, 0x00, 0x01}));
}

TEST_F(MatchingTest, HeldBytesReturnToZero) {
    // Mixed traffic: posted matches, unexpected, out-of-order, takes.
    EXPECT_EQ(m.post(1, 0, 1), nullptr);
    ASSERT_TRUE(arrive_seq(0, 1, 2, bytes(100, 2)).has_value());  // held
    ASSERT_TRUE(arrive_seq(0, 1, 1, bytes(50, 1)).has_value());   // held
    EXPECT_EQ(held, 150u);
    ASSERT_TRUE(arrive_seq(0, 1, 0, bytes(7, 0)).has_value());  // 0 -> recv 1; 1, 2 -> unexpected
    EXPECT_EQ(held, 150u);
    send(3, 2, bytes(33, 3));
    EXPECT_EQ(held, 183u);
    EXPECT_EQ(m.post(2, 2, 2), nullptr);  // stays posted
    auto a = m.post(3, 0, 1);
    ASSERT_NE(a, nullptr);
    held -= a->data.size();
    auto b = m.take(kAnySource, kAnyTag);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->info.src, 0);  // arrived (was released) before rank 3's
    held -= b->data.size();
    auto c = m.take(3, 2);
    ASSERT_NE(c, nullptr);
    held -= c->data.size();
    EXPECT_EQ(held, 0u);
    EXPECT_EQ(m.held_bytes(), 0u);
    // A held message matched straight to a posted receive on release.
    ASSERT_TRUE(arrive_seq(2, 2, 1, bytes(64, 5)).has_value());
    EXPECT_EQ(held, 64u);
    ASSERT_TRUE(arrive_seq(2, 2, 0, bytes(8, 4)).has_value());  // 0 -> recv 2, 1 -> unexpected
    EXPECT_EQ(held, 64u);
    auto d = m.post(4, 2, 2);
    ASSERT_NE(d, nullptr);
    held -= d->data.size();
    EXPECT_EQ(held, 0u);
    EXPECT_EQ(m.held_bytes(), 0u);
    EXPECT_TRUE(m.idle());
}

TEST_F(MatchingTest, BadSourceRankRejected) {
    for (const std::int32_t src : {-1, -5, 4, 1000}) {
        auto r = m.arrive(info(src, 1, 0), bytes(3, 1), sink, held);
        ASSERT_FALSE(r.has_value()) << src;
        EXPECT_EQ(r.error().code, ErrorCode::OutOfRange);
    }
    EXPECT_TRUE(sink.matches.empty());
    EXPECT_TRUE(sink.unexpected_seqs.empty());
    EXPECT_EQ(held, 0u);
    EXPECT_TRUE(m.idle());
    // Posting or probing a bad rank neither queues nor crashes.
    EXPECT_EQ(m.post(1, 4, 1), nullptr);
    EXPECT_EQ(m.post(2, -2, 1), nullptr);
    EXPECT_EQ(m.posted_count(), 0u);
    EXPECT_EQ(m.peek(4, 1), nullptr);
    EXPECT_EQ(m.take(-3, kAnyTag), nullptr);
    EXPECT_FALSE(m.cancel(1, 4));
    EXPECT_FALSE(m.cancel(1, -2));
}

TEST(PmlDrMatching, TagAndSourceRules) {
    EXPECT_TRUE(tag_matches(kAnyTag, 0));
    EXPECT_TRUE(tag_matches(kAnyTag, 32767));
    EXPECT_FALSE(tag_matches(kAnyTag, -2));
    EXPECT_TRUE(tag_matches(-2, -2));
    EXPECT_FALSE(tag_matches(3, 4));
    EXPECT_TRUE(src_matches(kAnySource, 7));
    EXPECT_TRUE(src_matches(7, 7));
    EXPECT_FALSE(src_matches(6, 7));
}

TEST(PmlDrMatching, EmptyCommunicator) {
    CommMatcher m(0);
    RecordingSink sink;
    std::size_t held = 0;
    MessageInfo i;
    EXPECT_FALSE(m.arrive(i, {}, sink, held).has_value());
    EXPECT_EQ(m.post(1, kAnySource, kAnyTag), nullptr);  // queued: nothing can ever match
    EXPECT_EQ(m.posted_count(), 1u);
    EXPECT_TRUE(m.cancel(1, kAnySource));
    EXPECT_EQ(m.peek(kAnySource, kAnyTag), nullptr);
}

}  // namespace

// A rank's queues exist only once it was named in a receive or sent to us
// (matching.hpp): every operation on a rank never seen behaves as on empty
// queues, and a wildcard receive still takes the first message of a rank
// that appears later.
namespace {

TEST_F(MatchingTest, RanksNeverSeenBehaveAsEmptyQueues) {
    EXPECT_FALSE(m.cancel(7, 2));
    std::vector<Handle> taken;
    m.take_posted_from(3, taken);
    EXPECT_TRUE(taken.empty());
    EXPECT_EQ(m.peek(1, kAnyTag), nullptr);
    EXPECT_EQ(m.take(1, kAnyTag), nullptr);
    EXPECT_EQ(m.peek(kAnySource, kAnyTag), nullptr);
    EXPECT_EQ(m.held_bytes(), 0u);

    ASSERT_EQ(m.post(50, kAnySource, 4), nullptr);
    send(3, 4, bytes(3, 0x33));  // rank 3's first appearance
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].recv, 50u);
    EXPECT_EQ(sink.matches[0].src, 3);
    EXPECT_TRUE(m.idle());
}

TEST_F(MatchingTest, AnEarlyMessageFromARankNeverSeenWaitsForItsTurn) {
    ASSERT_TRUE(arrive_seq(2, 1, 1, bytes(2, 0x22)).has_value());  // seq 0 not yet here
    EXPECT_TRUE(sink.matches.empty());
    EXPECT_EQ(m.unexpected_count(), 1u);
    ASSERT_EQ(m.post(60, 2, 1), nullptr);
    ASSERT_TRUE(arrive_seq(2, 1, 0, bytes(1, 0x21)).has_value());
    ASSERT_EQ(sink.matches.size(), 1u);
    EXPECT_EQ(sink.matches[0].seq, 0u);  // in order: seq 0 first
    auto second = m.post(61, 2, 1);
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(second->info.seq, 1u);
}

}  // namespace
