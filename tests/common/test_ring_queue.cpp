// RingQueue: against std::deque as the model, through random pushes, pops,
// erasures at any position and clears, across many wraps and growths.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>

#include "ring_queue.hpp"

namespace {

using plugin::common::RingQueue;

void expect_same(const RingQueue<std::uint32_t>& q, const std::deque<std::uint32_t>& model) {
    ASSERT_EQ(q.size(), model.size());
    ASSERT_EQ(q.empty(), model.empty());
    for (std::size_t i = 0; i < model.size(); ++i)
        ASSERT_EQ(q[i], model[i]) << "at " << i;
    if (!model.empty()) {
        ASSERT_EQ(q.front(), model.front());
    }
}

TEST(RingQueue, BehavesAsADequeUsedAsAFifo) {
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        std::mt19937_64 rng(seed);
        RingQueue<std::uint32_t> q;
        std::deque<std::uint32_t> model;
        std::uint32_t next = 0;
        for (int step = 0; step < 3000; ++step) {
            const std::uint64_t op = rng() % 100;
            if (op < 50 || model.empty()) {
                q.push_back(next);
                model.push_back(next++);
            } else if (op < 85) {
                q.pop_front();
                model.pop_front();
            } else if (op < 99) {
                const std::size_t i = rng() % model.size();
                q.erase(i);
                model.erase(model.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                q.clear();
                model.clear();
            }
            expect_same(q, model);
        }
    }
}

TEST(RingQueue, FindIfReturnsTheFirstMatchOrSize) {
    RingQueue<std::uint32_t> q;
    EXPECT_EQ(q.find_if([](std::uint32_t) { return true; }), 0u);  // empty: size()
    for (std::uint32_t v = 0; v < 20; ++v)
        q.push_back(v % 7);
    for (int i = 0; i < 5; ++i)
        q.pop_front();  // the front is now past the ring's start: indices wrap
    EXPECT_EQ(q.find_if([](std::uint32_t v) { return v == 0; }), 2u);  // values 5 6 0 ...
    EXPECT_EQ(q.find_if([](std::uint32_t v) { return v == 42; }), q.size());
}

TEST(RingQueue, GrowsWhileWrappedKeepingOrder) {
    RingQueue<std::uint32_t> q;
    for (std::uint32_t v = 0; v < 6; ++v)
        q.push_back(v);
    for (int i = 0; i < 5; ++i)
        q.pop_front();
    // Head near the end of the first ring of 8: these wrap, then force growths.
    for (std::uint32_t v = 6; v < 40; ++v)
        q.push_back(v);
    ASSERT_EQ(q.size(), 35u);
    for (std::uint32_t i = 0; i < 35; ++i)
        EXPECT_EQ(q[i], i + 5);
}

TEST(RingQueue, AllocatesOnFirstPushAndFreesABurstOnceDrained) {
    RingQueue<std::uint32_t> q;
    EXPECT_EQ(q.capacity(), 0u);
    q.push_back(1);
    EXPECT_GT(q.capacity(), 0u);
    q.pop_front();
    EXPECT_GT(q.capacity(), 0u);  // a working size is kept
    const std::size_t burst = 4 * RingQueue<std::uint32_t>::kKeepCapacity;
    for (std::uint32_t v = 0; v < burst; ++v)
        q.push_back(v);
    EXPECT_GE(q.capacity(), burst);
    for (std::size_t i = 0; i + 1 < burst; ++i)
        q.pop_front();
    EXPECT_GE(q.capacity(), burst);  // not while anything is left
    q.erase(0);
    EXPECT_EQ(q.capacity(), 0u);
    q.push_back(7);  // and usable again
    EXPECT_EQ(q.front(), 7u);
    for (std::uint32_t v = 0; v < burst; ++v)
        q.push_back(v);
    q.clear();
    EXPECT_EQ(q.capacity(), 0u);
}

}  // namespace
