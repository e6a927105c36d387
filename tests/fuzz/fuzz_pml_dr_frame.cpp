// Fuzz target: pml dr frame decoders (decode, decode_into, decode_header,
// decode_header_into, decode_match) and stamp().
//
// Input: | ctrl (u8) | split (u8) | stamp_seq (u32) | frame... |
//   ctrl bit 0 (kRawHdrCrc):     leave hdr_crc as it is
//   ctrl bit 1 (kRawPayloadCrc): leave payload_crc as it is
//   ctrl bit 2 (kRawPayloadLen): leave payload_len as it is
//   ctrl bits 3-4: the flags stamp() adds (none, RETRANSMIT, ACK_NOW, both)
//   Without the raw bits the target fixes those fields up (payload_len to the
//   bytes present, payload_crc to the payload's CRC or, without the csum
//   flag, to zero, hdr_crc last), so mutated inputs get past the checksums
//   to the fields.
//   split: where decode_header's contiguous bytes end (header + split % ...).
//
// Properties: never crashes or reads out of bounds; errors are wire errors;
// decode and decode_into agree, and decode_header agrees with both except
// for the payload CRC, which it leaves to the caller; the header/payload
// boundary passed to decode_header does not change its verdict. A decoded
// frame keeps its documented promises (payload_len == bytes present, the
// payload CRC matches, known flags only, ...), re-encodes byte for byte to
// its header (the format is canonical), decodes back to the same fields,
// fails when cut short or extended by a byte, and survives stamp() with a
// new seq, ack_seq and the transmit-time flags. stamp() on arbitrary bytes
// either fails without touching them or writes only flags, hdr_crc,
// frame_seq and ack_seq.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "crc32c.hpp"
#include "fuzz_util.hpp"
#include "wire.hpp"

namespace {

using namespace pml::dr::core;
using plugin::common::crc32c;
using plugin::common::Error;
using plugin::common::ErrorCode;
using plugin::common::Result;

constexpr std::uint8_t kRawHdrCrc = 0x01;
constexpr std::uint8_t kRawPayloadCrc = 0x02;
constexpr std::uint8_t kRawPayloadLen = 0x04;

// Field offsets from the header diagrams in wire.hpp. MATCH, RNDV and FRAG
// all carry payload_len and payload_crc at the same place.
constexpr std::size_t kHdrCrcAt = 4;
constexpr std::size_t kPayloadLenAt = kCommonHeaderSize + 16;
constexpr std::size_t kPayloadCrcAt = kCommonHeaderSize + 20;

bool carries_payload(FrameType t) {
    return t == FrameType::Match || t == FrameType::Rndv || t == FrameType::Frag;
}

// The frame as the decoder sees it: the input with its checksums and
// payload length fixed up unless ctrl says otherwise.
std::vector<std::uint8_t> fix_up(std::span<const std::uint8_t> raw, std::uint8_t ctrl) {
    std::vector<std::uint8_t> f(raw.begin(), raw.end());
    if (f.size() < kCommonHeaderSize)
        return f;
    const auto type = static_cast<FrameType>(f[1]);
    const std::size_t hsize = header_size(type);
    if (hsize == 0 || f.size() < hsize)
        return f;
    const std::span<std::uint8_t> s(f);
    const auto payload = s.subspan(hsize);
    if (carries_payload(type)) {
        if ((ctrl & kRawPayloadLen) == 0)
            fuzz::put_be32(s.subspan(kPayloadLenAt), static_cast<std::uint32_t>(payload.size()));
        // The one valid value: the payload's CRC with the csum flag, else 0.
        const bool csum = (f[3] & kFlagPayloadCsum) != 0;  // low byte of flags
        if ((ctrl & kRawPayloadCrc) == 0)
            fuzz::put_be32(s.subspan(kPayloadCrcAt),
                           csum ? crc32c(payload.data(), payload.size()) : 0);
    }
    if ((ctrl & kRawHdrCrc) == 0) {
        fuzz::put_be32(s.subspan(kHdrCrcAt), 0);
        fuzz::put_be32(s.subspan(kHdrCrcAt), crc32c(f.data(), hsize));
    }
    return f;
}

bool same(const Common& a, const Common& b) {
    return a.type == b.type && a.flags == b.flags && a.src_jobid == b.src_jobid &&
           a.src_vpid == b.src_vpid && a.frame_seq == b.frame_seq && a.ack_seq == b.ack_seq;
}
bool same(const MatchFields& a, const MatchFields& b) {
    return a.cid == b.cid && a.src_rank == b.src_rank && a.tag == b.tag && a.msg_seq == b.msg_seq &&
           a.payload_len == b.payload_len && a.payload_crc == b.payload_crc;
}

// Field by field: decode(encode(x)) == x must not lean on the encoding.
bool same(const Header& x, const Header& y) {
    if (x.index() != y.index() || !same(common_of(x), common_of(y)))
        return false;
    if (const auto* a = std::get_if<MatchHdr>(&x)) {
        return same(a->match, std::get_if<MatchHdr>(&y)->match);
    }
    if (const auto* a = std::get_if<RndvHdr>(&x)) {
        const auto* b = std::get_if<RndvHdr>(&y);
        return same(a->match, b->match) && a->msg_len == b->msg_len && a->send_req == b->send_req &&
               a->remote_addr == b->remote_addr;
    }
    if (const auto* a = std::get_if<CtsHdr>(&x)) {
        const auto* b = std::get_if<CtsHdr>(&y);
        return a->send_req == b->send_req && a->recv_req == b->recv_req && a->offset == b->offset &&
               a->want_len == b->want_len;
    }
    if (const auto* a = std::get_if<FragHdr>(&x)) {
        const auto* b = std::get_if<FragHdr>(&y);
        return a->recv_req == b->recv_req && a->offset == b->offset &&
               a->payload_len == b->payload_len && a->payload_crc == b->payload_crc;
    }
    if (const auto* a = std::get_if<AckHdr>(&x)) {
        const auto* b = std::get_if<AckHdr>(&y);
        return a->sack_base == b->sack_base && a->sack_mask == b->sack_mask &&
               a->ack_delay == b->ack_delay && a->max_ack_delay == b->max_ack_delay &&
               a->released_total == b->released_total;
    }
    if (const auto* a = std::get_if<ProbeHdr>(&x)) {
        const auto* b = std::get_if<ProbeHdr>(&y);
        return a->probe_id == b->probe_id && a->reply == b->reply;
    }
    if (const auto* a = std::get_if<CreditHdr>(&x))
        return a->released_total == std::get_if<CreditHdr>(&y)->released_total;
    if (const auto* a = std::get_if<NackHdr>(&x))
        return a->seq == std::get_if<NackHdr>(&y)->seq;
    if (const auto* a = std::get_if<PutHdr>(&x)) {
        const auto* b = std::get_if<PutHdr>(&y);
        return a->send_req == b->send_req && a->recv_req == b->recv_req && a->offset == b->offset &&
               a->want_len == b->want_len && a->remote_addr == b->remote_addr;
    }
    if (std::holds_alternative<ByeHdr>(x))
        return true;  // the common header is all there is
    return false;
}

bool same(const pml::dr::core::Decoded& a, const pml::dr::core::Decoded& b) {
    return same(a.header, b.header) && a.payload.data() == b.payload.data() &&
           a.payload.size() == b.payload.size();
}

Common& mutable_common(Header& h) {
    return std::visit([](auto& x) -> Common& { return x.common; }, h);
}

Result<std::size_t> encode_any(const Header& h, std::span<std::uint8_t> out) {
    return std::visit([&](const auto& x) { return encode(x, out); }, h);
}

// The type each alternative of Header stands for.
FrameType type_of_alternative(const Header& h) {
    if (const auto* p = std::get_if<ProbeHdr>(&h))
        return p->reply ? FrameType::ProbeAck : FrameType::Probe;
    constexpr std::array<FrameType, std::variant_size_v<Header>> kTypes = {
        FrameType::Match,  FrameType::Rndv, FrameType::Cts, FrameType::Frag,  FrameType::Ack,
        FrameType::Credit, FrameType::Nack, FrameType::Put, FrameType::Probe, FrameType::Bye};
    return kTypes[h.index()];
}

bool same_outcome(const Result<void>& a, const Result<void>& b) {
    if (a.has_value() != b.has_value())
        return false;
    return a.has_value() || a.error().code == b.error().code;
}

void check_wire_error(const Error& e, const char* what) {
    fuzz::check(fuzz::is_wire_error(e.code), what);
}

// The documented promises of a decoded frame.
void check_promises(const pml::dr::core::Decoded& d, std::span<const std::uint8_t> frame,
                    std::size_t payload_total) {
    const Common& c = common_of(d.header);
    const std::size_t hsize = header_size(c.type);
    fuzz::check(hsize != 0 && frame.size() >= hsize, "decoded an unknown or short header");
    fuzz::check(frame[0] == kWireVersion, "decoded a frame of another version");
    fuzz::check(frame[1] == static_cast<std::uint8_t>(c.type), "type differs from the type byte");
    fuzz::check(type_of_alternative(d.header) == c.type, "header alternative differs from type");
    fuzz::check(
        d.payload.data() == frame.data() + hsize && d.payload.size() == frame.size() - hsize,
        "payload is not the bytes after the header");
    fuzz::check((c.flags & ~kKnownFlags) == 0, "unknown flag bits accepted");
    fuzz::check((c.flags & kRndvOnlyFlags) == 0 || c.type == FrameType::Rndv,
                "RNDV-only flag accepted on another type");
    std::uint32_t pcrc = 0;
    const bool has_crc = payload_crc_of(d, pcrc);
    const bool put_done = (c.flags & kFlagPutDone) != 0;
    fuzz::check(
        has_crc == (carries_payload(c.type) && (c.flags & kFlagPayloadCsum) != 0 && !put_done),
        "payload_crc_of disagrees with the csum flag");
    if (const auto* m = std::get_if<MatchHdr>(&d.header)) {
        fuzz::check(m->match.payload_len == payload_total, "MATCH payload_len != bytes present");
        fuzz::check(has_crc || m->match.payload_crc == 0, "MATCH payload_crc without csum flag");
    } else if (const auto* r = std::get_if<RndvHdr>(&d.header)) {
        fuzz::check(r->match.payload_len == payload_total, "RNDV payload_len != bytes present");
        fuzz::check(has_crc || r->match.payload_crc == 0, "RNDV payload_crc without csum flag");
        if ((c.flags & kFlagRget) != 0) {
            fuzz::check(has_crc, "RGET handle without payload checksum");
        } else {
            fuzz::check(r->remote_addr == 0, "remote_addr without RGET");
            fuzz::check(r->msg_len >= r->match.payload_len, "RNDV payload longer than message");
        }
    } else if (const auto* f = std::get_if<FragHdr>(&d.header)) {
        fuzz::check(f->payload_len == payload_total, "FRAG payload_len != bytes present");
        fuzz::check((c.flags & kFlagPayloadCsum) != 0 || f->payload_crc == 0,
                    "FRAG payload_crc without csum flag");
        fuzz::check(!put_done || (payload_total == 0 && !has_crc),
                    "PUT-done FRAG with a payload, or its data CRC taken for a payload CRC");
    } else {
        fuzz::check(payload_total == 0, "a frame type without payload carries one");
        if (const auto* t = std::get_if<CtsHdr>(&d.header))
            fuzz::check(t->offset <= t->want_len, "CTS offset past want_len");
        if (const auto* p = std::get_if<PutHdr>(&d.header))
            fuzz::check(p->offset <= p->want_len && p->remote_addr != 0,
                        "PUT offset past want_len or without an address");
    }
    fuzz::check((c.flags & kFlagPutDone) == 0 || c.type == FrameType::Frag,
                "PUT-done flag accepted on a type other than FRAG");
    fuzz::check((c.flags & kFlagDataCsum) == 0 ||
                    ((c.flags & kFlagRget) != 0 && payload_total >= kDataCsumSize),
                "data checksum flag accepted without RGET or without room for the CRC");
}

// A frame that decode() accepted.
void check_accepted(const pml::dr::core::Decoded& d, std::span<const std::uint8_t> frame,
                    std::uint32_t stamp_seq, std::uint16_t stamp_flags) {
    check_promises(d, frame, frame.size() - header_size(common_of(d.header).type));
    const std::size_t hsize = header_size(common_of(d.header).type);
    std::uint32_t pcrc = 0;
    if (payload_crc_of(d, pcrc))
        fuzz::check(crc32c(d.payload.data(), d.payload.size()) == pcrc,
                    "accepted a payload whose CRC does not match");

    // Canonical: the header re-encodes to exactly its bytes ...
    std::vector<std::uint8_t> again(kMaxHeaderSize);
    const auto n = encode_any(d.header, again);
    fuzz::check(n.has_value() && *n == hsize, "encode(decoded header) failed or has another size");
    again.resize(hsize);
    fuzz::check(std::equal(again.begin(), again.end(), frame.begin()),
                "decoded header does not re-encode to the same bytes");
    // ... which decode back to the same fields.
    const auto back = decode_header(again, d.payload.size());
    fuzz::check(back.has_value() && same(back->header, d.header), "decode(encode(header)) differs");

    // Cut short or one byte longer, the frame is refused.
    const std::size_t step = frame.size() <= 256 ? 1 : frame.size() / 97 + 1;
    for (std::size_t k = 0; k < frame.size(); k += step) {
        const auto t = decode(frame.first(k));
        fuzz::check(!t, "accepted a truncated frame");
        check_wire_error(t.error(), "decode(truncated): not a wire error code");
    }
    fuzz::check(!decode(frame.first(frame.size() - 1)), "accepted a frame one byte short");
    std::vector<std::uint8_t> longer(frame.begin(), frame.end());
    longer.push_back(0);
    fuzz::check(!decode(longer), "accepted a frame with a stray byte");

    // stamp(): new seq, ack_seq and transmit-time flags, everything else as it was.
    std::vector<std::uint8_t> stamped(frame.begin(), frame.end());
    const std::uint32_t stamp_ack = ~stamp_seq;
    const auto st = stamp(stamped, stamp_seq, stamp_ack, stamp_flags);
    fuzz::check(st.has_value(), "stamp() failed on an accepted frame");
    const auto sd = decode(stamped);
    fuzz::check(sd.has_value(), "a stamped frame is refused");
    Header expect = d.header;
    mutable_common(expect).frame_seq = stamp_seq;
    mutable_common(expect).ack_seq = stamp_ack;
    mutable_common(expect).flags =
        static_cast<std::uint16_t>(mutable_common(expect).flags | stamp_flags);
    fuzz::check(same(sd->header, expect), "stamp() changed more than seq, ack_seq and flags");
    fuzz::check(ack_seq_of(stamped) == stamp_ack, "ack_seq_of() disagrees with decode");
}

// stamp() on arbitrary bytes: fails without writing, or writes only the
// flags, hdr_crc, frame_seq and ack_seq fields of the type's header.
void check_stamp_raw(std::span<const std::uint8_t> frame, std::uint32_t seq, std::uint16_t flags) {
    std::vector<std::uint8_t> s(frame.begin(), frame.end());
    const auto r = stamp(s, seq, seq ^ 0x5A5A5A5Au, flags);
    for (std::size_t i = 0; i < s.size(); ++i) {
        const bool writable = i == 2 || i == 3 || (i >= 4 && i < 8) ||
                              (i >= kCommonHeaderSize - 8 && i < kCommonHeaderSize);
        if (!r.has_value() || !writable)
            fuzz::check(s[i] == frame[i], "stamp() wrote outside its fields or after failing");
    }
    if (!r)
        check_wire_error(r.error(), "stamp(): not a wire error code");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint8_t ctrl = in.u8();
    const std::uint8_t split = in.u8();
    const std::uint32_t stamp_seq = in.u32();
    const std::vector<std::uint8_t> owned = fix_up(in.rest(), ctrl);
    const std::span<const std::uint8_t> frame(owned);
    constexpr std::array<std::uint16_t, 4> kStampFlags = {0, kFlagRetransmit, kFlagAckNow,
                                                          kFlagRetransmit | kFlagAckNow};
    const std::uint16_t stamp_flags = kStampFlags[(ctrl >> 3) & 3];

    const auto whole = decode(frame);
    if (!whole)
        check_wire_error(whole.error(), "decode: not a wire error code");

    // decode_into agrees with decode, whatever the Decoded held before.
    pml::dr::core::Decoded into;
    into.header = NackHdr{};
    into.payload = frame;
    const auto into_r = decode_into(frame, into);
    fuzz::check(whole.has_value() == into_r.has_value(), "decode and decode_into disagree");
    if (whole)
        fuzz::check(same(*whole, into), "decode and decode_into decode differently");
    else
        fuzz::check(whole.error().code == into_r.error().code, "decode_into fails differently");

    // decode_header: the same verdict except for the payload CRC.
    const auto hdr = decode_header(frame, 0);
    if (whole) {
        fuzz::check(hdr.has_value() && same(*hdr, *whole), "decode_header disagrees with decode");
    } else if (hdr) {
        std::uint32_t pcrc = 0;
        fuzz::check(whole.error().code == ErrorCode::BadChecksum && payload_crc_of(*hdr, pcrc) &&
                        crc32c(hdr->payload.data(), hdr->payload.size()) != pcrc,
                    "decode refused what decode_header accepts, not for the payload CRC");
    } else {
        fuzz::check(hdr.error().code == whole.error().code, "decode_header fails differently");
    }
    if (hdr) {
        check_promises(*hdr, frame, hdr->payload.size());
        pml::dr::core::Decoded hinto;
        hinto.header = CtsHdr{};
        const auto hinto_r = decode_header_into(frame, 0, hinto);
        fuzz::check(hinto_r.has_value() && same(hinto, *hdr),
                    "decode_header and decode_header_into disagree");
    }

    // The receive fast path's decoder takes exactly the MATCH frames
    // decode_header accepts, and reads them the same.
    MatchHdr fast;
    const bool fast_ok = decode_match(frame, fast);
    const bool is_match = hdr && std::holds_alternative<MatchHdr>(hdr->header);
    fuzz::check(fast_ok == is_match, "decode_match and decode_header disagree on a frame");
    if (fast_ok)
        fuzz::check(same(Header{fast}, hdr->header), "decode_match reads fields differently");

    // Where the header's contiguous bytes end does not matter (scatter/gather).
    const std::size_t hsize = frame.size() >= 2 ? header_size(static_cast<FrameType>(frame[1])) : 0;
    if (hsize != 0 && frame.size() >= hsize) {
        const std::size_t cut = hsize + split % (frame.size() - hsize + 1);
        const auto part = decode_header(frame.first(cut), frame.size() - cut);
        Result<void> part_r;
        if (!part)
            part_r = plugin::common::fail(part.error());
        Result<void> hdr_r;
        if (!hdr)
            hdr_r = plugin::common::fail(hdr.error());
        fuzz::check(same_outcome(part_r, hdr_r), "decode_header verdict depends on the split");
        if (part && hdr) {
            fuzz::check(same(part->header, hdr->header), "decode_header header depends on split");
            fuzz::check(
                part->payload.data() == frame.data() + hsize && part->payload.size() == cut - hsize,
                "decode_header payload is not the contiguous bytes after the header");
        }
        const auto shortp = decode_header(frame.first(hsize - 1), frame.size() - hsize + 1);
        fuzz::check(!shortp, "decode_header accepted a header cut short");
        check_wire_error(shortp.error(), "decode_header(short): not a wire error code");
    }

    if (whole)
        check_accepted(*whole, frame, stamp_seq, stamp_flags);
    check_stamp_raw(frame, stamp_seq, static_cast<std::uint16_t>(stamp_seq >> 16));
    return 0;
}
