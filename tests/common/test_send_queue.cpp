// drtcp send queue: whatever the kernel takes per writev (down to one byte),
// the bytes leave in order, exactly once, and each frame's cookie comes back
// when its last byte left; drain() hands back everything still queued.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "send_queue.hpp"

namespace {

using plugin::common::ByteRange;
using plugin::common::SendQueue;

TEST(SendQueue, PartialWritesResumeExactlyWhereTheyStopped) {
    for (std::uint64_t seed = 1; seed <= 30; ++seed) {
        std::mt19937_64 rng(seed);
        std::vector<std::vector<std::uint8_t>> store;
        std::vector<std::uint8_t> expect;
        SendQueue q;  // 40 frames: its ring grows past its first size
        for (int f = 0; f < 40; ++f) {
            SendQueue::Frame frame;
            frame.count = static_cast<std::uint8_t>(1 + rng() % SendQueue::kMaxPieces);
            for (std::uint8_t p = 0; p < frame.count; ++p) {
                store.emplace_back(rng() % 50);  // empty pieces allowed
                for (auto& b : store.back())
                    b = static_cast<std::uint8_t>(rng());
                frame.pieces[p] = {store.back().data(), store.back().size()};
                expect.insert(expect.end(), store.back().begin(), store.back().end());
            }
            frame.cookie = reinterpret_cast<void*>(static_cast<std::uintptr_t>(f + 1));
            ASSERT_TRUE(q.push(frame));
        }
        std::vector<std::uint8_t> wire;
        std::vector<void*> done;
        while (!q.empty()) {
            ByteRange r[4];
            const std::size_t n = q.gather(r);
            std::size_t budget = 1 + rng() % 70;  // what the "kernel" takes
            std::size_t took = 0;
            for (std::size_t i = 0; i < n && budget > 0; ++i) {
                const std::size_t k = std::min(budget, r[i].len);
                wire.insert(wire.end(), r[i].base, r[i].base + k);
                budget -= k;
                took += k;
            }
            q.advance(took, done);
        }
        ASSERT_EQ(wire, expect) << "seed " << seed;
        ASSERT_EQ(done.size(), 40u);
        for (std::size_t i = 0; i < done.size(); ++i)
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(done[i]), i + 1);
    }
}

TEST(SendQueue, DrainReturnsEverythingAndResets) {
    SendQueue q;
    std::uint8_t buf[10] = {};
    int cookies[3];
    for (int& c : cookies) {
        SendQueue::Frame f;
        f.pieces[0] = {buf, sizeof buf};
        f.count = 1;
        f.cookie = &c;
        ASSERT_TRUE(q.push(f));
    }
    std::vector<void*> done;
    q.advance(15, done);  // one frame and a half
    ASSERT_EQ(done.size(), 1u);
    EXPECT_TRUE(q.mid_frame());
    std::vector<void*> rest;
    q.drain(rest);
    EXPECT_EQ(rest, (std::vector<void*>{&cookies[1], &cookies[2]}));
    EXPECT_TRUE(q.empty());
    EXPECT_FALSE(q.mid_frame());
    SendQueue::Frame bad;  // no pieces
    EXPECT_FALSE(q.push(bad));
}

}  // namespace
