// CommMatcher costs follow what is queued (issue 27, item 3): MPI_ANY_SOURCE
// searches visit only the sources holding unexpected messages, cancel looks
// only at the queue its receive was posted to, and the ordering rules are
// those of the reference matcher in match_oracle.hpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "match_oracle.hpp"
#include "matching.hpp"
#include "rng.hpp"
#include "seeds.hpp"

namespace {

using namespace pml::dr::core;

struct Event {
    std::optional<Handle> recv;
    pml_dr_test::MsgKey msg;
    bool operator==(const Event&) const = default;
};

struct RecordingSink : MatchSink {
    std::vector<Event> events;
    void on_match(Handle recv, const MessageInfo& info, std::span<const std::uint8_t>) override {
        events.push_back(Event{recv, {info.src, info.seq}});
    }
    void on_unexpected(const Unexpected& u) override {
        events.push_back(Event{std::nullopt, {u.info.src, u.info.seq}});
    }
};

MessageInfo info(std::int32_t src, std::int32_t tag, std::uint16_t seq) {
    MessageInfo i;
    i.peer = static_cast<PeerId>(src);
    i.src = src;
    i.tag = tag;
    i.seq = seq;
    return i;
}

std::optional<pml_dr_test::MsgKey> key_of(const Unexpected* u) {
    if (u == nullptr)
        return std::nullopt;
    return pml_dr_test::MsgKey{u->info.src, u->info.seq};
}

TEST(PmlDrMatchingQueued, AnySourceWithNothingQueuedVisitsNoSource) {
    for (const std::uint32_t n : {1'000u, 100'000u}) {
        CommMatcher m(n);
        for (int i = 0; i < 100; ++i) {
            EXPECT_EQ(m.peek(kAnySource, kAnyTag), nullptr);
            EXPECT_EQ(m.take(kAnySource, 7), nullptr);
        }
        EXPECT_EQ(m.post(1, kAnySource, kAnyTag), nullptr);
        EXPECT_EQ(m.stats().any_source_visits, 0u) << n << " sources";
        EXPECT_EQ(m.busy_sources(), 0u);
        EXPECT_TRUE(m.cancel(1, kAnySource));
        EXPECT_TRUE(m.idle());
    }
}

TEST(PmlDrMatchingQueued, AnySourceVisitsOnlyBusySources) {
    CommMatcher m(100'000);
    RecordingSink sink;
    std::size_t held = 0;
    // Three sources far apart, two messages from one of them.
    ASSERT_TRUE(m.arrive(info(99'999, 4, 0), {}, sink, held).has_value());
    ASSERT_TRUE(m.arrive(info(17, 4, 0), {}, sink, held).has_value());
    ASSERT_TRUE(m.arrive(info(17, 5, 1), {}, sink, held).has_value());
    ASSERT_TRUE(m.arrive(info(50'000, 6, 0), {}, sink, held).has_value());
    EXPECT_EQ(m.busy_sources(), 3u);
    EXPECT_EQ(m.unexpected_count(), 4u);

    const Unexpected* first = m.peek(kAnySource, kAnyTag);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->info.src, 99'999);  // earliest arrival
    EXPECT_EQ(m.stats().any_source_visits, 3u);

    // Each wildcard take visits the sources busy at the time.
    auto a = m.take(kAnySource, kAnyTag);  // 99'999 leaves: 3 visited
    auto b = m.take(kAnySource, kAnyTag);  // 17's first: 2 visited
    auto c = m.take(kAnySource, 6);        // 50'000: 2 visited
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(a->info.src, 99'999);
    EXPECT_EQ(b->info.src, 17);
    EXPECT_EQ(b->info.tag, 4);
    EXPECT_EQ(c->info.src, 50'000);
    EXPECT_EQ(m.stats().any_source_visits, 3u + 3u + 2u + 2u);
    EXPECT_EQ(m.busy_sources(), 1u);

    // A wildcard receive takes the last one; then nothing is busy.
    auto d = m.post(9, kAnySource, kAnyTag);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->info.tag, 5);
    EXPECT_EQ(m.stats().any_source_visits, 11u);
    EXPECT_EQ(m.busy_sources(), 0u);
    EXPECT_EQ(m.post(10, kAnySource, kAnyTag), nullptr);
    EXPECT_EQ(m.stats().any_source_visits, 11u);
    EXPECT_TRUE(m.cancel(10, kAnySource));
    EXPECT_TRUE(m.idle());
}

TEST(PmlDrMatchingQueued, HeldOutOfOrderIsNotBusyUntilReleased) {
    CommMatcher m(1'000);
    RecordingSink sink;
    std::size_t held = 0;
    ASSERT_TRUE(m.arrive(info(5, 1, 1), {}, sink, held).has_value());  // ahead of seq 0
    EXPECT_EQ(m.busy_sources(), 0u);
    EXPECT_EQ(m.unexpected_count(), 1u);
    EXPECT_EQ(m.peek(kAnySource, kAnyTag), nullptr);
    ASSERT_TRUE(m.arrive(info(5, 1, 0), {}, sink, held).has_value());
    EXPECT_EQ(m.busy_sources(), 1u);
    EXPECT_EQ(m.unexpected_count(), 2u);
    EXPECT_EQ(m.take(kAnySource, kAnyTag)->info.seq, 0u);
    EXPECT_EQ(m.take(kAnySource, kAnyTag)->info.seq, 1u);
    EXPECT_EQ(m.busy_sources(), 0u);
    EXPECT_TRUE(m.idle());
}

TEST(PmlDrMatchingQueued, CancelSearchesOnlyItsQueue) {
    CommMatcher m(8);
    EXPECT_EQ(m.post(1, 3, 0), nullptr);
    EXPECT_EQ(m.post(2, kAnySource, 0), nullptr);
    EXPECT_EQ(m.post(3, 3, 0), nullptr);
    EXPECT_EQ(m.posted_count(), 3u);
    EXPECT_FALSE(m.cancel(1, kAnySource));
    EXPECT_FALSE(m.cancel(2, 3));
    EXPECT_FALSE(m.cancel(3, 4));
    EXPECT_EQ(m.posted_count(), 3u);
    EXPECT_TRUE(m.cancel(3, 3));
    EXPECT_TRUE(m.cancel(2, kAnySource));
    EXPECT_EQ(m.posted_count(), 1u);
    // The remaining specific receive still takes source 3's first message.
    RecordingSink sink;
    std::size_t held = 0;
    ASSERT_TRUE(m.arrive(info(3, 0, 0), {}, sink, held).has_value());
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0].recv, std::optional<Handle>(1));
    EXPECT_EQ(m.posted_count(), 0u);
}

// Random mixes of wildcard and specific receives, probes, improbes, cancels
// and out-of-order arrivals, checked step by step against the reference
// matcher; the matcher's counters are checked against a count by hand.
TEST(PmlDrMatchingQueued, MatchesTheReferenceMatcher) {
    constexpr int kSources = 6;
    constexpr std::int32_t kTags[] = {0, 1, 2, kAnyTag, -5};
    sim::for_each_seed([&](std::uint64_t seed) {
        sim::Rng rng(seed);
        CommMatcher m(kSources);
        pml_dr_test::Oracle oracle(kSources);
        RecordingSink sink;
        std::size_t held = 0;
        std::uint16_t sent[kSources] = {};
        std::vector<std::pair<std::uint16_t, std::int32_t>> in_flight[kSources];
        std::vector<std::pair<Handle, std::int32_t>> posted;  // (handle, src) not yet matched
        Handle next_handle = 1;
        auto any_tag = [&] { return kTags[rng.below(std::size(kTags))]; };
        auto msg_tag = [&] {
            const std::int32_t t = any_tag();
            return t == kAnyTag ? 3 : t;
        };
        auto any_src = [&] {
            return rng.chance(0.3) ? kAnySource : static_cast<std::int32_t>(rng.below(kSources));
        };
        auto forget = [&](Handle h) {
            std::erase_if(posted, [h](const auto& p) { return p.first == h; });
        };
        for (int step = 0; step < 3'000; ++step) {
            SCOPED_TRACE(::testing::Message() << "step " << step);
            const std::uint64_t op = rng.below(10);
            if (op < 4) {  // a message is sent; one in flight from that source arrives
                const auto src = static_cast<std::int32_t>(rng.below(kSources));
                auto& fl = in_flight[src];
                fl.emplace_back(sent[src]++, msg_tag());
                const std::size_t pick =
                    fl.size() - 1 - rng.below(std::min<std::size_t>(fl.size(), 3));
                if (rng.chance(0.3))
                    continue;  // stays in flight a while
                const auto [seq, tag] = fl[pick];
                fl.erase(fl.begin() + static_cast<std::ptrdiff_t>(pick));
                sink.events.clear();
                ASSERT_TRUE(m.arrive(info(src, tag, seq), {}, sink, held).has_value());
                std::vector<Event> want;
                for (const auto& e : oracle.arrive(src, tag, seq))
                    want.push_back(Event{e.recv, e.msg});
                ASSERT_EQ(sink.events, want);
                for (const Event& e : want)
                    if (e.recv)
                        forget(*e.recv);
            } else if (op < 7) {
                const std::int32_t src = any_src();
                const std::int32_t tag = any_tag();
                const Handle h = next_handle++;
                UnexpectedPtr got = m.post(h, src, tag);
                const auto want = oracle.post(h, src, tag);
                ASSERT_EQ(key_of(got.get()), want);
                if (!got)
                    posted.emplace_back(h, src);
            } else if (op < 8) {
                const std::int32_t src = any_src();
                const std::int32_t tag = any_tag();
                ASSERT_EQ(key_of(m.peek(src, tag)), oracle.peek(src, tag));
            } else if (op < 9) {
                const std::int32_t src = any_src();
                const std::int32_t tag = any_tag();
                UnexpectedPtr got = m.take(src, tag);
                ASSERT_EQ(key_of(got.get()), oracle.take(src, tag));
            } else if (!posted.empty()) {
                const auto [h, src] = posted[rng.below(posted.size())];
                ASSERT_TRUE(m.cancel(h, src));
                ASSERT_TRUE(oracle.cancel(h));
                ASSERT_FALSE(m.cancel(h, src));
                forget(h);
            }
            // Counters kept on every enqueue/dequeue agree with a count by hand.
            ASSERT_EQ(m.posted_count(), posted.size());
            std::size_t busy = 0;
            for (std::int32_t s = 0; s < kSources; ++s)
                busy += (m.peek(s, kAnyTag) != nullptr || m.peek(s, -5) != nullptr) ? 1 : 0;
            ASSERT_EQ(m.busy_sources(), busy);
            std::size_t held_msgs = 0;
            m.for_each_held([&](const Unexpected&) { ++held_msgs; });
            ASSERT_EQ(m.unexpected_count(), held_msgs);
        }
    });
}

}  // namespace
