// oob drtcp stream reassembly: any split of a valid stream yields the same
// messages; hostile streams fail without delivering or allocating.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "stream.hpp"

namespace {

using namespace oob::drtcp::core;

struct Got final : StreamSink {
    std::vector<ProcName> connects;
    std::vector<std::pair<Header, std::vector<std::uint8_t>>> messages;
    int byes = 0;
    bool accept = true;
    int frames_to_open = 1;  // handshake frames before messages
    HsStep on_handshake(const HandshakeFrame& f) override {
        connects.push_back(f.sender);
        if (!accept)
            return HsStep::Refuse;
        return static_cast<int>(connects.size()) < frames_to_open ? HsStep::More : HsStep::Open;
    }
    void on_message(const Header& h, std::span<const std::uint8_t> p) override {
        messages.emplace_back(h, std::vector<std::uint8_t>(p.begin(), p.end()));
    }
    void on_bye() override { ++byes; }
};

void append_connect(std::vector<std::uint8_t>& s, ProcName who, HsType type = HsType::Hello) {
    HandshakeFrame f;
    f.type = type;
    f.sender = who;
    f.receiver = {who.jobid, 0};
    if (type != HsType::Confirm)
        f.nonce.fill(0x5A);
    f.mac.fill(0xA5);
    std::uint8_t b[kHandshakeSize];
    ASSERT_TRUE(encode_handshake(f, b).has_value());
    s.insert(s.end(), b, b + kHandshakeSize);
}

void append_message(std::vector<std::uint8_t>& s, const Header& h,
                    const std::vector<std::uint8_t>& payload) {
    std::uint8_t b[kHeaderSize];
    ASSERT_TRUE(encode_header(h, b).has_value());
    s.insert(s.end(), b, b + kHeaderSize);
    s.insert(s.end(), payload.begin(), payload.end());
}

TEST(OobStream, AnySplitGivesTheSameMessages) {
    std::mt19937_64 rng(21);
    std::vector<std::uint8_t> stream;
    append_connect(stream, {9, 4});
    std::vector<std::vector<std::uint8_t>> payloads;
    for (int i = 0; i < 200; ++i) {
        std::vector<std::uint8_t> p(i % 7 == 0 ? 0 : rng() % (i % 5 == 0 ? 70000 : 300));
        for (auto& x : p)
            x = static_cast<std::uint8_t>(rng());
        Header h;
        h.origin = {9, 4};
        h.dst = {9, static_cast<std::uint32_t>(i)};
        h.tag = static_cast<std::uint32_t>(i);
        h.nbytes = static_cast<std::uint32_t>(p.size());
        ASSERT_TRUE(set_routed(h, i % 2 ? "radix" : "direct"));
        append_message(stream, h, p);
        payloads.push_back(std::move(p));
    }
    append_message(stream, Header{.kind = Kind::Bye}, {});
    for (const std::size_t max_piece : {1ul, 2ul, 7ul, 72ul, 100ul, 4096ul, 1ul << 20}) {
        Got got;
        StreamDecoder d(1 << 20);
        std::size_t at = 0;
        while (at < stream.size()) {
            const std::size_t n = std::min(stream.size() - at, 1 + rng() % max_piece);
            ASSERT_TRUE(d.feed(std::span(stream).subspan(at, n), got).has_value()) << at;
            at += n;
        }
        ASSERT_EQ(got.connects.size(), 1u);
        EXPECT_EQ(got.connects[0], (ProcName{9, 4}));
        ASSERT_EQ(got.messages.size(), payloads.size()) << max_piece;
        for (std::size_t i = 0; i < payloads.size(); ++i) {
            EXPECT_EQ(got.messages[i].first.tag, i);
            EXPECT_EQ(got.messages[i].second, payloads[i]);
        }
        EXPECT_EQ(got.byes, 1);
        EXPECT_EQ(d.phase(), StreamDecoder::Phase::Closed);
        EXPECT_EQ(d.held(), 0u);
    }
}

TEST(OobStream, AbsurdLengthFailsWithoutAllocating) {
    std::vector<std::uint8_t> s;
    append_connect(s, {1, 1});
    Header h;
    h.nbytes = 0x7FFFFFFF;
    append_message(s, h, {});
    Got got;
    StreamDecoder d(1 << 20);
    EXPECT_EQ(d.feed(s, got).error().code, plugin::common::ErrorCode::BadLength);
    EXPECT_EQ(d.phase(), StreamDecoder::Phase::Failed);
    EXPECT_EQ(d.held(), 0u);
    EXPECT_TRUE(got.messages.empty());
    EXPECT_FALSE(d.feed(s, got).has_value());  // failed for good
}

TEST(OobStream, RefusedOrGarbageFirstBytesFail) {
    std::vector<std::uint8_t> s;
    append_connect(s, {1, 1});
    Got refuse;
    refuse.accept = false;
    StreamDecoder d1(1 << 20);
    EXPECT_FALSE(d1.feed(s, refuse).has_value());
    std::vector<std::uint8_t> http = {'G',  'E',  'T', ' ', '/', ' ', 'H',  'T',
                                      'T',  'P',  '/', '1', '.', '1', '\r', '\n',
                                      '\r', '\n', 0,   0,   0,   0,   0,    0};
    Got got;
    StreamDecoder d2(1 << 20);
    EXPECT_FALSE(d2.feed(http, got).has_value());
    EXPECT_TRUE(got.connects.empty());
}

TEST(OobStream, TwoHandshakeFramesThenMessagesInAnySplit) {
    std::vector<std::uint8_t> s;
    append_connect(s, {4, 2});
    append_connect(s, {4, 2}, HsType::Confirm);
    Header h;
    h.nbytes = 3;
    append_message(s, h, {1, 2, 3});
    for (std::size_t piece = 1; piece <= s.size(); ++piece) {
        Got got;
        got.frames_to_open = 2;
        StreamDecoder d(1 << 20);
        for (std::size_t at = 0; at < s.size(); at += piece)
            ASSERT_TRUE(d.feed(std::span(s).subspan(at, std::min(piece, s.size() - at)), got));
        ASSERT_EQ(got.connects.size(), 2u);
        ASSERT_EQ(got.messages.size(), 1u) << piece;
    }
}

TEST(OobStream, AWrongStartFailsAtItsEighthByte) {
    // Issue 24's version 1 CONNECT: magic right, version 1.
    const std::uint8_t v1[] = {'D', 'R', 'O', 'B', 1, 0, 0, 0, 0x46, 0xCE, 0, 0};
    for (const std::size_t first : {1ul, 7ul}) {
        Got got;
        StreamDecoder d(1 << 20);
        ASSERT_TRUE(d.feed(std::span(v1).first(first), got).has_value());
        auto r = d.feed(std::span(v1).subspan(first, 8 - first), got);
        ASSERT_FALSE(r.has_value()) << first;
        EXPECT_EQ(r.error().code, plugin::common::ErrorCode::BadVersion);
        EXPECT_EQ(d.held(), 0u);
        EXPECT_TRUE(got.connects.empty());
    }
    // A frame type unknown, and flags on a REPLY.
    for (const std::uint8_t bad : {std::uint8_t{0}, std::uint8_t{4}}) {
        const std::uint8_t p[] = {'D', 'R', 'O', 'B', kVersion, bad, 0, 0};
        Got got;
        StreamDecoder d(1 << 20);
        EXPECT_EQ(d.feed(p, got).error().code, plugin::common::ErrorCode::BadType);
    }
    const std::uint8_t flags[] = {'D', 'R', 'O', 'B', kVersion, 2, kFlagReconnect, 0};
    Got got;
    StreamDecoder d(1 << 20);
    EXPECT_EQ(d.feed(flags, got).error().code, plugin::common::ErrorCode::BadField);
}

TEST(OobStream, BytesAfterByeFail) {
    std::vector<std::uint8_t> s;
    append_connect(s, {1, 1});
    append_message(s, Header{.kind = Kind::Bye}, {});
    s.push_back(0);
    Got got;
    StreamDecoder d(1 << 20);
    EXPECT_FALSE(d.feed(s, got).has_value());
    EXPECT_EQ(got.byes, 1);
}

TEST(OobStream, RandomMutationsNeverCrash) {
    std::mt19937_64 rng(5);
    std::vector<std::uint8_t> base;
    append_connect(base, {3, 3});
    for (int i = 0; i < 5; ++i) {
        Header h;
        h.nbytes = 40;
        append_message(base, h, std::vector<std::uint8_t>(40, static_cast<std::uint8_t>(i)));
    }
    for (int i = 0; i < 20000; ++i) {
        auto s = base;
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
            s[rng() % s.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        Got got;
        StreamDecoder d(4096);
        (void)d.feed(s, got);
        EXPECT_LE(got.messages.size(), 5u);
        EXPECT_LE(d.held(), kHeaderSize + 4096u);
        for (const auto& m : got.messages)
            EXPECT_EQ(m.second.size(), 40u);  // never a wrong length delivered
    }
}

}  // namespace
