// drucx UCT adapter against the real UCX library (no MPI): the machine's
// transports are listed, two interfaces of one transport in this process
// connect to each other's address, and active messages of every size up to
// the transport's limits arrive whole and byte-exact, short and bcopy, and
// zcopy over tcp; cma copies registered memory in one pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "uct_iface.hpp"

namespace {

using namespace btl::drucx::adapter;

struct Rec final : IfaceEvents {
    std::vector<std::vector<std::uint8_t>> got;
    int errors = 0;
    void on_am(std::span<const std::uint8_t> b) override { got.emplace_back(b.begin(), b.end()); }
    void on_ep_error(void*) override { ++errors; }
};

const TlResource* find(const std::vector<TlResource>& all, const char* tl) {
    auto it = std::find_if(all.begin(), all.end(), [&](const TlResource& r) { return r.tl == tl; });
    return it == all.end() ? nullptr : &*it;
}

// Two interfaces of one transport in this process, each with its recorder
// (heap-held: the interfaces keep pointers to them). nullptr when the
// transport is not offered here; a or b empty when opening failed.
struct Pair {
    Rec ra, rb;
    std::unique_ptr<Iface> a, b;
};
std::unique_ptr<Pair> open_pair(const char* tl) {
    const auto all = list_resources();
    const TlResource* res = find(all, tl);
    if (res == nullptr)
        return nullptr;
    auto p = std::make_unique<Pair>();
    if (auto a = Iface::open(*res, p->ra))
        p->a = std::move(*a);
    if (auto b = Iface::open(*res, p->rb))
        p->b = std::move(*b);
    return p;
}

TEST(DrucxUct, ListsTheSharedMemoryTransports) {
    const auto all = list_resources();
    ASSERT_FALSE(all.empty()) << "UCX offers no transport at all";
    EXPECT_NE(find(all, "posix"), nullptr);
    EXPECT_NE(find(all, "cma"), nullptr);
}

TEST(DrucxUct, RuntimeVersionIsTheOneBuiltAgainst) {
    std::string runtime;
    EXPECT_TRUE(runtime_version_matches(runtime));
    EXPECT_EQ(std::string(kBuiltUcx).rfind(runtime + ".", 0), 0u) << runtime << " vs " << kBuiltUcx;
}

class DrucxUctAm : public ::testing::TestWithParam<const char*> {};

TEST_P(DrucxUctAm, MessagesArriveWholeBothWays) {
    auto pair = open_pair(GetParam());
    if (!pair)
        GTEST_SKIP() << GetParam() << " not offered here";
    ASSERT_TRUE(pair->a && pair->b);
    Rec& ra = pair->ra;
    Rec& rb = pair->rb;
    Iface& ia = *pair->a;
    Iface& ib = *pair->b;
    ASSERT_TRUE(ia.caps().connect_to_iface);
    ASSERT_GT(ia.caps().am_bcopy, 16u);
    auto ab = ia.connect(ib.address(), nullptr);
    auto ba = ib.connect(ia.address(), nullptr);
    ASSERT_TRUE(ab.has_value() && ba.has_value());
    EXPECT_FALSE(ia.reachable(std::vector<std::uint8_t>(3, 0)));  // garbage address

    std::mt19937_64 rng(3);
    std::vector<std::vector<std::uint8_t>> sent_ab, sent_ba;
    const std::uint8_t hdr[4] = {65, 1, 0, 0};
    const std::size_t max = ia.caps().am_bcopy - sizeof hdr;
    for (int i = 0; i < 400; ++i) {
        // Every short size, then random sizes up to the bcopy limit.
        const std::size_t n = i < 120 ? static_cast<std::size_t>(i) : rng() % (max + 1);
        std::vector<std::uint8_t> p(n);
        for (auto& x : p)
            x = static_cast<std::uint8_t>(rng());
        for (auto [from, ep, list] :
             {std::tuple{&ia, *ab, &sent_ab}, std::tuple{&ib, *ba, &sent_ba}}) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            for (;;) {
                auto r = from->send_am(ep, hdr, p);
                if (r)
                    break;
                ASSERT_EQ(r.error().code, plugin::common::ErrorCode::WouldBlock);
                ASSERT_LT(std::chrono::steady_clock::now(), until) << "no resources for 10 s";
                ia.progress();
                ib.progress();
            }
            std::vector<std::uint8_t> whole(hdr, hdr + sizeof hdr);
            whole.insert(whole.end(), p.begin(), p.end());
            list->push_back(std::move(whole));
        }
        ia.progress();
        ib.progress();
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((rb.got.size() < sent_ab.size() || ra.got.size() < sent_ba.size()) &&
           std::chrono::steady_clock::now() < until) {
        ia.progress();
        ib.progress();
    }
    EXPECT_EQ(rb.got, sent_ab);
    EXPECT_EQ(ra.got, sent_ba);
    EXPECT_EQ(ra.errors + rb.errors, 0);
    EXPECT_FALSE(ia.send_am(*ab, hdr, std::vector<std::uint8_t>(max + 1)).has_value());
}

INSTANTIATE_TEST_SUITE_P(Transports, DrucxUctAm, ::testing::Values("posix", "sysv", "tcp"));

TEST(DrucxUct, TcpZcopyMessagesArriveWholeAndCompleteOnce) {
    auto pair = open_pair("tcp");
    if (!pair)
        GTEST_SKIP() << "tcp not offered here";
    ASSERT_TRUE(pair->a && pair->b);
    Rec& rb = pair->rb;
    Iface& ia = *pair->a;
    Iface& ib = *pair->b;
    ASSERT_GT(ia.caps().am_zcopy, ia.caps().am_bcopy);
    auto ab = ia.connect(ib.address(), nullptr);
    ASSERT_TRUE(ab.has_value());
    std::mt19937_64 rng(11);
    const std::uint8_t hdr[4] = {66, 1, 0, 0};
    const std::size_t max = ia.caps().am_zcopy - sizeof hdr;
    // Every buffer stays untouched until its completion (UCT reads it late).
    std::vector<std::vector<std::uint8_t>> firsts, seconds, sent;
    int started = 0, completed = 0, failed = 0;
    const auto on_done = [](void* arg, bool ok) {
        auto* c = static_cast<std::pair<int*, int*>*>(arg);
        ++*(ok ? c->first : c->second);
    };
    std::pair<int*, int*> counters{&completed, &failed};
    for (int i = 0; i < 60; ++i) {
        const std::size_t n =
            i == 0 ? max : ia.caps().am_bcopy + rng() % (max - ia.caps().am_bcopy);
        const std::size_t cut = rng() % (n + 1);
        std::vector<std::uint8_t> whole(n);
        for (auto& x : whole)
            x = static_cast<std::uint8_t>(rng());
        firsts.emplace_back(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
        seconds.emplace_back(whole.begin() + static_cast<std::ptrdiff_t>(cut), whole.end());
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (;;) {
            const OpStart st =
                ia.send_am_zcopy(*ab, hdr, firsts.back(), seconds.back(), on_done, &counters);
            if (st == OpStart::InProgress)
                ++started;
            if (st != OpStart::WouldBlock) {
                ASSERT_NE(st, OpStart::Failed);
                break;
            }
            ASSERT_LT(std::chrono::steady_clock::now(), until) << "no resources for 10 s";
            ia.progress();
            ib.progress();
        }
        whole.insert(whole.begin(), hdr, hdr + sizeof hdr);
        sent.push_back(std::move(whole));
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((rb.got.size() < sent.size() || completed < started) &&
           std::chrono::steady_clock::now() < until) {
        ia.progress();
        ib.progress();
    }
    EXPECT_EQ(rb.got, sent);
    EXPECT_EQ(completed, started);
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(
        ia.send_am_zcopy(*ab, hdr, std::vector<std::uint8_t>(max + 1), {}, on_done, &counters),
        OpStart::Failed);
}

TEST(DrucxUct, CmaGetAndPutCopyRegisteredMemoryInOnePass) {
    auto pair = open_pair("cma");
    if (!pair)
        GTEST_SKIP() << "cma not offered here";
    ASSERT_TRUE(pair->a && pair->b);
    Iface& ia = *pair->a;
    ASSERT_TRUE(ia.caps().get_zcopy);
    auto ab = ia.connect(pair->b->address(), nullptr);
    ASSERT_TRUE(ab.has_value());
    constexpr std::size_t kLen = 3 << 20;
    std::vector<std::uint8_t> src(kLen), dst(kLen, 0);
    std::mt19937_64 rng(5);
    for (auto& x : src)
        x = static_cast<std::uint8_t>(rng());
    auto src_h = pair->b->register_memory(src.data(), kLen);  // the peer's memory
    auto dst_h = ia.register_memory(dst.data(), kLen);
    ASSERT_TRUE(src_h.has_value() && dst_h.has_value());
    std::vector<std::uint8_t> rkey(ia.caps().rkey_size + 1);
    ASSERT_TRUE(pair->b->pack_rkey(*src_h, rkey));
    int done = 0;
    bool ok = false;
    const auto on_done = [](void* arg, bool good) {
        auto* p = static_cast<std::pair<int*, bool*>*>(arg);
        ++*p->first;
        *p->second = good;
    };
    std::pair<int*, bool*> flags{&done, &ok};
    const OpStart st = ia.rma(true, *ab, dst.data(), kLen, *dst_h,
                              reinterpret_cast<std::uintptr_t>(src.data()), rkey, on_done, &flags);
    ASSERT_TRUE(st == OpStart::Done || st == OpStart::InProgress);
    if (st == OpStart::InProgress) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (done == 0 && std::chrono::steady_clock::now() < until)
            ia.progress();
        EXPECT_EQ(done, 1);
        EXPECT_TRUE(ok);
    }
    EXPECT_EQ(dst, src);
    pair->b->deregister_memory(*src_h);
    ia.deregister_memory(*dst_h);
}

}  // namespace
