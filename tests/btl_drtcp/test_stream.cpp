// drtcp stream reassembly: frames come out whole and in order whatever the
// read sizes, memory stays bounded by max_frame, and any malformed input
// fails the stream once and for good — never a crash, never a frame made up.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "stream.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;

struct Rec : StreamSink {
    std::vector<Hello> hellos;
    std::vector<Reply> replies;
    int confirms = 0;
    std::vector<std::pair<std::uint8_t, std::vector<std::uint8_t>>> frames;
    bool accept = true;
    bool on_hello(const Hello& h) override {
        hellos.push_back(h);
        return accept;
    }
    bool on_reply(const Reply& r) override {
        replies.push_back(r);
        return accept;
    }
    bool on_confirm(const Confirm&) override {
        ++confirms;
        return accept;
    }
    void on_frame(std::uint8_t tag, std::span<std::uint8_t> payload) override {
        frames.emplace_back(tag, std::vector<std::uint8_t>(payload.begin(), payload.end()));
    }
    void on_bye() override { bye = true; }
    bool bye = false;
};

// What an acceptor reads first: the initiator's HELLO, then its CONFIRM.
void append_hello(std::vector<std::uint8_t>& s, ProcName from) {
    const std::size_t at = s.size();
    s.resize(at + kHelloSize + kConfirmSize);
    Hello h;
    h.from = from;
    h.to = {from.jobid, 1000};
    h.link = 1;
    h.nonce[0] = 42;
    ASSERT_TRUE(encode(h, std::span(s).subspan(at)).has_value());
    Confirm c;
    c.mac[3] = 7;
    ASSERT_TRUE(encode(c, std::span(s).subspan(at + kHelloSize)).has_value());
}

void append_frame(std::vector<std::uint8_t>& s, std::uint8_t tag,
                  const std::vector<std::uint8_t>& payload) {
    const std::size_t at = s.size();
    s.resize(at + kFrameHeaderSize);
    ASSERT_TRUE(encode(FrameHeader{tag, 0, static_cast<std::uint32_t>(payload.size())},
                       std::span(s).subspan(at))
                    .has_value());
    s.insert(s.end(), payload.begin(), payload.end());
}

void append_bye(std::vector<std::uint8_t>& s) {
    const std::size_t at = s.size();
    s.resize(at + kFrameHeaderSize);
    ASSERT_TRUE(encode(FrameHeader{0, kFrameFlagBye, 0}, std::span(s).subspan(at)).has_value());
}

std::vector<std::uint8_t> payload(std::mt19937_64& rng, std::size_t max) {
    std::vector<std::uint8_t> p(rng() % (max + 1));
    for (auto& b : p)
        b = static_cast<std::uint8_t>(rng());
    return p;
}

TEST(DrtcpStream, WholeFramesWhateverTheReadSizes) {
    for (std::uint64_t seed = 1; seed <= 50; ++seed) {
        std::mt19937_64 rng(seed);
        std::vector<std::uint8_t> stream;
        append_hello(stream, {5, 9});
        std::vector<std::pair<std::uint8_t, std::vector<std::uint8_t>>> sent;
        for (int i = 0; i < 200; ++i) {
            auto p = payload(rng, i % 10 == 0 ? 70000 : 300);
            const auto tag = static_cast<std::uint8_t>(rng());
            append_frame(stream, tag, p);
            sent.emplace_back(tag, std::move(p));
        }
        StreamDecoder d(1u << 17);
        Rec rec;
        std::size_t pos = 0;
        std::size_t peak = 0;
        while (pos < stream.size()) {
            // Reads of 1 byte up to 100 KB, like a socket under load.
            const std::size_t n = std::min<std::size_t>(
                stream.size() - pos, rng() % 4 == 0 ? 1 + rng() % 8 : 1 + rng() % 100000);
            ASSERT_TRUE(d.feed(std::span(stream).subspan(pos, n), rec).has_value());
            peak = std::max(peak, d.held());
            pos += n;
        }
        ASSERT_EQ(rec.hellos.size(), 1u);
        EXPECT_EQ(rec.hellos[0].from, (ProcName{5, 9}));
        EXPECT_EQ(rec.confirms, 1);
        EXPECT_EQ(rec.frames, sent) << "seed " << seed;
        EXPECT_EQ(d.frames(), sent.size());
        EXPECT_EQ(d.phase(), StreamDecoder::Phase::Header);
        EXPECT_EQ(d.held(), 0u);
        EXPECT_LE(peak, std::size_t{1} << 17);
    }
}

TEST(DrtcpStream, DirectReadsIntoTheFrameBufferMixWithFeeds) {
    // The adapter's pattern: when a large payload is missing, read straight
    // into direct_target(); whatever comes beyond it goes through feed().
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        std::mt19937_64 rng(seed);
        std::vector<std::uint8_t> stream;
        append_hello(stream, {5, 9});
        std::vector<std::pair<std::uint8_t, std::vector<std::uint8_t>>> sent;
        for (int i = 0; i < 60; ++i) {
            auto p = payload(rng, i % 3 == 0 ? 100000 : 500);
            append_frame(stream, 7, p);
            sent.emplace_back(7, std::move(p));
        }
        append_bye(stream);
        StreamDecoder d(1u << 17);
        Rec rec;
        std::size_t pos = 0;
        while (pos < stream.size()) {
            std::size_t n = std::min<std::size_t>(stream.size() - pos, 1 + rng() % 70000);
            const auto direct = d.direct_target(1024);
            if (!direct.empty()) {
                const std::size_t into = std::min(n, direct.size());
                std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(pos), into,
                            direct.begin());
                ASSERT_TRUE(d.commit_direct(into, rec).has_value());
                pos += into;
                n -= into;
            }
            ASSERT_TRUE(d.feed(std::span(stream).subspan(pos, n), rec).has_value());
            pos += n;
        }
        EXPECT_EQ(rec.frames, sent) << "seed " << seed;
        EXPECT_EQ(d.phase(), StreamDecoder::Phase::Bye);
        EXPECT_TRUE(rec.bye);
        std::vector<std::uint8_t> more{kFrameSync};
        EXPECT_FALSE(d.feed(more, rec).has_value());  // nothing may follow BYE
        EXPECT_FALSE(d.commit_direct(1, rec).has_value());
    }
}

// A sink with one registered buffer, as the transport does for PUTs.
struct PutSink : Rec {
    std::vector<std::uint8_t> target = std::vector<std::uint8_t>(300000, 0);
    std::uint64_t key = 77;
    int done = 0;
    std::span<std::uint8_t> on_put(std::uint64_t k, std::uint64_t addr,
                                   std::uint32_t len) override {
        const auto base = reinterpret_cast<std::uintptr_t>(target.data());
        if (k != key || addr < base || addr - base + len > target.size())
            return {};
        return {target.data() + (addr - base), len};
    }
    void on_put_done() override { ++done; }
};

void append_put(std::vector<std::uint8_t>& s, std::uint64_t key, std::uint64_t addr,
                const std::vector<std::uint8_t>& bytes) {
    const std::size_t at = s.size();
    s.resize(at + kFrameHeaderSize + kPutHeaderSize);
    ASSERT_TRUE(encode(FrameHeader{0, kFrameFlagPut, static_cast<std::uint32_t>(bytes.size())},
                       std::span(s).subspan(at))
                    .has_value());
    ASSERT_TRUE(
        encode(PutHeader{key, addr}, std::span(s).subspan(at + kFrameHeaderSize)).has_value());
    s.insert(s.end(), bytes.begin(), bytes.end());
}

TEST(DrtcpStream, PutWritesStraightIntoTheRegisteredTargetBetweenFrames) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
        std::mt19937_64 rng(seed);
        PutSink sink;
        const auto base = reinterpret_cast<std::uintptr_t>(sink.target.data());
        std::vector<std::uint8_t> stream;
        append_hello(stream, {1, 2});
        append_frame(stream, 5, {1, 2, 3});
        const auto bytes = payload(rng, 250000);
        const std::size_t off = rng() % (sink.target.size() - bytes.size() + 1);
        append_put(stream, sink.key, base + off,
                   bytes.empty() ? std::vector<std::uint8_t>{9} : bytes);
        append_frame(stream, 6, {4});
        StreamDecoder d(1024);  // a PUT is not bounded by max_frame
        std::size_t pos = 0;
        while (pos < stream.size()) {
            std::size_t n = std::min<std::size_t>(stream.size() - pos, 1 + rng() % 40000);
            const auto direct = d.direct_target(512);
            if (!direct.empty()) {
                const std::size_t into = std::min(n, direct.size());
                std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(pos), into,
                            direct.begin());
                ASSERT_TRUE(d.commit_direct(into, sink).has_value());
                pos += into;
                n -= into;
            }
            ASSERT_TRUE(d.feed(std::span(stream).subspan(pos, n), sink).has_value()) << seed;
            pos += n;
        }
        EXPECT_EQ(sink.done, 1);
        ASSERT_EQ(sink.frames.size(), 2u);
        EXPECT_EQ(sink.frames[1].first, 6);
        const auto& want = bytes.empty() ? std::vector<std::uint8_t>{9} : bytes;
        EXPECT_TRUE(std::equal(want.begin(), want.end(),
                               sink.target.begin() + static_cast<std::ptrdiff_t>(off)));
        EXPECT_EQ(d.held(), 0u);
    }
}

TEST(DrtcpStream, PutOutsideTheRegionFailsBeforeWritingAByte) {
    PutSink sink;
    const auto base = reinterpret_cast<std::uintptr_t>(sink.target.data());
    for (const auto& [key, addr, len] :
         {std::tuple{sink.key + 1, base, 10u}, std::tuple{sink.key, base - 1, 10u},
          std::tuple{sink.key, base + sink.target.size() - 5, 10u}}) {
        std::vector<std::uint8_t> stream;
        append_hello(stream, {1, 2});
        append_put(stream, key, addr, std::vector<std::uint8_t>(len, 0xEE));
        StreamDecoder d(1024);
        auto r = d.feed(stream, sink);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error().code, ErrorCode::OutOfRange);
        EXPECT_EQ(std::count(sink.target.begin(), sink.target.end(), 0xEE), 0);
    }
}

TEST(DrtcpStream, AbsurdLengthFailsWithoutHoldingIt) {
    std::vector<std::uint8_t> s;
    append_hello(s, {1, 1});
    std::array<std::uint8_t, kFrameHeaderSize> h{};
    ASSERT_TRUE(encode(FrameHeader{1, 0, 0xFFFFFFF0u}, h).has_value());
    s.insert(s.end(), h.begin(), h.end());
    StreamDecoder d(65536);
    Rec rec;
    auto r = d.feed(s, rec);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, ErrorCode::BadLength);
    EXPECT_EQ(d.phase(), StreamDecoder::Phase::Failed);
    EXPECT_EQ(d.held(), 0u);
    // Failed for good: nothing more is consumed or delivered.
    std::vector<std::uint8_t> more;
    append_frame(more, 2, {1, 2, 3});
    EXPECT_FALSE(d.feed(more, rec).has_value());
    EXPECT_TRUE(rec.frames.empty());
}

TEST(DrtcpStream, RefusedHelloFailsTheStream) {
    std::vector<std::uint8_t> s;
    append_hello(s, {3, 4});
    append_frame(s, 1, {9});
    StreamDecoder d(1024);
    Rec rec;
    rec.accept = false;
    auto r = d.feed(s, rec);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, ErrorCode::UnknownPeer);
    EXPECT_TRUE(rec.frames.empty());
}

TEST(DrtcpStream, WithoutHelloAndZeroLengthFrames) {
    std::vector<std::uint8_t> s;
    append_frame(s, 7, {});
    append_frame(s, 8, {1});
    StreamDecoder d(16, StreamDecoder::Role::None);
    Rec rec;
    ASSERT_TRUE(d.feed(s, rec).has_value());
    ASSERT_EQ(rec.frames.size(), 2u);
    EXPECT_TRUE(rec.frames[0].second.empty());
    EXPECT_EQ(rec.frames[1].second, std::vector<std::uint8_t>{1});
}

// Hostile input (what a stranger connecting to the port sends): random bytes,
// and valid streams with one byte changed. The decoder either fails or
// delivers frames, never crashes, and never holds more than max_frame.
TEST(DrtcpStream, HostileBytesNeverCrash) {
    std::mt19937_64 rng(2026);
    for (int round = 0; round < 3000; ++round) {
        std::vector<std::uint8_t> s;
        if (round % 2 == 0) {
            s = payload(rng, 4096);
        } else {
            append_hello(s, {1, 2});
            for (int i = 0; i < 5; ++i)
                append_frame(s, 1, payload(rng, 2000));
            s[rng() % s.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        }
        StreamDecoder d(4096,
                        rng() % 2 == 0 ? StreamDecoder::Role::Acceptor : StreamDecoder::Role::None);
        Rec rec;
        std::size_t pos = 0;
        while (pos < s.size()) {
            const std::size_t n = std::min<std::size_t>(s.size() - pos, 1 + rng() % 512);
            if (!d.feed(std::span(s).subspan(pos, n), rec)) {
                EXPECT_EQ(d.phase(), StreamDecoder::Phase::Failed);
                break;
            }
            EXPECT_LE(d.held(), 4096u + kFrameHeaderSize);
            pos += n;
        }
        for (const auto& f : rec.frames)
            EXPECT_LE(f.second.size(), 4096u);
    }
}

// The handshake phases: an initiator's stream starts with REPLY; anything
// else first (a frame header, a HELLO, a CONFIRM, another version, a wrong
// length) fails after its 8-byte preamble, without waiting for more bytes.
TEST(DrtcpStream, HandshakeMessagesAreCheckedAtTheirPreamble) {
    std::vector<std::uint8_t> reply(kReplySize);
    Reply r;
    r.from = {3, 1};
    ASSERT_TRUE(encode(r, reply).has_value());
    {
        std::vector<std::uint8_t> s = reply;
        append_frame(s, 9, {1, 2, 3});
        StreamDecoder d(1024, StreamDecoder::Role::Initiator);
        Rec rec;
        ASSERT_TRUE(d.feed(s, rec).has_value());
        ASSERT_EQ(rec.replies.size(), 1u);
        EXPECT_EQ(rec.replies[0].from, (ProcName{3, 1}));
        ASSERT_EQ(rec.frames.size(), 1u);
    }
    struct Bad {
        std::size_t byte;
        std::uint8_t value;
        ErrorCode code;
    };
    for (const Bad& bad :
         {Bad{0, 0xD7, ErrorCode::BadType}, Bad{4, 1, ErrorCode::BadVersion},
          Bad{5, 1, ErrorCode::BadType}, Bad{5, 3, ErrorCode::BadType},
          Bad{6, 0xFF, ErrorCode::BadLength}, Bad{7, 0xFF, ErrorCode::BadLength}}) {
        std::vector<std::uint8_t> s(reply.begin(), reply.begin() + kPreambleSize);
        s[bad.byte] = bad.value;
        StreamDecoder d(1024, StreamDecoder::Role::Initiator);
        Rec rec;
        auto res = d.feed(s, rec);  // 8 bytes are enough to refuse
        ASSERT_FALSE(res.has_value()) << bad.byte;
        EXPECT_EQ(res.error().code, bad.code) << bad.byte;
        EXPECT_TRUE(rec.replies.empty());
        EXPECT_EQ(d.phase(), StreamDecoder::Phase::Failed);
    }
    // A huge length in what would be a frame header, first on a connection.
    std::vector<std::uint8_t> huge(kFrameHeaderSize);
    ASSERT_TRUE(encode(FrameHeader{65, 0, 0xFFFFFFF0u}, huge).has_value());
    StreamDecoder d(1024, StreamDecoder::Role::Acceptor);
    Rec rec;
    EXPECT_EQ(d.feed(huge, rec).error().code, ErrorCode::BadType);
    EXPECT_EQ(d.held(), 0u);
    // A refused REPLY fails the stream before the frames behind it.
    std::vector<std::uint8_t> s = reply;
    append_frame(s, 9, {1});
    StreamDecoder d2(1024, StreamDecoder::Role::Initiator);
    Rec refuse;
    refuse.accept = false;
    EXPECT_EQ(d2.feed(s, refuse).error().code, ErrorCode::UnknownPeer);
    EXPECT_TRUE(refuse.frames.empty());
}

// An acceptor accepts nothing between HELLO and CONFIRM: a frame where the
// CONFIRM belongs fails the stream.
TEST(DrtcpStream, NoFrameBeforeTheConfirm) {
    std::vector<std::uint8_t> s(kHelloSize);
    Hello h;
    h.from = {1, 1};
    ASSERT_TRUE(encode(h, s).has_value());
    append_frame(s, 9, std::vector<std::uint8_t>(40, 0));
    StreamDecoder d(1024, StreamDecoder::Role::Acceptor);
    Rec rec;
    EXPECT_EQ(d.feed(s, rec).error().code, ErrorCode::BadType);
    EXPECT_EQ(rec.hellos.size(), 1u);
    EXPECT_EQ(rec.confirms, 0);
    EXPECT_TRUE(rec.frames.empty());
}

}  // namespace
