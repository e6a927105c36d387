// pmix dr message header and FrameReader: golden bytes, every damaged or
// lying header refused, and any split of a stream of messages yields the
// same messages.
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "pmix_test_util.hpp"

namespace {

using namespace pmix_dr_test;

TEST(PmixWire, HeaderGoldenBytes) {
    const Bytes m = encode_message(MsgType::Get, 0x01020304u, bytes_of("xyz"));
    const Bytes want{'D', 'R', 'P', 'X', kVersion, 4, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4, 'x', 'y', 'z'};
    EXPECT_EQ(m, want);
}

TEST(PmixWire, HeaderRoundTripForEveryType) {
    for (std::uint8_t t = kFirstMsgType; t <= kLastMsgType; ++t) {
        const Bytes payload(t, t);
        const Bytes m = encode_message(static_cast<MsgType>(t), 0xFFFFFFFFu - t, payload);
        ASSERT_EQ(m.size(), kHeaderSize + payload.size());
        auto h = decode_header(m, payload.size());
        ASSERT_TRUE(h.has_value()) << int{t};
        EXPECT_EQ(h->type, static_cast<MsgType>(t));
        EXPECT_EQ(h->length, payload.size());
        EXPECT_EQ(h->req, 0xFFFFFFFFu - t);
    }
}

TEST(PmixWire, DamagedHeadersAreRefused) {
    const Bytes good = encode_message(MsgType::Fence, 9, Bytes(100, 1));
    ASSERT_TRUE(decode_header(good, 100).has_value());
    for (std::size_t n = 0; n < kHeaderSize; ++n)
        EXPECT_EQ(decode_header(std::span(good).first(n), 100).error().code, ErrorCode::Truncated);
    for (std::size_t i = 0; i < 4 * 8; ++i) {  // any bit of the magic
        Bytes b = good;
        b[i / 8] ^= static_cast<std::uint8_t>(1u << (i % 8));
        EXPECT_EQ(decode_header(b, 100).error().code, ErrorCode::BadField) << "bit " << i;
    }
    for (const std::uint8_t v : U8s{0, 2, 0xFF}) {
        Bytes b = good;
        b[4] = v;
        EXPECT_EQ(decode_header(b, 100).error().code, ErrorCode::BadVersion) << int{v};
    }
    for (const std::uint8_t t : U8s{0, kLastMsgType + 1u, 0x80, 0xFF}) {
        Bytes b = good;
        b[5] = t;
        EXPECT_EQ(decode_header(b, 100).error().code, ErrorCode::BadType) << int{t};
    }
    for (std::size_t i = 6 * 8; i < 8 * 8; ++i) {  // any bit of the reserved flags
        Bytes b = good;
        b[i / 8] ^= static_cast<std::uint8_t>(1u << (i % 8));
        EXPECT_EQ(decode_header(b, 100).error().code, ErrorCode::BadField) << "bit " << i;
    }
    // A length above the receiver's maximum is refused before anything else.
    EXPECT_EQ(decode_header(good, 99).error().code, ErrorCode::BadLength);
    Bytes huge = good;
    put_be32(huge, 8, 0xFFFFFFFFu);
    EXPECT_EQ(decode_header(huge, 1 << 20).error().code, ErrorCode::BadLength);
}

struct Sent {
    MsgType type;
    std::uint32_t req;
    Bytes payload;
    friend bool operator==(const Sent&, const Sent&) = default;
};

std::vector<Sent> conversation() {
    Bytes big(200000);
    for (std::size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<std::uint8_t>(i * 7);
    std::vector<Sent> out{
        {MsgType::Hello, 1, encode(HelloBody{{5, 0}, 77})},
        {MsgType::Finalize, 2, {}},
        {MsgType::Commit, 3, encode(every_shape())},
        {MsgType::Reply, 3, big},
        {MsgType::Event, 0, Bytes(1, 0)},
    };
    for (std::uint32_t i = 0; i < 300; ++i)  // enough small ones to pass 64 KiB
        out.push_back({MsgType::Get, 10 + i, Bytes(i % 500, static_cast<std::uint8_t>(i))});
    return out;
}

Bytes stream_of(const std::vector<Sent>& msgs) {
    Bytes s;
    for (const Sent& m : msgs) {
        const Bytes one = encode_message(m.type, m.req, m.payload);
        s.insert(s.end(), one.begin(), one.end());
    }
    return s;
}

// Feeds `stream` in pieces of 1..max_piece bytes, draining after each.
std::vector<Sent> read_split(const Bytes& stream, std::mt19937& rng, std::size_t max_piece) {
    FrameReader fr(1 << 20);
    std::vector<Sent> got;
    for (std::size_t at = 0; at < stream.size();) {
        const std::size_t n = std::min(stream.size() - at, 1 + rng() % max_piece);
        fr.feed(std::span(stream).subspan(at, n));
        at += n;
        for (;;) {
            auto m = fr.next();
            EXPECT_TRUE(m.has_value());
            if (!m || !*m)
                break;
            got.push_back({(*m)->header.type, (*m)->header.req, std::move((*m)->payload)});
        }
    }
    EXPECT_EQ(fr.buffered(), 0u);
    return got;
}

TEST(PmixFrameReader, AnySplitYieldsTheSameMessages) {
    const std::vector<Sent> msgs = conversation();
    const Bytes stream = stream_of(msgs);
    for (std::uint32_t seed = 0; seed < 12; ++seed) {
        std::mt19937 rng(seed);
        const std::size_t max_piece = seed % 3 == 0 ? 7 : seed % 3 == 1 ? 500 : 150000;
        EXPECT_EQ(read_split(stream, rng, max_piece), msgs) << "seed " << seed;
    }
    std::mt19937 rng(0);
    EXPECT_EQ(read_split(stream, rng, stream.size()), msgs);  // one read
}

TEST(PmixFrameReader, WaitsForTheWholeMessage) {
    const Bytes m = encode_message(MsgType::JobData, 4, encode_u32(6));
    FrameReader fr(64);
    for (std::size_t i = 0; i + 1 < m.size(); ++i) {
        fr.feed(std::span(m).subspan(i, 1));
        auto r = fr.next();
        ASSERT_TRUE(r.has_value());
        EXPECT_FALSE(r->has_value()) << i;
        EXPECT_EQ(fr.buffered(), i + 1);
    }
    fr.feed(std::span(m).last(1));
    auto r = fr.next();
    ASSERT_TRUE(r.has_value() && r->has_value());
    EXPECT_EQ((*r)->header.type, MsgType::JobData);
    EXPECT_EQ(decode_u32((*r)->payload).value(), 6u);
    EXPECT_FALSE(fr.next()->has_value());
}

TEST(PmixFrameReader, OversizedOrDamagedHeaderStopsTheStream) {
    Bytes s = encode_message(MsgType::Get, 1, Bytes(10, 1));
    const Bytes too_long = encode_message(MsgType::Get, 2, Bytes(11, 2));
    s.insert(s.end(), too_long.begin(), too_long.begin() + kHeaderSize);  // header is enough
    FrameReader fr(10);
    fr.feed(s);
    auto first = fr.next();
    ASSERT_TRUE(first.has_value() && first->has_value());
    EXPECT_EQ((*first)->header.req, 1u);
    for (int i = 0; i < 2; ++i) {  // and stays failed
        auto r = fr.next();
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error().code, ErrorCode::BadLength);
    }
    FrameReader junk(1 << 20);
    junk.feed(Bytes(kHeaderSize, 0));
    EXPECT_EQ(junk.next().error().code, ErrorCode::BadField);
}

}  // namespace
