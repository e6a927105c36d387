// drucx core: the modex blob and AM header against hostile input, the
// completion table (bounds, stale tickets after a peer failed, each entry
// completed exactly once), and parameter validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "config.hpp"
#include "pending.hpp"
#include "wire.hpp"

namespace {

using namespace btl::drucx::core;
using plugin::common::ErrorCode;

TEST(DrucxWire, ModexRoundTripAndHostileBlobs) {
    std::vector<std::uint8_t> addr(300);
    std::mt19937_64 rng(1);
    for (auto& b : addr)
        b = static_cast<std::uint8_t>(rng());
    const auto blob = encode_modex(addr);
    auto back = decode_modex(blob);
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(std::equal(back->begin(), back->end(), addr.begin(), addr.end()));
    for (std::size_t n = 0; n < blob.size(); ++n)
        EXPECT_FALSE(decode_modex(std::span(blob).first(n)).has_value()) << n;
    for (std::size_t i = 0; i < blob.size(); ++i) {  // every single-byte change is caught
        auto bad = blob;
        bad[i] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        EXPECT_FALSE(decode_modex(bad).has_value()) << i;
    }
    auto longer = blob;
    longer.push_back(0);
    EXPECT_EQ(decode_modex(longer).error().code, ErrorCode::BadLength);
    EXPECT_EQ(decode_modex(encode_modex({})).error().code, ErrorCode::BadLength);
}

TEST(DrucxWire, TransportAddressesRoundTripAndHostileInput) {
    const std::vector<std::uint8_t> a1(70, 0xAB), a2;  // cma's address may be tiny
    const std::vector<TlAddress> in = {{"sysv", a1}, {"cma", a2}};
    const auto bytes = encode_addresses(in);
    auto out = decode_addresses(bytes);
    ASSERT_TRUE(out.has_value());
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ((*out)[0].tl, "sysv");
    EXPECT_TRUE(
        std::equal((*out)[0].address.begin(), (*out)[0].address.end(), a1.begin(), a1.end()));
    EXPECT_EQ((*out)[1].tl, "cma");
    EXPECT_TRUE((*out)[1].address.empty());
    for (std::size_t n = 1; n < bytes.size(); ++n) {  // every truncation: error or fewer entries
        auto t = decode_addresses(std::span(bytes).first(n));
        if (t) {
            EXPECT_LT(t->size(), 2u) << n;
        }
    }
    EXPECT_FALSE(decode_addresses({}).has_value());
    std::vector<std::uint8_t> noname = {0, 0, 0};
    EXPECT_FALSE(decode_addresses(noname).has_value());
    std::vector<std::uint8_t> longname(40, 'x');
    EXPECT_FALSE(decode_addresses(longname).has_value());
    std::mt19937_64 rng(2);
    for (int i = 0; i < 2000; ++i) {
        std::vector<std::uint8_t> junk(rng() % 200);
        for (auto& x : junk)
            x = static_cast<std::uint8_t>(rng() % 4 == 0 ? 0 : rng());
        (void)decode_addresses(junk);
    }
}

TEST(DrucxWire, AmHeaderKinds) {
    std::vector<std::uint8_t> m(kAmHeaderSize + 5);
    ASSERT_TRUE(encode(AmHeader{65, AmKind::Data}, m).has_value());
    auto h = decode_am_header(m);
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->tag, 65);
    EXPECT_EQ(h->kind, AmKind::Data);
    const auto sent = encode_bye(ProcName{0x01020304, 7});
    std::vector<std::uint8_t> bye(sent.begin(), sent.end());
    EXPECT_EQ(decode_am_header(bye)->kind, AmKind::Bye);
    EXPECT_EQ(decode_bye(bye).value(), (ProcName{0x01020304, 7}));
    EXPECT_EQ(decode_bye(m).error().code, ErrorCode::BadType);  // data, not BYE
    bye.push_back(1);                                           // longer than a name
    EXPECT_EQ(decode_am_header(bye).error().code, ErrorCode::BadField);
    bye.resize(kAmHeaderSize + 4);  // shorter
    EXPECT_EQ(decode_bye(bye).error().code, ErrorCode::BadField);
    auto tagged = std::vector<std::uint8_t>(sent.begin(), sent.end());
    tagged[0] = 3;  // BYE with a tag
    EXPECT_EQ(decode_am_header(tagged).error().code, ErrorCode::BadField);
    auto k = m;
    k[1] = 9;
    EXPECT_EQ(decode_am_header(k).error().code, ErrorCode::BadType);
    auto r = m;
    r[3] = 1;
    EXPECT_EQ(decode_am_header(r).error().code, ErrorCode::BadField);
    EXPECT_EQ(decode_am_header(std::span(m).first(3)).error().code, ErrorCode::Truncated);
}

TEST(DrucxPending, BoundsAndExactlyOnceCompletion) {
    PendingTable t(8, 5);
    int cookies[10];
    std::vector<std::uint64_t> tickets;
    for (int i = 0; i < 5; ++i)
        tickets.push_back(*t.add({&cookies[i], OpKind::Send, 1}));
    EXPECT_FALSE(t.add({&cookies[5], OpKind::Send, 1}).has_value());  // per-peer bound
    for (int i = 5; i < 8; ++i)
        tickets.push_back(*t.add({&cookies[i], OpKind::Put, 2}));
    EXPECT_FALSE(t.add({&cookies[8], OpKind::Send, 3}).has_value());  // total bound
    EXPECT_EQ(std::set<std::uint64_t>(tickets.begin(), tickets.end()).size(), 8u);
    EXPECT_EQ(std::count(tickets.begin(), tickets.end(), 0u), 0);

    auto done = t.complete(tickets[0]);
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->cookie, &cookies[0]);
    EXPECT_FALSE(t.complete(tickets[0]).has_value());  // twice: ignored
    EXPECT_FALSE(t.complete(0).has_value());
    EXPECT_FALSE(t.complete(0xFFFFFFFFull).has_value());

    // Peer 1 fails: its four remaining entries come back once each.
    std::vector<PendingOp> failed;
    t.fail_peer(1, failed);
    EXPECT_EQ(failed.size(), 4u);
    EXPECT_EQ(t.of_peer(1), 0u);
    // A late completion from UCX for a failed entry, after its slot was
    // reused, must not complete the new occupant.
    const auto reused = *t.add({&cookies[9], OpKind::Get, 4});
    for (std::size_t i = 1; i < 5; ++i)
        EXPECT_FALSE(t.complete(tickets[i]).has_value());
    EXPECT_EQ(t.complete(reused)->cookie, &cookies[9]);
    EXPECT_EQ(t.size(), 3u);
}

TEST(DrucxPending, RandomisedAgainstAModel) {
    std::mt19937_64 rng(7);
    PendingTable t(64, 16);
    std::vector<std::pair<std::uint64_t, PendingOp>> live;
    std::vector<std::uint64_t> dead;
    int cookie_store[1];
    for (int step = 0; step < 20000; ++step) {
        const auto what = rng() % 10;
        if (what < 5) {
            const PendingOp op{cookie_store, OpKind::Send, static_cast<std::uint32_t>(rng() % 6)};
            const bool room = t.can_add(op.peer);
            auto tk = t.add(op);
            ASSERT_EQ(tk.has_value(), room);
            if (tk)
                live.emplace_back(*tk, op);
        } else if (what < 8 && !live.empty()) {
            const std::size_t i = rng() % live.size();
            ASSERT_TRUE(t.complete(live[i].first).has_value());
            dead.push_back(live[i].first);
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        } else if (what == 8) {
            const auto peer = static_cast<std::uint32_t>(rng() % 6);
            std::vector<PendingOp> out;
            t.fail_peer(peer, out);
            const auto n = std::count_if(live.begin(), live.end(),
                                         [&](const auto& e) { return e.second.peer == peer; });
            ASSERT_EQ(out.size(), static_cast<std::size_t>(n));
            for (auto it = live.begin(); it != live.end();) {
                if (it->second.peer == peer) {
                    dead.push_back(it->first);
                    it = live.erase(it);
                } else {
                    ++it;
                }
            }
        } else if (!dead.empty()) {
            ASSERT_FALSE(t.complete(dead[rng() % dead.size()]).has_value());
        }
        ASSERT_EQ(t.size(), live.size());
    }
}

TEST(DrucxConfig, ListsAndBounds) {
    std::vector<std::string> v;
    EXPECT_TRUE(parse_name_list("posix, cma,tcp", v));
    EXPECT_EQ(v, (std::vector<std::string>{"posix", "cma", "tcp"}));
    EXPECT_TRUE(parse_name_list("any", v));
    EXPECT_TRUE(v.empty());
    EXPECT_TRUE(parse_name_list("mlx5_0:1,eth0", v));
    EXPECT_EQ(v.size(), 2u);
    EXPECT_FALSE(parse_name_list("posix;rm -rf", v));
    Config c;
    RawParams r = default_params();
    EXPECT_EQ(validate(r, c), "");
    r.tls = "po$ix";
    EXPECT_NE(validate(r, c).find("btl_drucx_tls"), std::string::npos);
    r = default_params();
    r.max_pending_peer = r.max_pending + 1;
    EXPECT_NE(validate(r, c).find("max_pending"), std::string::npos);
    r = default_params();
    r.faults.corrupt = -0.5;
    EXPECT_NE(validate(r, c).find("fault"), std::string::npos);
}

}  // namespace
