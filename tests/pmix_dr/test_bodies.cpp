// pmix dr message bodies: every body round-trips; every truncation, every
// trailing byte, every bad flag and every lying count is refused.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "alloc_probe.hpp"
#include "pmix_test_util.hpp"

namespace {

using namespace pmix_dr_test;

HelloBody hello() {
    return {{0x8001u, 3}, 0x0102030405060708u};
}
FenceBody fence() {
    return {true, {{5, 0}, {5, 1}, {6, kRankWildcard}}, every_shape()};
}
GetBody get() {
    return {{5, 2}, "pmix.hname", true};
}
AbortBody abort_body() {
    return {-3, "bye", {{5, 1}, {5, 3}}};
}
LookupBody lookup() {
    return {{"port", "", "other"}, {{"pmix.range", Value::scalar(7, 4, 2)}}};
}
SpawnBody spawn() {
    App a{"a.out", {"a.out", "-v", ""}, {"X=1"}, "/tmp", 4, {{"host", Value::string(3, "n1")}}};
    App b{"b", {}, {}, "", 1, {}};
    return {every_shape(), {a, b}};
}
EventBody event() {
    return {-25, {5, kRankInvalid}, {{"orte.notify.donotloop", Value::scalar(1, 1, 1)}}};
}

template <class Body, class Decode>
void expect_round_trip(const Body& body, Decode decode) {
    const Bytes b = encode(body);
    auto d = decode(b);
    ASSERT_TRUE(d.has_value());
    EXPECT_TRUE(*d == body);
    EXPECT_EQ(encode(*d), b);  // the encoding is canonical
}

TEST(PmixBodies, EveryBodyRoundTrips) {
    expect_round_trip(hello(), decode_hello);
    expect_round_trip(fence(), decode_fence);
    expect_round_trip(FenceBody{false, {{1, kRankWildcard}}, {}}, decode_fence);
    expect_round_trip(get(), decode_get);
    expect_round_trip(GetBody{{1, 1}, "", false}, decode_get);
    expect_round_trip(abort_body(), decode_abort);
    expect_round_trip(AbortBody{}, decode_abort);
    expect_round_trip(lookup(), decode_lookup);
    expect_round_trip(LookupBody{}, decode_lookup);
    expect_round_trip(spawn(), decode_spawn);
    expect_round_trip(event(), decode_event);
    EXPECT_EQ(decode_kvlist_body(encode(every_shape())).value(), every_shape());
    EXPECT_EQ(decode_kvlist_body(encode(KvList{})).value(), KvList{});
    EXPECT_EQ(decode_u32(encode_u32(0xFEDCBA98u)).value(), 0xFEDCBA98u);
}

TEST(PmixBodies, ReplyCarriesStatusAndBody) {
    const std::vector<Record> recs{{{5, kRankWildcard}, every_shape()}, {{5, 0}, {}}};
    const Bytes body = encode_records(recs);
    const Bytes reply = encode_reply(-13, body);
    auto d = decode_reply(reply);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->status, -13);
    EXPECT_EQ(Bytes(d->body.begin(), d->body.end()), body);
    EXPECT_EQ(d->body.data(), reply.data() + 4);  // no copy
    EXPECT_EQ(decode_records(d->body).value(), recs);
    EXPECT_TRUE(decode_reply(encode_reply(0, {}))->body.empty());
    for (std::size_t n = 0; n < 4; ++n)
        EXPECT_EQ(decode_reply(std::span(reply).first(n)).error().code, ErrorCode::Truncated);
}

// Every encoding of every body, with its decoder as a yes/no.
std::vector<std::pair<Bytes, std::function<Result<void>(std::span<const std::uint8_t>)>>> all() {
    const auto status = [](auto r) { return r ? Result<void>{} : Result<void>(fail(r.error())); };
    return {
        {encode(hello()), [=](auto b) { return status(decode_hello(b)); }},
        {encode(fence()), [=](auto b) { return status(decode_fence(b)); }},
        {encode(get()), [=](auto b) { return status(decode_get(b)); }},
        {encode(abort_body()), [=](auto b) { return status(decode_abort(b)); }},
        {encode(lookup()), [=](auto b) { return status(decode_lookup(b)); }},
        {encode(spawn()), [=](auto b) { return status(decode_spawn(b)); }},
        {encode(event()), [=](auto b) { return status(decode_event(b)); }},
        {encode(every_shape()), [=](auto b) { return status(decode_kvlist_body(b)); }},
        {encode_u32(7), [=](auto b) { return status(decode_u32(b)); }},
    };
}

TEST(PmixBodies, EveryTruncationAndTrailingByteIsRefused) {
    int which = 0;
    for (const auto& [b, decode] : all()) {
        ASSERT_TRUE(decode(b).has_value()) << which;
        for (std::size_t n = 0; n < b.size(); ++n) {
            auto d = decode(std::span(b).first(n));
            ASSERT_FALSE(d.has_value()) << which << " cut to " << n;
            EXPECT_TRUE(is_truncation(d.error().code)) << which << " cut to " << n;
        }
        Bytes longer = b;
        longer.push_back(0);
        EXPECT_EQ(decode(longer).error().code, ErrorCode::BadLength) << which;
        ++which;
    }
}

TEST(PmixBodies, FlagsAndRequiredFieldsAreChecked) {
    Bytes f = encode(fence());  // collect at 0
    f[0] = 2;
    EXPECT_EQ(decode_fence(f).error().code, ErrorCode::BadField);
    EXPECT_EQ(decode_fence(encode(FenceBody{})).error().code, ErrorCode::BadField);  // no procs
    Bytes g = encode(get());  // immediate last
    g.back() = 2;
    EXPECT_EQ(decode_get(g).error().code, ErrorCode::BadField);
    EXPECT_EQ(decode_get(encode(GetBody{{1, 1}, std::string(kMaxKeyLength + 1, 'k'), false}))
                  .error()
                  .code,
              ErrorCode::BadLength);
    SpawnBody s = spawn();
    s.apps[1].maxprocs = 0;
    EXPECT_EQ(decode_spawn(encode(s)).error().code, ErrorCode::BadField);
    s.apps[1].maxprocs = -1;
    EXPECT_EQ(decode_spawn(encode(s)).error().code, ErrorCode::BadField);
    EXPECT_EQ(decode_spawn(encode(SpawnBody{every_shape(), {}})).error().code, ErrorCode::BadField);
}

TEST(PmixBodies, HostileCountsAreRefusedBeforeAllocating) {
    Bytes fence_names = encode(FenceBody{false, {{1, 1}}, {}});  // names count at 1
    put_be32(fence_names, 1, 0xFFFFFFFFu);
    Bytes abort_names = encode(AbortBody{1, "", {{1, 1}}});  // names count at 8
    put_be32(abort_names, 8, 0xFFFFFFFFu);
    Bytes keys = encode(LookupBody{{"a", "b"}, {}});  // keys count at 0
    put_be32(keys, 0, 0xFFFFFFFFu);
    Bytes apps = encode(SpawnBody{{}, {App{"x", {}, {}, "", 1, {}}}});  // apps count at 4
    put_be32(apps, 4, 0xFFFFFFFFu);
    Bytes argv = encode(SpawnBody{{}, {App{"x", {"a"}, {}, "", 1, {}}}});  // argv count at 13
    put_be32(argv, 13, 0xFFFFFFFFu);
    Bytes message = encode(AbortBody{1, "abc", {}});
    put_be32(message, 4, 0xFFFFFFF0u);
    int which = 0;
    const auto code = [](auto r) { return r ? ErrorCode{} : r.error().code; };
    for (const auto& c :  // (no structured binding: clang 14 cannot capture one)
         std::vector<std::pair<Bytes, std::function<ErrorCode(const Bytes&)>>>{
             {fence_names, [&](const Bytes& x) { return code(decode_fence(x)); }},
             {abort_names, [&](const Bytes& x) { return code(decode_abort(x)); }},
             {keys, [&](const Bytes& x) { return code(decode_lookup(x)); }},
             {apps, [&](const Bytes& x) { return code(decode_spawn(x)); }},
             {argv, [&](const Bytes& x) { return code(decode_spawn(x)); }},
             {message, [&](const Bytes& x) { return code(decode_abort(x)); }},
         }) {
        // BadLength: refused on reading the count, not after running out.
        const std::size_t largest = largest_allocation(
            [&] { EXPECT_EQ(c.second(c.first), ErrorCode::BadLength) << which; });
        EXPECT_LT(largest, 4096u) << which;
        ++which;
    }
}

}  // namespace
