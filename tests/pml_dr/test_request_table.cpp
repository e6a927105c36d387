// The table of request ids rendezvous frames carry: ids from the wire are
// hostile, so anything not issued and still held must find nothing.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "request_table.hpp"

namespace {

using pml::dr::core::Handle;
using pml::dr::core::RequestTable;

TEST(RequestTable, IssuedIdsFindTheirEntry) {
    RequestTable t(0);
    const auto a = t.add({10, 1, 100});
    const auto b = t.add({20, 2, 200});
    EXPECT_NE(a, 0u);
    EXPECT_NE(a, b);
    ASSERT_NE(t.find(a), nullptr);
    EXPECT_EQ(t.find(a)->handle, 10u);
    EXPECT_EQ(t.find(b)->peer, 2u);
    EXPECT_EQ(t.find(b)->want_len, 200u);
    EXPECT_EQ(t.size(), 2u);
}

TEST(RequestTable, ReleasedAndReusedSlotsAreStale) {
    RequestTable t(0);
    const auto a = t.add({10, 1, 0});
    t.remove(a);
    EXPECT_EQ(t.find(a), nullptr);
    t.remove(a);                       // twice: nothing
    const auto b = t.add({11, 1, 0});  // the same slot, a new generation
    EXPECT_NE(a, b);
    EXPECT_EQ(t.find(a), nullptr);
    ASSERT_NE(t.find(b), nullptr);
    EXPECT_EQ(t.find(b)->handle, 11u);
    t.remove(a);  // a stale id releases nothing
    EXPECT_NE(t.find(b), nullptr);
    EXPECT_EQ(t.size(), 1u);
}

TEST(RequestTable, TheTwoTablesNeverShareAnId) {
    RequestTable sends(0);
    RequestTable recvs(1);
    const auto s = sends.add({1, 0, 0});
    const auto r = recvs.add({2, 0, 0});
    EXPECT_NE(s, r);
    EXPECT_EQ(sends.find(r), nullptr);
    EXPECT_EQ(recvs.find(s), nullptr);
}

TEST(RequestTable, ArbitraryIdsFindNothing) {
    RequestTable t(1);
    std::set<std::uint64_t> issued;
    for (Handle h = 1; h <= 50; ++h)
        issued.insert(t.add({h, 0, 0}));
    std::mt19937_64 rng(7);
    for (int i = 0; i < 100000; ++i) {
        std::uint64_t id = rng();
        if (i % 2 == 0)
            id &= 0x1'8000'00ffull;  // near the issued ones: small index, generation 1
        if (issued.count(id) == 0) {
            ASSERT_EQ(t.find(id), nullptr) << std::hex << id;
        }
    }
    for (std::uint64_t bad : {0ull, 0xffffffffull, ~0ull, 1ull << 32})
        EXPECT_EQ(t.find(bad), nullptr);
}

TEST(RequestTable, TakeBoundToReleasesOnlyThatPeer) {
    RequestTable t(0);
    const auto a = t.add({1, 5, 0});
    const auto b = t.add({2, 6, 0});
    const auto c = t.add({3, 5, 0});
    std::vector<Handle> out;
    t.take_bound_to(5, out);
    EXPECT_EQ(out, (std::vector<Handle>{1, 3}));
    EXPECT_EQ(t.find(a), nullptr);
    EXPECT_EQ(t.find(c), nullptr);
    EXPECT_NE(t.find(b), nullptr);
    EXPECT_EQ(t.size(), 1u);
    // Freed slots are reused: the table does not grow.
    t.add({4, 7, 0});
    t.add({5, 7, 0});
    EXPECT_EQ(t.size(), 3u);
    EXPECT_EQ(t.slots(), 3u);
    t.add({6, 7, 0});
    EXPECT_EQ(t.slots(), 4u);
}

}  // namespace
