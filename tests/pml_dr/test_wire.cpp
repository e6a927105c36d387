// pml dr frame codec: round trips, golden bytes, truncation, bit flips,
// tampered fields (re-sealed past the header CRC) and random garbage.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "crc32c.hpp"
#include "frame_util.hpp"
#include "wire.hpp"

namespace {

using namespace pml::dr::core;
using namespace pml_dr_test;
using plugin::common::crc32c;
using plugin::common::ErrorCode;

std::vector<std::uint8_t> bytes_of(std::string_view s) {
    return {s.begin(), s.end()};
}

Common common(std::uint16_t flags) {
    Common c;
    c.flags = flags;
    c.src_jobid = 0x8001'0203u;
    c.src_vpid = 0x0000'1234u;
    c.frame_seq = 0xFEDC'BA98u;
    c.ack_seq = 0x7654'3210u;
    return c;
}

void expect_common(const Common& got, const Common& want, FrameType type) {
    EXPECT_EQ(got.type, type);
    EXPECT_EQ(got.flags, want.flags);
    EXPECT_EQ(got.src_jobid, want.src_jobid);
    EXPECT_EQ(got.src_vpid, want.src_vpid);
    EXPECT_EQ(got.frame_seq, want.frame_seq);
    EXPECT_EQ(got.ack_seq, want.ack_seq);
}

void expect_match(const MatchFields& got, const MatchFields& want) {
    EXPECT_EQ(got.cid, want.cid);
    EXPECT_EQ(got.src_rank, want.src_rank);
    EXPECT_EQ(got.tag, want.tag);
    EXPECT_EQ(got.msg_seq, want.msg_seq);
    EXPECT_EQ(got.payload_len, want.payload_len);
    EXPECT_EQ(got.payload_crc, want.payload_crc);
}

MatchFields match_fields(std::span<const std::uint8_t> payload, bool csum) {
    MatchFields m;
    m.cid = 0xA5A5'0001u;
    m.src_rank = 0x0102'0304;
    m.tag = -4711;
    m.msg_seq = 0xFFFE;
    m.payload_len = static_cast<std::uint32_t>(payload.size());
    m.payload_crc = csum ? crc32c(payload) : 0;
    return m;
}

// One valid frame of every type, with payload where the type has one.
struct Samples {
    std::vector<std::uint8_t> payload = pattern(37, 5, 9);
    MatchHdr match{common(kFlagPayloadCsum | kFlagRetransmit), match_fields(payload, true)};
    RndvHdr rndv{common(kFlagPayloadCsum | kFlagSync), match_fields(payload, true),
                 0x1'0000'0025ull, 0xCAFE'F00D'1234'5678ull};
    CtsHdr cts{common(kFlagRetransmit), 0x1111'2222'3333'4444ull, 0x5555'6666'7777'8888ull,
               0x1'0000'0000ull, 0x2'0000'0001ull};
    FragHdr frag{common(kFlagPayloadCsum), 0x0123'4567'89AB'CDEFull, 0xFFFF'FFFF'0000'0001ull,
                 static_cast<std::uint32_t>(payload.size()), crc32c(payload)};
    AckHdr ack{common(0), 0xFFFF'FFC0u, 0x8000'0000'0000'0001ull};
    CreditHdr credit{common(kFlagRetransmit), 0x0123'4567'0000'0042ull};
    NackHdr nack{common(0), 0xFFFF'FFFEu};
    PutHdr put{common(kFlagRetransmit), 0x1111'2222'3333'4444ull, 0x5555'6666'7777'8888ull,
               0x1'0000'0000ull,        0x2'0000'0001ull,         0x7FFF'0000'1000ull};

    std::vector<std::vector<std::uint8_t>> all_frames() const {
        return {frame_of(match, payload),
                frame_of(rndv, payload),
                frame_of(cts),
                frame_of(frag, payload),
                frame_of(ack),
                frame_of(credit),
                frame_of(nack),
                frame_of(put)};
    }
};

ErrorCode error_of(std::span<const std::uint8_t> f) {
    auto d = decode(f);
    EXPECT_FALSE(d.has_value());
    return d ? ErrorCode::Internal : d.error().code;
}

// ---------------------------------------------------------------- round trip

TEST(PmlDrWire, HeaderSizes) {
    EXPECT_EQ(header_size(FrameType::Match), 48u);
    EXPECT_EQ(header_size(FrameType::Rndv), 72u);
    EXPECT_EQ(header_size(FrameType::Cts), 56u);
    EXPECT_EQ(header_size(FrameType::Frag), 48u);
    EXPECT_EQ(header_size(FrameType::Ack), 52u);
    EXPECT_EQ(header_size(FrameType::Credit), 32u);
    EXPECT_EQ(header_size(FrameType::Nack), 32u);
    EXPECT_EQ(header_size(static_cast<FrameType>(0)), 0u);
    EXPECT_EQ(header_size(FrameType::Put), 64u);
    EXPECT_EQ(header_size(FrameType::Probe), 32u);
    EXPECT_EQ(header_size(FrameType::ProbeAck), 32u);
    EXPECT_EQ(header_size(FrameType::Bye), 32u);
    EXPECT_EQ(header_size(static_cast<FrameType>(12)), 0u);
    EXPECT_EQ(to_string(FrameType::Bye), "BYE");
    EXPECT_EQ(to_string(FrameType::ProbeAck), "PROBE_ACK");
    EXPECT_EQ(to_string(FrameType::Rndv), "RNDV");
    EXPECT_EQ(to_string(static_cast<FrameType>(77)), "unknown");
}

TEST(PmlDrWire, RoundTripMatch) {
    Samples s;
    auto f = frame_of(s.match, s.payload);
    ASSERT_EQ(f.size(), kMatchHeaderSize + s.payload.size());
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<MatchHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.match.common, FrameType::Match);
    expect_match(h->match, s.match.match);
    EXPECT_TRUE(
        std::equal(d->payload.begin(), d->payload.end(), s.payload.begin(), s.payload.end()));
    EXPECT_EQ(d->payload.data(), f.data() + kMatchHeaderSize);  // in place, no copy
}

TEST(PmlDrWire, RoundTripRndv) {
    Samples s;
    auto f = frame_of(s.rndv, s.payload);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<RndvHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.rndv.common, FrameType::Rndv);
    expect_match(h->match, s.rndv.match);
    EXPECT_EQ(h->msg_len, s.rndv.msg_len);
    EXPECT_EQ(h->send_req, s.rndv.send_req);
    EXPECT_EQ(h->remote_addr, 0u);
    EXPECT_EQ(d->payload.size(), s.payload.size());
}

TEST(PmlDrWire, RoundTripRndvRget) {
    // RGET: the payload is a registration handle, msg_len may exceed it by far
    // or be smaller (the handle is not message bytes), remote_addr is kept.
    const auto handle = pattern(24, 1, 2);
    RndvHdr r{common(kFlagPayloadCsum | kFlagRget | kFlagSync), match_fields(handle, true), 16,
              0x77, 0x0000'7FFF'DEAD'B000ull};
    auto f = frame_of(r, handle);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto& h = std::get<RndvHdr>(d->header);
    expect_common(h.common, r.common, FrameType::Rndv);
    EXPECT_EQ(h.msg_len, 16u);
    EXPECT_EQ(h.send_req, 0x77u);
    EXPECT_EQ(h.remote_addr, 0x0000'7FFF'DEAD'B000ull);
}

TEST(PmlDrWire, RoundTripCts) {
    Samples s;
    auto f = frame_of(s.cts);
    ASSERT_EQ(f.size(), kCtsHeaderSize);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<CtsHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.cts.common, FrameType::Cts);
    EXPECT_EQ(h->send_req, s.cts.send_req);
    EXPECT_EQ(h->recv_req, s.cts.recv_req);
    EXPECT_EQ(h->offset, s.cts.offset);
    EXPECT_EQ(h->want_len, s.cts.want_len);
    EXPECT_TRUE(d->payload.empty());
}

TEST(PmlDrWire, RoundTripPut) {
    Samples s;
    auto f = frame_of(s.put);
    ASSERT_EQ(f.size(), kPutHeaderSize);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<PutHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.put.common, FrameType::Put);
    EXPECT_EQ(h->send_req, s.put.send_req);
    EXPECT_EQ(h->recv_req, s.put.recv_req);
    EXPECT_EQ(h->offset, s.put.offset);
    EXPECT_EQ(h->want_len, s.put.want_len);
    EXPECT_EQ(h->remote_addr, s.put.remote_addr);
    EXPECT_TRUE(d->payload.empty());
    EXPECT_EQ(to_string(FrameType::Put), "PUT");
}

TEST(PmlDrWire, PutRules) {
    Samples s;
    auto p = s.put;
    p.offset = p.want_len + 1;
    EXPECT_EQ(error_of(frame_of(p)), ErrorCode::BadField) << "offset past want_len";
    p = s.put;
    p.remote_addr = 0;
    EXPECT_EQ(error_of(frame_of(p)), ErrorCode::BadField) << "no address to write to";
    auto f = frame_of(s.put);
    f.push_back(0x42);
    EXPECT_EQ(error_of(f), ErrorCode::BadLength) << "PUT carries no payload";
    p = s.put;
    p.offset = p.want_len;  // nothing left to write: allowed
    EXPECT_TRUE(decode(frame_of(p)).has_value());
}

TEST(PmlDrWire, PutDoneOnlyOnAnEmptyFrag) {
    Samples s;
    FragHdr done{common(kFlagPutDone | kFlagAckNow), 0x0123'4567'89ABull, 1u << 20, 0, 0};
    auto d = decode(frame_of(done));
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    EXPECT_EQ(common_of(d->header).flags & kFlagPutDone, kFlagPutDone);
    auto with_payload = done;
    with_payload.payload_len = static_cast<std::uint32_t>(s.payload.size());
    EXPECT_EQ(error_of(frame_of(with_payload, s.payload)), ErrorCode::BadField);
    // With the csum flag payload_crc is the CRC of the bytes put, not of the
    // (empty) payload: any value decodes, and it is not a payload CRC.
    auto with_csum = done;
    with_csum.common.flags |= kFlagPayloadCsum;
    with_csum.payload_crc = 0xDEADBEEFu;
    auto dc = decode(frame_of(with_csum));
    ASSERT_TRUE(dc.has_value()) << to_string(dc.error().code);
    EXPECT_EQ(std::get<FragHdr>(dc->header).payload_crc, 0xDEADBEEFu);
    std::uint32_t pcrc = 0;
    EXPECT_FALSE(payload_crc_of(*dc, pcrc));
    auto cts = s.cts;
    cts.common.flags |= kFlagPutDone;
    EXPECT_EQ(error_of(frame_of(cts)), ErrorCode::BadField) << "PUT-done on a CTS";
    auto put = s.put;
    put.common.flags |= kFlagPutDone;
    EXPECT_EQ(error_of(frame_of(put)), ErrorCode::BadField) << "PUT-done on a PUT";
}

TEST(PmlDrWire, RoundTripFrag) {
    Samples s;
    auto f = frame_of(s.frag, s.payload);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<FragHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.frag.common, FrameType::Frag);
    EXPECT_EQ(h->recv_req, s.frag.recv_req);
    EXPECT_EQ(h->offset, s.frag.offset);
    EXPECT_EQ(h->payload_len, s.frag.payload_len);
    EXPECT_EQ(h->payload_crc, s.frag.payload_crc);
    EXPECT_TRUE(
        std::equal(d->payload.begin(), d->payload.end(), s.payload.begin(), s.payload.end()));
}

TEST(PmlDrWire, RoundTripAck) {
    Samples s;
    auto f = frame_of(s.ack);
    ASSERT_EQ(f.size(), kAckHeaderSize);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<AckHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.ack.common, FrameType::Ack);
    EXPECT_EQ(h->sack_base, s.ack.sack_base);
    EXPECT_EQ(h->sack_mask, s.ack.sack_mask);
}

TEST(PmlDrWire, RoundTripCredit) {
    Samples s;
    auto f = frame_of(s.credit);
    ASSERT_EQ(f.size(), kCreditHeaderSize);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<CreditHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.credit.common, FrameType::Credit);
    EXPECT_EQ(h->released_total, s.credit.released_total);
}

TEST(PmlDrWire, RoundTripNack) {
    Samples s;
    auto f = frame_of(s.nack);
    ASSERT_EQ(f.size(), kNackHeaderSize);
    auto d = decode(f);
    ASSERT_TRUE(d.has_value()) << to_string(d.error().code);
    const auto* h = std::get_if<NackHdr>(&d->header);
    ASSERT_NE(h, nullptr);
    expect_common(h->common, s.nack.common, FrameType::Nack);
    EXPECT_EQ(h->seq, s.nack.seq);
    EXPECT_EQ(to_string(FrameType::Nack), "NACK");
    // The reserved word must be zero; a payload is not allowed.
    auto g = f;
    g[kCommonHeaderSize + 7] = 1;
    reseal(g);
    EXPECT_EQ(error_of(g), ErrorCode::BadField);
    auto p = f;
    p.push_back(0);
    EXPECT_EQ(error_of(p), ErrorCode::BadLength);
}

TEST(PmlDrWire, RoundTripExtremeValues) {
    // All-ones and all-zero fields survive; signed fields keep their sign.
    for (const std::int32_t v : {INT32_MIN, -1, 0, INT32_MAX}) {
        MatchHdr h;
        h.common.flags = 0;
        h.common.src_jobid = h.common.src_vpid = h.common.frame_seq = static_cast<std::uint32_t>(v);
        h.match.cid = static_cast<std::uint32_t>(v);
        h.match.src_rank = v;
        h.match.tag = v;
        h.match.msg_seq = static_cast<std::uint16_t>(v);
        auto f = frame_of(h);
        auto d = decode(f);
        ASSERT_TRUE(d.has_value()) << v;
        const auto& m = std::get<MatchHdr>(d->header);
        expect_common(m.common, h.common, FrameType::Match);
        expect_match(m.match, h.match);
    }
}

TEST(PmlDrWire, DecodeHeaderWithSeparatePayload) {
    Samples s;
    auto f = frame_of(s.frag, s.payload);
    // Header alone, payload in another segment: length checked, CRC not.
    auto d = decode_header(std::span(f).first(kFragHeaderSize), s.payload.size());
    ASSERT_TRUE(d.has_value());
    EXPECT_TRUE(d->payload.empty());
    EXPECT_EQ(std::get<FragHdr>(d->header).payload_len, s.payload.size());
    // Split inside the payload: both parts count.
    auto d2 = decode_header(std::span(f).first(kFragHeaderSize + 10), s.payload.size() - 10);
    ASSERT_TRUE(d2.has_value());
    EXPECT_EQ(d2->payload.size(), 10u);
    // Wrong total.
    auto d3 = decode_header(std::span(f).first(kFragHeaderSize), s.payload.size() + 1);
    ASSERT_FALSE(d3.has_value());
    EXPECT_EQ(d3.error().code, ErrorCode::BadLength);
}

TEST(PmlDrWire, EncodeIntoShortBufferFails) {
    Samples s;
    std::array<std::uint8_t, kMaxHeaderSize + 8> buf{};
    auto try_short = [&](const auto& h, std::size_t hsize) {
        buf.fill(0xEE);
        auto n = encode(h, std::span(buf).first(hsize - 1));
        ASSERT_FALSE(n.has_value());
        EXPECT_EQ(n.error().code, ErrorCode::NoSpace);
        // Nothing written past the buffer it was given.
        for (std::size_t i = hsize - 1; i < buf.size(); ++i)
            EXPECT_EQ(buf[i], 0xEE) << i;
        // A larger buffer: writes exactly the header.
        auto m = encode(h, buf);
        ASSERT_TRUE(m.has_value());
        EXPECT_EQ(*m, hsize);
        EXPECT_EQ(buf[hsize], 0xEE);
    };
    try_short(s.match, kMatchHeaderSize);
    try_short(s.rndv, kRndvHeaderSize);
    try_short(s.cts, kCtsHeaderSize);
    try_short(s.frag, kFragHeaderSize);
    try_short(s.ack, kAckHeaderSize);
    try_short(s.credit, kCreditHeaderSize);
}

// ---------------------------------------------------------------- golden bytes

TEST(PmlDrWire, ReferenceCrcIsCrc32c) {
    const auto check = bytes_of("123456789");
    EXPECT_EQ(ref_crc32c(check), 0xE3069283u);
    EXPECT_EQ(crc32c(check), 0xE3069283u);
}

TEST(PmlDrWire, GoldenMatchHeader) {
    const auto payload = bytes_of("hello");
    MatchHdr h;
    h.common.flags = kFlagPayloadCsum | kFlagRetransmit;
    h.common.src_jobid = 0x01020304u;
    h.common.src_vpid = 0x0A0B0C0Du;
    h.common.frame_seq = 0xDEADBEEFu;
    h.common.ack_seq = 0x0BADF00Du;
    h.match.cid = 0x00C0FFEEu;
    h.match.src_rank = 3;
    h.match.tag = -2;
    h.match.msg_seq = 0xBEEF;
    h.match.payload_len = 5;
    h.match.payload_crc = crc32c(payload);
    ASSERT_EQ(h.match.payload_crc, 0x9A71BB4Cu);  // CRC32C("hello")

    // Laid out by hand from the diagram in wire.hpp, hdr_crc as zero.
    std::vector<std::uint8_t> want = {
        0x06, 0x01, 0x00, 0x05,  // version 6, type MATCH, flags csum|retransmit
        0x00, 0x00, 0x00, 0x00,  // hdr_crc (filled below)
        0x01, 0x02, 0x03, 0x04,  // src_jobid
        0x0A, 0x0B, 0x0C, 0x0D,  // src_vpid
        0xDE, 0xAD, 0xBE, 0xEF,  // frame_seq
        0x0B, 0xAD, 0xF0, 0x0D,  // ack_seq
        0x00, 0xC0, 0xFF, 0xEE,  // cid
        0x00, 0x00, 0x00, 0x03,  // src_rank
        0xFF, 0xFF, 0xFF, 0xFE,  // tag -2
        0xBE, 0xEF, 0x00, 0x00,  // msg_seq, reserved
        0x00, 0x00, 0x00, 0x05,  // payload_len
        0x9A, 0x71, 0xBB, 0x4C,  // payload_crc
    };
    ASSERT_EQ(want.size(), kMatchHeaderSize);
    const std::uint32_t hdr_crc = ref_crc32c(want);
    EXPECT_EQ(hdr_crc, 0x0043F508u);  // computed independently of the library
    put_be32(std::span(want).subspan(4, 4), hdr_crc);

    std::array<std::uint8_t, kMatchHeaderSize> got{};
    auto n = encode(h, got);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(*n, kMatchHeaderSize);
    EXPECT_EQ(std::vector<std::uint8_t>(got.begin(), got.end()), want);

    want.insert(want.end(), payload.begin(), payload.end());
    auto d = decode(want);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(std::get<MatchHdr>(d->header).match.tag, -2);
}

// ---------------------------------------------------------------- truncation

TEST(PmlDrWire, EveryTruncationFailsCleanly) {
    Samples s;
    for (const auto& f : s.all_frames()) {
        ASSERT_FALSE(f.empty());
        const std::size_t hsize = header_size(static_cast<FrameType>(f[1]));
        ASSERT_TRUE(decode(f).has_value());
        for (std::size_t len = 0; len < f.size(); ++len) {
            // A fresh copy of exactly len bytes, so ASan sees any over-read.
            std::vector<std::uint8_t> cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
            const ErrorCode e = error_of(cut);
            const ErrorCode want = len < hsize ? ErrorCode::Truncated : ErrorCode::BadLength;
            EXPECT_EQ(e, want) << "type " << int{f[1]} << " len " << len;
        }
        // One byte too many is as bad as one too few.
        auto longer = f;
        longer.push_back(0);
        EXPECT_EQ(error_of(longer), ErrorCode::BadLength) << "type " << int{f[1]};
    }
}

TEST(PmlDrWire, DecodeHeaderTruncation) {
    Samples s;
    for (const auto& f : s.all_frames()) {
        const std::size_t hsize = header_size(static_cast<FrameType>(f[1]));
        for (std::size_t len = 0; len < hsize; ++len) {
            std::vector<std::uint8_t> cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
            auto d = decode_header(cut, f.size() - hsize);
            ASSERT_FALSE(d.has_value());
            EXPECT_EQ(d.error().code, ErrorCode::Truncated);
        }
    }
}

// ---------------------------------------------------------------- decode_match

// The receive fast path: exactly the MATCH frames decode_header accepts.
TEST(PmlDrWire, DecodeMatchTakesExactlyTheMatchesDecodeAccepts) {
    Samples s;
    const auto agree = [](const std::vector<std::uint8_t>& f, const char* what) {
        MatchHdr fast;
        const bool ok = decode_match(f, fast);
        auto d = decode_header(f, 0);
        const bool match = d && std::holds_alternative<MatchHdr>(d->header);
        EXPECT_EQ(ok, match) << what;
        if (ok && match) {
            const MatchHdr& slow = std::get<MatchHdr>(d->header);
            expect_common(fast.common, slow.common, FrameType::Match);
            expect_match(fast.match, slow.match);
        }
    };
    for (const auto& f : s.all_frames())
        agree(f, "sample");
    auto plain = s.match;
    plain.common.flags = kFlagAckNow;
    plain.match.payload_crc = 0;
    agree(frame_of(plain, s.payload), "no csum, ack_now");
    agree(frame_of(plain, {}), "empty");
    const auto f = frame_of(s.match, s.payload);
    for (std::size_t len = 0; len < f.size(); ++len)
        agree(std::vector<std::uint8_t>(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len)),
              "truncated");
    for (std::size_t bit = 0; bit < kMatchHeaderSize * 8; ++bit) {
        auto g = f;
        g[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        agree(g, "flipped");
        reseal(g);
        agree(g, "flipped and resealed");  // the field checks, not the CRC, decide
    }
    auto bad_crc_field = plain;
    bad_crc_field.match.payload_crc = 1;  // set without the csum flag
    agree(frame_of(bad_crc_field, s.payload), "payload_crc without csum");
}

// ---------------------------------------------------------------- bit flips

TEST(PmlDrWire, EveryHeaderBitFlipDetected) {
    Samples s;
    const auto f = frame_of(s.match, s.payload);
    for (std::size_t bit = 0; bit < kMatchHeaderSize * 8; ++bit) {
        auto g = f;
        g[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        auto d = decode(g);
        ASSERT_FALSE(d.has_value()) << "bit " << bit << " accepted";
        // Outside the type byte the CRC covers the same span: it must be the CRC
        // that notices (CRC32C catches every single-bit error).
        if (bit / 8 != 1) {
            EXPECT_EQ(d.error().code, ErrorCode::BadChecksum) << "bit " << bit;
        }
    }
}

TEST(PmlDrWire, EveryHeaderDoubleBitFlipDetected) {
    Samples s;
    const auto f = frame_of(s.match, s.payload);
    constexpr std::size_t kBits = kMatchHeaderSize * 8;
    std::size_t tried = 0;
    for (std::size_t a = 0; a < kBits; ++a) {
        for (std::size_t b = a + 1; b < kBits; ++b) {
            auto g = f;
            g[a / 8] ^= static_cast<std::uint8_t>(1u << (a % 8));
            g[b / 8] ^= static_cast<std::uint8_t>(1u << (b % 8));
            ASSERT_FALSE(decode(g).has_value()) << "bits " << a << "," << b << " accepted";
            ++tried;
        }
    }
    EXPECT_EQ(tried, kBits * (kBits - 1) / 2);
}

TEST(PmlDrWire, PayloadBitFlipsDetectedWithCsum) {
    Samples s;
    for (const auto& f :
         {frame_of(s.match, s.payload), frame_of(s.rndv, s.payload), frame_of(s.frag, s.payload)}) {
        const std::size_t hsize = header_size(static_cast<FrameType>(f[1]));
        for (std::size_t bit = hsize * 8; bit < f.size() * 8; ++bit) {
            auto g = f;
            g[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            EXPECT_EQ(error_of(g), ErrorCode::BadChecksum)
                << "type " << int{f[1]} << " bit " << bit;
        }
    }
}

TEST(PmlDrWire, PayloadNotCheckedWithoutCsumFlag) {
    // Without kFlagPayloadCsum the payload is the BTL's business: a flip goes
    // through (this is what makes the flag matter, and the test above able to fail).
    Samples s;
    MatchHdr h{common(0), match_fields(s.payload, false)};
    auto f = frame_of(h, s.payload);
    f.back() ^= 0x10;
    auto d = decode(f);
    ASSERT_TRUE(d.has_value());
    EXPECT_NE(d->payload.back(), s.payload.back());
}

TEST(PmlDrWire, PayloadCrcWrongValueRejected) {
    Samples s;
    auto m = s.match;
    m.match.payload_crc ^= 1;
    EXPECT_EQ(error_of(frame_of(m, s.payload)), ErrorCode::BadChecksum);
    // Empty payload with csum: CRC of nothing is 0.
    MatchHdr e{common(kFlagPayloadCsum), match_fields({}, true)};
    EXPECT_EQ(e.match.payload_crc, 0u);
    EXPECT_TRUE(decode(frame_of(e)).has_value());
    e.match.payload_crc = 1;
    EXPECT_EQ(error_of(frame_of(e)), ErrorCode::BadChecksum);
}

// ---------------------------------------------------------------- tampered fields

TEST(PmlDrWire, ResealHelperIsFaithful) {
    // The helper reproduces the encoder's CRC, so tampered frames fail for
    // the tampered field and not for the seal.
    Samples s;
    for (auto f : s.all_frames()) {
        auto g = f;
        reseal(g);
        EXPECT_EQ(g, f);
        g[12] ^= 0x40;  // src_vpid
        EXPECT_EQ(error_of(g), ErrorCode::BadChecksum);
        reseal(g);
        EXPECT_TRUE(decode(g).has_value());
    }
}

TEST(PmlDrWire, UnknownVersionRejected) {
    Samples s;
    for (auto f : s.all_frames()) {
        for (const std::uint8_t v : std::array<std::uint8_t, 4>{0, 1, 0x81, 0xFF}) {
            auto g = f;
            g[0] = v;
            reseal(g);
            EXPECT_EQ(error_of(g), ErrorCode::BadVersion) << "version " << int{v};
        }
    }
}

TEST(PmlDrWire, UnknownTypeRejected) {
    Samples s;
    for (const std::uint8_t t : std::array<std::uint8_t, 5>{0, 12, 13, 0x80, 0xFF}) {
        auto g = frame_of(s.match, s.payload);
        g[1] = t;
        EXPECT_EQ(error_of(g), ErrorCode::BadType) << "type " << int{t};
        reseal(g, kMatchHeaderSize);  // even with a "valid" CRC
        EXPECT_EQ(error_of(g), ErrorCode::BadType) << "type " << int{t};
    }
}

TEST(PmlDrWire, UnknownFlagsRejected) {
    Samples s;
    for (auto f : s.all_frames()) {
        for (std::uint16_t bit = 0; bit < 16; ++bit) {
            const auto flag = static_cast<std::uint16_t>(1u << bit);
            if ((flag & kKnownFlags) != 0)
                continue;
            auto g = f;
            g[2] = static_cast<std::uint8_t>(g[2] | (flag >> 8));
            g[3] = static_cast<std::uint8_t>(g[3] | (flag & 0xFF));
            reseal(g);
            EXPECT_EQ(error_of(g), ErrorCode::BadField) << "flag 0x" << std::hex << flag;
        }
    }
}

TEST(PmlDrWire, ReservedNonzeroRejected) {
    Samples s;
    constexpr std::size_t kReserved = kCommonHeaderSize + 14;  // after cid, rank, tag, msg_seq
    for (auto f : {frame_of(s.match, s.payload), frame_of(s.rndv, s.payload)}) {
        for (std::size_t i = kReserved; i < kReserved + 2; ++i) {
            for (const std::uint8_t v : std::array<std::uint8_t, 2>{0x01, 0x80}) {
                auto g = f;
                g[i] = v;
                reseal(g);
                EXPECT_EQ(error_of(g), ErrorCode::BadField) << "byte " << i;
            }
        }
    }
}

TEST(PmlDrWire, PayloadCrcWithoutFlagRejected) {
    Samples s;
    MatchHdr m{common(0), match_fields(s.payload, false)};
    m.match.payload_crc = 0x1234;
    EXPECT_EQ(error_of(frame_of(m, s.payload)), ErrorCode::BadField);
    FragHdr fr{common(0), 1, 0, static_cast<std::uint32_t>(s.payload.size()), 7};
    EXPECT_EQ(error_of(frame_of(fr, s.payload)), ErrorCode::BadField);
    fr.payload_crc = 0;
    EXPECT_TRUE(decode(frame_of(fr, s.payload)).has_value());
}

TEST(PmlDrWire, PayloadLenMismatchRejected) {
    Samples s;
    const std::size_t n = s.payload.size();
    for (const std::uint32_t declared :
         {0u, static_cast<std::uint32_t>(n - 1), static_cast<std::uint32_t>(n + 1), 0xFFFF'FFFFu}) {
        auto m = s.match;
        m.match.payload_len = declared;
        EXPECT_EQ(error_of(frame_of(m, s.payload)), ErrorCode::BadLength) << declared;
        auto r = s.rndv;
        r.match.payload_len = declared;
        EXPECT_EQ(error_of(frame_of(r, s.payload)), ErrorCode::BadLength) << declared;
        auto f = s.frag;
        f.payload_len = declared;
        EXPECT_EQ(error_of(frame_of(f, s.payload)), ErrorCode::BadLength) << declared;
    }
    // Same thing reached by tampering with the encoded field (offset 36 in MATCH).
    auto g = frame_of(s.match, s.payload);
    put_be32(std::span(g).subspan(kCommonHeaderSize + 16, 4), static_cast<std::uint32_t>(n + 3));
    reseal(g);
    EXPECT_EQ(error_of(g), ErrorCode::BadLength);
}

TEST(PmlDrWire, RndvPayloadLongerThanMessageRejected) {
    Samples s;
    auto r = s.rndv;
    r.msg_len = s.payload.size() - 1;
    EXPECT_EQ(error_of(frame_of(r, s.payload)), ErrorCode::BadLength);
    r.msg_len = s.payload.size();  // a whole message in the RNDV frame is fine
    EXPECT_TRUE(decode(frame_of(r, s.payload)).has_value());
}

// A flag CTS, FRAG and CREDIT must not carry.
void expect_refused_by_cts_frag_credit(const Samples& s, std::uint16_t flag) {
    auto c = s.cts;
    c.common.flags = flag;
    EXPECT_EQ(error_of(frame_of(c)), ErrorCode::BadField) << flag;
    auto f = s.frag;
    f.common.flags = static_cast<std::uint16_t>(f.common.flags | flag);
    EXPECT_EQ(error_of(frame_of(f, s.payload)), ErrorCode::BadField) << flag;
    auto cr = s.credit;
    cr.common.flags = flag;
    EXPECT_EQ(error_of(frame_of(cr)), ErrorCode::BadField) << flag;
}

TEST(PmlDrWire, RndvOnlyFlagsRejectedElsewhere) {
    Samples s;
    for (const std::uint16_t flag :
         {std::uint16_t{kFlagSync}, std::uint16_t{kFlagRget}, std::uint16_t{kFlagDataCsum}}) {
        auto m = s.match;
        m.common.flags = static_cast<std::uint16_t>(m.common.flags | flag);
        EXPECT_EQ(error_of(frame_of(m, s.payload)), ErrorCode::BadField) << flag;
        auto a = s.ack;
        a.common.flags = flag;
        EXPECT_EQ(error_of(frame_of(a)), ErrorCode::BadField) << flag;
        expect_refused_by_cts_frag_credit(s, flag);
    }
    // ... and accepted on RNDV.
    for (const std::uint16_t flag : {std::uint16_t{kFlagSync}, std::uint16_t{kFlagCreditStarved}}) {
        auto r = s.rndv;
        r.common.flags = static_cast<std::uint16_t>(r.common.flags | flag);
        EXPECT_TRUE(decode(frame_of(r, s.payload)).has_value()) << flag;
    }
}

// Credit-starved: MATCH and RNDV only; credit-answer: ACK only.
TEST(PmlDrWire, CreditFlagsOnTheirFramesOnly) {
    Samples s;
    auto m = s.match;
    m.common.flags = static_cast<std::uint16_t>(m.common.flags | kFlagCreditStarved);
    const auto mf = frame_of(m, s.payload);
    EXPECT_TRUE(decode(mf).has_value());
    MatchHdr fast;
    EXPECT_TRUE(decode_match(mf, fast));
    EXPECT_EQ(fast.common.flags & kFlagCreditStarved, kFlagCreditStarved);
    auto a = s.ack;
    a.common.flags = kFlagCreditAnswer;
    a.released_total = 1u << 20;
    const auto d = decode(frame_of(a));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(std::get<AckHdr>(d->header).released_total, 1u << 20);
    EXPECT_EQ(std::get<AckHdr>(d->header).common.flags, kFlagCreditAnswer);

    a.common.flags = kFlagCreditStarved;
    EXPECT_EQ(error_of(frame_of(a)), ErrorCode::BadField);
    for (const std::uint16_t flag :
         {std::uint16_t{kFlagCreditStarved}, std::uint16_t{kFlagCreditAnswer}})
        expect_refused_by_cts_frag_credit(s, flag);
    m.common.flags = static_cast<std::uint16_t>(s.match.common.flags | kFlagCreditAnswer);
    const auto answered_match = frame_of(m, s.payload);
    EXPECT_EQ(error_of(answered_match), ErrorCode::BadField);
    EXPECT_FALSE(decode_match(answered_match, fast));
    auto r = s.rndv;
    r.common.flags = static_cast<std::uint16_t>(r.common.flags | kFlagCreditAnswer);
    EXPECT_EQ(error_of(frame_of(r, s.payload)), ErrorCode::BadField);
}

TEST(PmlDrWire, RndvRgetRules) {
    Samples s;
    // RGET handle must be checksummed: it steers a remote read.
    RndvHdr r{common(kFlagRget), match_fields(s.payload, false), 1 << 20, 5, 0x1000};
    EXPECT_EQ(error_of(frame_of(r, s.payload)), ErrorCode::BadField);
    // remote_addr without RGET.
    auto plain = s.rndv;
    plain.remote_addr = 0x1000;
    EXPECT_EQ(error_of(frame_of(plain, s.payload)), ErrorCode::BadField);
    // Tampered on the wire (remote_addr is the last 8 header bytes).
    auto g = frame_of(s.rndv, s.payload);
    g[kRndvHeaderSize - 1] = 1;
    reseal(g);
    EXPECT_EQ(error_of(g), ErrorCode::BadField);
}

TEST(PmlDrWire, RgetDataChecksumRules) {
    Samples s;
    const std::vector<std::uint8_t> handle_and_crc = pattern(16 + kDataCsumSize, 3, 0);
    RndvHdr r{common(kFlagRget | kFlagPayloadCsum | kFlagDataCsum),
              match_fields(handle_and_crc, true), 1 << 20, 5, 0x1000};
    auto d = decode(frame_of(r, handle_and_crc));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->payload.size(), handle_and_crc.size());
    // Without RGET it means nothing: refused.
    auto plain = s.rndv;
    plain.common.flags = static_cast<std::uint16_t>(plain.common.flags | kFlagDataCsum);
    EXPECT_EQ(error_of(frame_of(plain, s.payload)), ErrorCode::BadField);
    // A payload too short to hold the CRC: refused.
    for (std::size_t n = 0; n < kDataCsumSize; ++n) {
        const std::vector<std::uint8_t> p = pattern(n, 3, 0);
        RndvHdr t{common(kFlagRget | kFlagPayloadCsum | kFlagDataCsum), match_fields(p, true),
                  1 << 20, 5, 0x1000};
        EXPECT_EQ(error_of(frame_of(t, p)), ErrorCode::BadLength) << n;
    }
}

TEST(PmlDrWire, RgetWithoutRemoteAddressRejected) {
    Samples s;
    RndvHdr r{common(kFlagRget | kFlagPayloadCsum), match_fields(s.payload, true), 1 << 20, 5, 0};
    EXPECT_EQ(error_of(frame_of(r, s.payload)), ErrorCode::BadField);
}

TEST(PmlDrWire, ChecksumFlagOnlyOnFramesWithPayload) {
    Samples s;
    auto c = s.cts;
    c.common.flags = kFlagPayloadCsum;
    EXPECT_EQ(error_of(frame_of(c)), ErrorCode::BadField);
    auto a = s.ack;
    a.common.flags = kFlagPayloadCsum;
    EXPECT_EQ(error_of(frame_of(a)), ErrorCode::BadField);
    auto cr = s.credit;
    cr.common.flags = kFlagPayloadCsum;
    EXPECT_EQ(error_of(frame_of(cr)), ErrorCode::BadField);
    auto n = s.nack;
    n.common.flags = kFlagPayloadCsum;
    EXPECT_EQ(error_of(frame_of(n)), ErrorCode::BadField);
}

TEST(PmlDrWire, StampAddsOnlyRetransmitAndAckNow) {
    Samples s;
    auto f = frame_of(s.cts);
    const auto before = f;
    for (const std::uint16_t bad : {std::uint16_t{kFlagSync}, std::uint16_t{kFlagRget},
                                    std::uint16_t{kFlagPayloadCsum}, std::uint16_t{0x4000}}) {
        EXPECT_EQ(stamp(f, 9, 1, bad).error().code, ErrorCode::BadField) << bad;
        EXPECT_EQ(f, before) << "a refused stamp wrote " << bad;
    }
    ASSERT_TRUE(stamp(f, 9, 1, kFlagRetransmit | kFlagAckNow).has_value());
    EXPECT_TRUE(decode(f).has_value());
}

TEST(PmlDrWire, CtsOffsetPastWantLenRejected) {
    Samples s;
    auto c = s.cts;
    c.want_len = 1000;
    c.offset = 1001;
    EXPECT_EQ(error_of(frame_of(c)), ErrorCode::BadField);
    c.offset = 0xFFFF'FFFF'FFFF'FFFFull;
    EXPECT_EQ(error_of(frame_of(c)), ErrorCode::BadField);
    c.offset = 1000;  // empty range: allowed
    EXPECT_TRUE(decode(frame_of(c)).has_value());
    // Tampered on the wire: offset field (bytes 36..43) past want_len.
    auto g = frame_of(s.cts);
    put_be64(std::span(g).subspan(kCommonHeaderSize + 16, 8), s.cts.want_len + 1);
    reseal(g);
    EXPECT_EQ(error_of(g), ErrorCode::BadField);
}

TEST(PmlDrWire, PayloadOnCtsAckOrCreditRejected) {
    Samples s;
    for (auto f : {frame_of(s.cts), frame_of(s.ack), frame_of(s.credit)}) {
        f.push_back(0x42);
        EXPECT_EQ(error_of(f), ErrorCode::BadLength) << "type " << int{f[1]};
        auto d = decode_header(std::span(f).first(f.size() - 1), 1);
        ASSERT_FALSE(d.has_value());
        EXPECT_EQ(d.error().code, ErrorCode::BadLength);
    }
}

// ---------------------------------------------------------------- garbage

// Re-encodes a decoded header: an accepted frame must be canonical, i.e.
// its header bytes are exactly what the encoder makes of the fields.
std::vector<std::uint8_t> reencode(const Header& h) {
    std::vector<std::uint8_t> out(kMaxHeaderSize);
    auto n = std::visit([&](const auto& x) { return encode(x, out); }, h);
    if (!n)
        return {};
    out.resize(*n);
    return out;
}

TEST(PmlDrWire, RandomGarbageNeverCrashesAndIsRejected) {
    std::mt19937_64 rng(0x5EED'0001);
    std::size_t accepted = 0;
    for (int i = 0; i < 100'000; ++i) {
        std::vector<std::uint8_t> buf(rng() % 160);
        for (auto& b : buf)
            b = static_cast<std::uint8_t>(rng());
        // Half of them look like our frames up front, so they reach the CRC.
        if (i % 2 == 0 && buf.size() >= 2) {
            buf[0] = kWireVersion;
            buf[1] = static_cast<std::uint8_t>(1 + rng() % 5);
        }
        if (decode(buf).has_value())
            ++accepted;
        (void)decode_header(buf, rng() % 4);
    }
    // 2^-32 per frame at best: none of 100k seeded buffers gets through.
    EXPECT_EQ(accepted, 0u);
}

TEST(PmlDrWire, ResealedMutantsAreValidatedAndCanonical) {
    // Mutated valid frames, re-sealed so they get past the CRC: the field
    // checks alone must decide, and whatever they accept must be canonical.
    Samples s;
    const auto frames = s.all_frames();
    std::mt19937_64 rng(0x5EED'0002);
    std::size_t accepted = 0;
    std::size_t rejected = 0;
    for (int i = 0; i < 50'000; ++i) {
        auto g = frames[rng() % frames.size()];
        const std::size_t hsize = header_size(static_cast<FrameType>(g[1]));
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = 2 + rng() % (hsize - 2);  // never the version/type bytes
            if (at >= 4 && at < 8)
                continue;  // the CRC itself
            g[at] = static_cast<std::uint8_t>(rng());
        }
        if (rng() % 4 == 0)
            g.resize(rng() % (g.size() + 8), 0);
        if (g.size() >= hsize)
            reseal(g, hsize);
        auto d = decode(g);
        if (!d) {
            ++rejected;
            continue;
        }
        ++accepted;
        const auto again = reencode(d->header);
        ASSERT_EQ(again.size(), hsize);
        ASSERT_TRUE(std::equal(again.begin(), again.end(), g.begin()))
            << "non-canonical header accepted";
    }
    // Both outcomes are exercised (random src/seq/cid edits stay valid).
    EXPECT_GT(accepted, 1000u);
    EXPECT_GT(rejected, 1000u);
}

}  // namespace

namespace {

TEST(PmlDrWire, AckCarriesItsTiming) {
    AckHdr h;
    h.common.type = FrameType::Ack;
    h.common.src_jobid = 7;
    h.common.ack_seq = 41;
    h.sack_base = 64;
    h.sack_mask = 0x5;
    h.ack_delay = 123;
    h.max_ack_delay = 200;
    h.released_total = 0x0102'0304'0506'0708ull;
    std::array<std::uint8_t, kAckHeaderSize> buf{};
    ASSERT_TRUE(encode(h, buf).has_value());
    // The two timing fields follow the selective part, then the credit
    // report, big-endian.
    EXPECT_EQ((std::vector<std::uint8_t>(buf.begin() + 36, buf.end())),
              (std::vector<std::uint8_t>{0, 0, 0, 123, 0, 0, 0, 200, 1, 2, 3, 4, 5, 6, 7, 8}));
    auto d = decode(buf);
    ASSERT_TRUE(d.has_value());
    const auto& a = std::get<AckHdr>(d->header);
    EXPECT_EQ(a.ack_delay, 123u);
    EXPECT_EQ(a.max_ack_delay, 200u);
    EXPECT_EQ(a.sack_mask, 0x5u);
    EXPECT_EQ(a.released_total, h.released_total);
}

TEST(PmlDrWire, ProbeRoundTripAndHostileProbes) {
    for (const bool reply : {false, true}) {
        ProbeHdr h;
        h.common.src_jobid = 7;
        h.common.src_vpid = 3;
        h.common.ack_seq = 9;
        h.probe_id = 0xA1B2C3D4u;
        h.reply = reply;
        std::array<std::uint8_t, kProbeHeaderSize> buf{};
        ASSERT_TRUE(encode(h, buf).has_value());
        EXPECT_EQ(buf[1], reply ? 10 : 9);
        auto d = decode(buf);
        ASSERT_TRUE(d.has_value());
        const auto& p = std::get<ProbeHdr>(d->header);
        EXPECT_EQ(p.probe_id, 0xA1B2C3D4u);
        EXPECT_EQ(p.reply, reply);
        EXPECT_EQ(common_of(d->header).ack_seq, 9u);
        // Every truncation fails cleanly.
        for (std::size_t n = 0; n < buf.size(); ++n)
            EXPECT_FALSE(decode(std::span(buf).first(n)).has_value()) << n;
        // Non-zero reserved field, id 0, a payload: refused even when resealed.
        auto bad = [&](auto&& mutate) {
            std::vector<std::uint8_t> g(buf.begin(), buf.end());
            mutate(g);
            put_be32(std::span(g).subspan(4, 4), 0);
            put_be32(std::span(g).subspan(4, 4), ref_crc32c(std::span(g).first(kProbeHeaderSize)));
            return decode(g).has_value();
        };
        EXPECT_FALSE(bad([](auto& g) { g[31] = 1; }));
        EXPECT_FALSE(bad([](auto& g) { std::fill(g.begin() + 24, g.begin() + 28, 0); }));
        EXPECT_FALSE(bad([](auto& g) { g.push_back(0); }));
        EXPECT_TRUE(bad([](auto&) {}));
    }
    // The encoder refuses what the decoder would.
    ProbeHdr zero;
    std::array<std::uint8_t, kProbeHeaderSize> buf{};
    EXPECT_FALSE(encode(zero, buf).has_value());
}

TEST(PmlDrWire, ByeRoundTripAndHostileByes) {
    ByeHdr h;
    h.common.src_jobid = 7;
    h.common.src_vpid = 3;
    h.common.ack_seq = 9;
    std::array<std::uint8_t, kByeHeaderSize> buf{};
    ASSERT_TRUE(encode(h, buf).has_value());
    EXPECT_EQ(buf[0], kWireVersion);
    EXPECT_EQ(buf[1], 11);
    auto d = decode(buf);
    ASSERT_TRUE(d.has_value());
    ASSERT_TRUE(std::holds_alternative<ByeHdr>(d->header));
    EXPECT_EQ(common_of(d->header).src_vpid, 3u);
    EXPECT_EQ(common_of(d->header).ack_seq, 9u);
    for (std::size_t n = 0; n < buf.size(); ++n)
        EXPECT_EQ(error_of(std::span(buf).first(n)), ErrorCode::Truncated) << n;
    // Each byte of the reserved field, a payload, a flipped bit: refused.
    auto resealed = [&](auto&& mutate) {
        std::vector<std::uint8_t> g(buf.begin(), buf.end());
        mutate(g);
        put_be32(std::span(g).subspan(4, 4), 0);
        put_be32(std::span(g).subspan(4, 4), ref_crc32c(std::span(g).first(kByeHeaderSize)));
        return g;
    };
    for (std::size_t at = kCommonHeaderSize; at < kByeHeaderSize; ++at)
        EXPECT_FALSE(decode(resealed([at](auto& g) { g[at] = 0x80; })).has_value()) << at;
    EXPECT_EQ(error_of(resealed([](auto& g) { g.push_back(0); })), ErrorCode::BadLength);
    EXPECT_TRUE(decode(resealed([](auto&) {})).has_value());
    auto flipped = std::vector<std::uint8_t>(buf.begin(), buf.end());
    flipped[20] ^= 1;
    EXPECT_FALSE(decode(flipped).has_value());
}

}  // namespace
