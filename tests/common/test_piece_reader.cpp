// PieceReader: the framing core under btl drtcp's and oob drtcp's decoders.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "piece_reader.hpp"

using plugin::common::Error;
using plugin::common::ErrorCode;
using plugin::common::fail;
using plugin::common::PieceReader;
using plugin::common::Result;

namespace {

// A toy length-prefixed format: a 2-byte piece gives the length of the next
// piece (0 closes the stream); a prefix check refuses a first byte of 0xFF.
struct Toy {
    PieceReader& r;
    std::vector<std::vector<std::uint8_t>> got;
    int prefixes = 0;
    bool length_next = true;

    Result<void> on_prefix(std::span<const std::uint8_t> p) {
        ++prefixes;
        if (p[0] == 0xFF)
            return r.fail(Error(ErrorCode::BadField, "bad prefix"));
        return {};
    }
    Result<void> on_piece(std::span<std::uint8_t> piece) {
        if (length_next) {
            const std::size_t len = piece[0] | (piece[1] << 8);
            if (len == 0) {
                r.stop();
                return {};
            }
            length_next = false;
            r.expect(len, len > 4 ? 1 : 0);
            return {};
        }
        got.emplace_back(piece.begin(), piece.end());
        length_next = true;
        r.expect(2);
        return {};
    }
};

std::vector<std::uint8_t> toy_stream(const std::vector<std::size_t>& lens) {
    std::vector<std::uint8_t> out;
    std::size_t k = 0;
    for (std::size_t len : lens) {
        out.push_back(static_cast<std::uint8_t>(len));
        out.push_back(static_cast<std::uint8_t>(len >> 8));
        for (std::size_t i = 0; i < len; ++i)
            out.push_back(static_cast<std::uint8_t>(1 + k++ % 254));  // never 0xFF
    }
    out.push_back(0);
    out.push_back(0);
    return out;
}

}  // namespace

TEST(PieceReader, EverySplitOfAStreamGivesTheSamePieces) {
    const std::vector<std::size_t> lens = {1, 3, 300, 5, 4096, 2, 70};
    auto stream = toy_stream(lens);
    std::mt19937 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        PieceReader r(1024);
        r.expect(2);
        Toy t{r};
        std::size_t off = 0;
        while (off < stream.size()) {
            const std::size_t n =
                std::min(stream.size() - off, std::size_t{1} + rng() % (trial % 3 == 0 ? 3 : 900));
            ASSERT_TRUE(r.feed(std::span(stream).subspan(off, n), t)) << "trial " << trial;
            off += n;
        }
        ASSERT_TRUE(r.stopped());
        ASSERT_EQ(t.got.size(), lens.size());
        std::size_t at = 2;
        for (std::size_t i = 0; i < lens.size(); ++i) {
            ASSERT_EQ(t.got[i].size(), lens[i]);
            EXPECT_TRUE(std::equal(t.got[i].begin(), t.got[i].end(), stream.begin() + at));
            at += lens[i] + 2;
        }
        EXPECT_EQ(t.prefixes, 4);         // once per piece longer than 4 bytes, split or not
        EXPECT_EQ(r.buffer_bytes(), 0u);  // stopped: nothing held
        EXPECT_FALSE(r.failed());
        // Bytes after the stream's end fail it.
        std::uint8_t extra[1] = {1};
        EXPECT_EQ(r.feed(std::span(extra), t).error().code, ErrorCode::BadLength);
        EXPECT_TRUE(r.failed());
    }
}

TEST(PieceReader, APrefixIsJudgedBeforeTheRestArrives) {
    PieceReader r(1024);
    r.expect(100, 8);
    Toy t{r};
    t.length_next = false;
    std::vector<std::uint8_t> bad(8, 0);
    bad[0] = 0xFF;
    EXPECT_TRUE(r.feed(std::span(bad).first(5), t));  // not judged yet
    EXPECT_EQ(t.prefixes, 0);
    auto e = r.feed(std::span(bad).subspan(5), t);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code, ErrorCode::BadField);
    EXPECT_EQ(t.prefixes, 1);
    EXPECT_TRUE(r.stopped());
    EXPECT_EQ(r.buffer_bytes(), 0u);
    std::vector<std::uint8_t> more(10, 1);
    EXPECT_TRUE(r.failed());
    EXPECT_EQ(r.feed(more, t).error().code, ErrorCode::InvalidState);  // failed for good
}

TEST(PieceReader, APieceGoesIntoItsDestinationAndTheAdapterMayReadThereDirectly) {
    PieceReader r(64);
    std::vector<std::uint8_t> dest(1000, 0);
    r.expect_into(dest);
    struct Sink {
        PieceReader& r;
        std::span<std::uint8_t> done;
        Result<void> on_prefix(std::span<const std::uint8_t>) { return {}; }
        Result<void> on_piece(std::span<std::uint8_t> p) {
            done = p;
            r.expect(2);
            return {};
        }
    } s{r, {}};
    std::vector<std::uint8_t> src(1000);
    std::iota(src.begin(), src.end(), std::uint8_t{0});
    ASSERT_TRUE(r.feed(std::span(src).first(100), s));
    EXPECT_EQ(r.held(), 100u);
    EXPECT_EQ(r.buffer_bytes(), 0u);  // nothing of ours held: it went to dest
    auto direct = r.direct_target(512);
    ASSERT_EQ(direct.size(), 900u);
    EXPECT_EQ(direct.data(), dest.data() + 100);
    std::copy(src.begin() + 100, src.begin() + 700, direct.begin());
    ASSERT_TRUE(r.commit_direct(600, s));
    EXPECT_TRUE(s.done.empty());
    EXPECT_TRUE(r.direct_target(512).empty());  // 300 left: below the minimum
    ASSERT_TRUE(r.feed(std::span(src).subspan(700), s));
    ASSERT_EQ(s.done.data(), dest.data());
    EXPECT_EQ(s.done.size(), 1000u);
    EXPECT_EQ(dest, src);
    EXPECT_EQ(r.want(), 2u);              // the handler asked for the next piece
    EXPECT_FALSE(r.commit_direct(5, s));  // more than the piece wants
}

TEST(PieceReader, ALargeSplitPieceDoesNotKeepItsBuffer) {
    PieceReader r(256);
    r.expect(2);
    Toy t{r};
    auto stream = toy_stream({100, 5000, 10});
    const auto feed_up_to = [&](std::size_t& off, std::size_t end, std::size_t chunk = 64) {
        for (; off < end; off += std::min(chunk, end - off))
            ASSERT_TRUE(r.feed(std::span(stream).subspan(off, std::min(chunk, end - off)), t));
    };
    std::size_t off = 0;
    feed_up_to(off, 2 + 100 + 2 + 4000);
    ASSERT_EQ(t.got.size(), 1u);
    EXPECT_EQ(r.buffer_bytes(), 5000u);  // assembling the large piece
    feed_up_to(off, 2 + 100 + 2 + 5000);
    ASSERT_EQ(t.got.size(), 2u);
    EXPECT_EQ(r.buffer_bytes(), 0u);  // handed out, and its buffer freed
    feed_up_to(off, stream.size() - 2, 3);
    ASSERT_EQ(t.got.size(), 3u);
    EXPECT_EQ(r.buffer_bytes(), 10u);  // a small one's buffer is kept
}
