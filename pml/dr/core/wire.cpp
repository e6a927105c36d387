#include "wire.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "crc32c.hpp"
#include "crc32c_fixed.hpp"
#include "wire_io.hpp"

namespace pml::dr::core {

using plugin::common::crc32c;
using plugin::common::Error;
using plugin::common::ErrorCode;
using plugin::common::fail;
using plugin::common::load_be;
using plugin::common::store_be;

namespace {

constexpr std::size_t kCrcOffset = 4;

std::string_view type_names[] = {"invalid", "MATCH", "RNDV", "CTS",   "FRAG",      "ACK",
                                 "CREDIT",  "NACK",  "PUT",  "PROBE", "PROBE_ACK", "BYE"};

// Every header has a fixed size per type, checked once before any field is
// touched; fields are then one load or store each at their offset (big-endian,
// through memcpy: no struct is cast onto bytes). The writer and reader only
// advance a cursor that the compiler folds into constants.
class FixedWriter {
  public:
    explicit FixedWriter(std::uint8_t* p) noexcept : p_(p) {}
    // Fields are gathered into 64-bit words that are stored whole: the
    // header CRC then reads back exactly what was stored (an 8-byte load of
    // bytes written by narrower stores waits for them to reach the cache).
    // Everything here folds into constants once inlined, which is forced:
    // LTO at -O3 otherwise makes put() a call per field, the cursor in memory.
    template <std::unsigned_integral T>
    [[gnu::always_inline]] void put(T v) noexcept {
        v = plugin::common::to_big_endian(v);
        if constexpr (std::endian::native != std::endian::little) {
            std::memcpy(p_ + at_, &v, sizeof v);  // fill_ stays 0
            at_ += sizeof v;
        } else {
            const std::uint64_t bytes = v;  // memory order = little-endian value order
            const std::size_t room = 8 - fill_;
            acc_ |= bytes << (8 * fill_);
            if (sizeof v < room) {
                fill_ += sizeof v;
                return;
            }
            store_word();
            acc_ = sizeof v > room ? bytes >> (8 * room) : 0;
            fill_ = sizeof v - room;
        }
    }
    // Stores what is left of the last word; returns the size written.
    [[gnu::always_inline]] std::size_t finish() noexcept {
        if constexpr (std::endian::native == std::endian::little)
            if (fill_ > 0)
                std::memcpy(p_ + at_, &acc_, fill_);
        return at_ + fill_;
    }

  private:
    [[gnu::always_inline]] void store_word() noexcept {
        std::memcpy(p_ + at_, &acc_, 8);
        at_ += 8;
    }

    std::uint8_t* p_;
    std::size_t at_ = 0;    // bytes stored as whole words
    std::size_t fill_ = 0;  // bytes gathered in acc_ (< 8)
    std::uint64_t acc_ = 0;
};

class FixedReader {
  public:
    explicit FixedReader(const std::uint8_t* p) noexcept : p_(p) {}
    template <std::unsigned_integral T>
    [[gnu::always_inline]] T get() noexcept {
        const T v = load_be<T>(p_ + at_);
        at_ += sizeof v;
        return v;
    }
    [[gnu::always_inline]] std::uint32_t u32() noexcept { return get<std::uint32_t>(); }
    [[gnu::always_inline]] std::uint64_t u64() noexcept { return get<std::uint64_t>(); }

  private:
    const std::uint8_t* p_;
    std::size_t at_ = 0;
};

// Always inlined: the writer then lives in registers.
[[gnu::always_inline]] inline void put_common(FixedWriter& w, const Common& c,
                                              FrameType type) noexcept {
    w.put(kWireVersion);
    w.put(static_cast<std::uint8_t>(type));
    w.put(c.flags);
    w.put(std::uint32_t{0});  // hdr_crc, sealed last
    w.put(c.src_jobid);
    w.put(c.src_vpid);
    w.put(c.frame_seq);
    w.put(c.ack_seq);
}

[[gnu::always_inline]] inline void put_match(FixedWriter& w, const MatchFields& m) noexcept {
    w.put(m.cid);
    w.put(static_cast<std::uint32_t>(m.src_rank));
    w.put(static_cast<std::uint32_t>(m.tag));
    w.put(m.msg_seq);
    w.put(std::uint16_t{0});
    w.put(m.payload_len);
    w.put(m.payload_crc);
}

// The header CRC covers every header byte with the CRC field as zero,
// computed in place (unrolled for each type's fixed size).
template <std::size_t N>
std::uint32_t header_crc(const std::uint8_t* hdr) noexcept {
    return plugin::common::crc32c_header_fixed<N, kCrcOffset>(hdr);
}
std::uint32_t header_crc(FrameType type, const std::uint8_t* hdr) noexcept {
    switch (type) {
        case FrameType::Match:
            return header_crc<kMatchHeaderSize>(hdr);
        case FrameType::Rndv:
            return header_crc<kRndvHeaderSize>(hdr);
        case FrameType::Cts:
            return header_crc<kCtsHeaderSize>(hdr);
        case FrameType::Frag:
            return header_crc<kFragHeaderSize>(hdr);
        case FrameType::Ack:
            return header_crc<kAckHeaderSize>(hdr);
        case FrameType::Credit:
            return header_crc<kCreditHeaderSize>(hdr);
        case FrameType::Nack:
            return header_crc<kNackHeaderSize>(hdr);
        case FrameType::Put:
            return header_crc<kPutHeaderSize>(hdr);
        case FrameType::Probe:
        case FrameType::ProbeAck:
            return header_crc<kProbeHeaderSize>(hdr);
        case FrameType::Bye:
            return header_crc<kByeHeaderSize>(hdr);
    }
    return 0;  // unreachable: callers checked header_size(type) != 0
}

// Encodes header type T of size N into out: the fields, then the CRC.
template <std::size_t N, typename Fill>
[[gnu::always_inline]] inline Result<std::size_t> encode_fixed(std::span<std::uint8_t> out,
                                                               Fill&& fill) noexcept {
    if (out.size() < N)
        return fail(ErrorCode::NoSpace, "encode buffer too small");
    FixedWriter w(out.data());
    fill(w);
    const std::size_t n = w.finish();
    store_be(out.data() + kCrcOffset, header_crc<N>(out.data()));
    return n;
}

}  // namespace

Result<void> stamp(std::span<std::uint8_t> header, std::uint32_t frame_seq, std::uint32_t ack_seq,
                   std::uint16_t add_flags) noexcept {
    if (header.size() < kCommonHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than common header");
    const std::size_t hsize = header_size(static_cast<FrameType>(header[1]));
    if (hsize == 0)
        return fail(ErrorCode::BadType, "unknown frame type");
    if (header.size() < hsize)
        return fail(ErrorCode::Truncated, "shorter than its type's header");
    if ((add_flags & ~(kFlagRetransmit | kFlagAckNow)) != 0)
        return fail(ErrorCode::BadField, "stamp adds only Retransmit and AckNow");
    const auto flags = static_cast<std::uint16_t>(((header[2] << 8) | header[3]) | add_flags);
    header[2] = static_cast<std::uint8_t>(flags >> 8);
    header[3] = static_cast<std::uint8_t>(flags);
    store_be(header.data() + kCommonHeaderSize - 8, frame_seq);
    store_be(header.data() + kCommonHeaderSize - 4, ack_seq);
    store_be(header.data() + kCrcOffset,
             header_crc(static_cast<FrameType>(header[1]), header.data()));
    return {};
}

std::uint32_t ack_seq_of(std::span<const std::uint8_t> header) noexcept {
    if (header.size() < kCommonHeaderSize)
        return 0;
    std::uint32_t v = 0;
    std::memcpy(&v, header.data() + kCommonHeaderSize - 4, sizeof v);
    return plugin::common::to_big_endian(v);
}

bool decode_match(std::span<const std::uint8_t> frame, MatchHdr& out) noexcept {
    // The checks of decode_header_into() for this one type, in one pass.
    constexpr std::uint16_t kMatchFlags =
        kFlagPayloadCsum | kFlagRetransmit | kFlagAckNow | kFlagCreditStarved;
    if (frame.size() < kMatchHeaderSize || frame[0] != kWireVersion ||
        frame[1] != static_cast<std::uint8_t>(FrameType::Match))
        return false;
    const auto hdr = frame.first(kMatchHeaderSize);
    FixedReader r(hdr.data());
    (void)r.get<std::uint16_t>();  // version, type
    Common& c = out.common;
    c.type = FrameType::Match;
    c.flags = r.get<std::uint16_t>();
    if (r.u32() != header_crc<kMatchHeaderSize>(hdr.data()) || (c.flags & ~kMatchFlags) != 0)
        return false;
    c.src_jobid = r.u32();
    c.src_vpid = r.u32();
    c.frame_seq = r.u32();
    c.ack_seq = r.u32();
    MatchFields& m = out.match;
    m.cid = r.u32();
    m.src_rank = static_cast<std::int32_t>(r.u32());
    m.tag = static_cast<std::int32_t>(r.u32());
    m.msg_seq = r.get<std::uint16_t>();
    const auto reserved = r.get<std::uint16_t>();
    m.payload_len = r.u32();
    m.payload_crc = r.u32();
    return reserved == 0 && m.payload_len == frame.size() - kMatchHeaderSize &&
           ((c.flags & kFlagPayloadCsum) != 0 || m.payload_crc == 0);
}

namespace {

// reserved_ok: false when the reserved u16 is not zero.
[[gnu::always_inline]] inline MatchFields get_match(FixedReader& r, bool& reserved_ok) noexcept {
    MatchFields m;
    m.cid = r.u32();
    m.src_rank = static_cast<std::int32_t>(r.u32());
    m.tag = static_cast<std::int32_t>(r.u32());
    m.msg_seq = r.get<std::uint16_t>();
    reserved_ok = r.get<std::uint16_t>() == 0;
    m.payload_len = r.u32();
    m.payload_crc = r.u32();
    return m;
}

}  // namespace

std::string_view to_string(FrameType t) noexcept {
    const auto i = static_cast<std::size_t>(t);
    return i < std::size(type_names) ? type_names[i] : "unknown";
}

std::size_t header_size(FrameType t) noexcept {
    switch (t) {
        case FrameType::Match:
            return kMatchHeaderSize;
        case FrameType::Rndv:
            return kRndvHeaderSize;
        case FrameType::Cts:
            return kCtsHeaderSize;
        case FrameType::Frag:
            return kFragHeaderSize;
        case FrameType::Ack:
            return kAckHeaderSize;
        case FrameType::Credit:
            return kCreditHeaderSize;
        case FrameType::Nack:
            return kNackHeaderSize;
        case FrameType::Put:
            return kPutHeaderSize;
        case FrameType::Probe:
        case FrameType::ProbeAck:
            return kProbeHeaderSize;
        case FrameType::Bye:
            return kByeHeaderSize;
    }
    return 0;
}

Result<std::size_t> encode(const MatchHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kMatchHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Match);
        put_match(w, h.match);
    });
}

Result<std::size_t> encode(const RndvHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kRndvHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Rndv);
        put_match(w, h.match);
        w.put(h.msg_len);
        w.put(h.send_req);
        w.put(h.remote_addr);
    });
}

Result<std::size_t> encode(const CtsHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kCtsHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Cts);
        w.put(h.send_req);
        w.put(h.recv_req);
        w.put(h.offset);
        w.put(h.want_len);
    });
}

Result<std::size_t> encode(const FragHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kFragHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Frag);
        w.put(h.recv_req);
        w.put(h.offset);
        w.put(h.payload_len);
        w.put(h.payload_crc);
    });
}

Result<std::size_t> encode(const AckHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kAckHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Ack);
        w.put(h.sack_base);
        w.put(h.sack_mask);
        w.put(h.ack_delay);
        w.put(h.max_ack_delay);
        w.put(h.released_total);
    });
}

Result<std::size_t> encode(const CreditHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kCreditHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Credit);
        w.put(h.released_total);
    });
}

Result<std::size_t> encode(const PutHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kPutHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Put);
        w.put(h.send_req);
        w.put(h.recv_req);
        w.put(h.offset);
        w.put(h.want_len);
        w.put(h.remote_addr);
    });
}

Result<std::size_t> encode(const ProbeHdr& h, std::span<std::uint8_t> out) noexcept {
    if (h.probe_id == 0)
        return fail(ErrorCode::BadField, "PROBE needs an id");
    return encode_fixed<kProbeHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, h.reply ? FrameType::ProbeAck : FrameType::Probe);
        w.put(h.probe_id);
        w.put(std::uint32_t{0});
    });
}

Result<std::size_t> encode(const ByeHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kByeHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Bye);
        w.put(std::uint64_t{0});
    });
}

Result<std::size_t> encode(const NackHdr& h, std::span<std::uint8_t> out) noexcept {
    return encode_fixed<kNackHeaderSize>(out, [&](FixedWriter& w) {
        put_common(w, h.common, FrameType::Nack);
        w.put(h.seq);
        w.put(std::uint32_t{0});
    });
}

// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
namespace {

// What a type's decoder checks besides its own fields: the common header,
// the payload bytes present, and the first problem it found.
struct TypeCheck {
    const Common& c;
    std::size_t payload;  // bytes after the header
    bool reserved_ok = true;
    bool rejected = false;
    Error bad;

    void reject(const Error& e) noexcept {
        if (!rejected)
            bad = e;
        rejected = true;
    }
    // payload_len must be the bytes present; payload_crc zero without the flag.
    bool payload_len_ok(std::uint32_t declared, std::uint32_t pcrc) noexcept {
        if (declared != payload) {
            reject(Error(ErrorCode::BadLength, "payload_len disagrees with frame length"));
            return false;
        }
        if ((c.flags & kFlagPayloadCsum) == 0 && pcrc != 0) {
            reject(Error(ErrorCode::BadField, "payload_crc set without csum flag"));
            return false;
        }
        return true;
    }
};

// One decoder per frame type: reads the type's fields after the common
// header and records what is wrong with them (kDecoders, by type byte).
using TypeDecoder = void (*)(FixedReader& r, TypeCheck& t, Header& out);

void decode_match_fields(FixedReader& r, TypeCheck& t, Header& out) {
    MatchHdr h{t.c, get_match(r, t.reserved_ok)};
    t.payload_len_ok(h.match.payload_len, h.match.payload_crc);
    out = h;
}

void decode_rndv_fields(FixedReader& r, TypeCheck& t, Header& out) {
    RndvHdr h{t.c, get_match(r, t.reserved_ok), 0, 0, 0};
    h.msg_len = r.u64();
    h.send_req = r.u64();
    h.remote_addr = r.u64();
    out = h;
    if (!t.payload_len_ok(h.match.payload_len, h.match.payload_crc))
        return;
    const std::uint16_t flags = t.c.flags;
    const bool rget = (flags & kFlagRget) != 0;
    const bool data_csum = (flags & kFlagDataCsum) != 0;
    if (rget && (flags & kFlagPayloadCsum) == 0)
        t.reject(Error(ErrorCode::BadField, "RGET handle without payload checksum"));
    else if (data_csum && !rget)
        t.reject(Error(ErrorCode::BadField, "data checksum flag without RGET"));
    else if (data_csum && h.match.payload_len < kDataCsumSize)
        t.reject(Error(ErrorCode::BadLength, "RGET payload too short for its data checksum"));
    else if (rget && h.remote_addr == 0)
        t.reject(Error(ErrorCode::BadField, "RGET without a remote address"));
    else if (!rget && h.remote_addr != 0)
        t.reject(Error(ErrorCode::BadField, "remote_addr set without RGET flag"));
    else if (!rget && h.msg_len < h.match.payload_len)
        t.reject(Error(ErrorCode::BadLength, "RNDV payload longer than the message"));
}

void decode_cts_fields(FixedReader& r, TypeCheck& t, Header& out) {
    CtsHdr h{t.c, 0, 0, 0, 0};
    h.send_req = r.u64();
    h.recv_req = r.u64();
    h.offset = r.u64();
    h.want_len = r.u64();
    if (t.payload != 0)
        t.reject(Error(ErrorCode::BadLength, "CTS carries no payload"));
    if (h.offset > h.want_len)
        t.reject(Error(ErrorCode::BadField, "CTS offset past want_len"));
    out = h;
}

void decode_frag_fields(FixedReader& r, TypeCheck& t, Header& out) {
    FragHdr h{t.c, 0, 0, 0, 0};
    h.recv_req = r.u64();
    h.offset = r.u64();
    h.payload_len = r.u32();
    h.payload_crc = r.u32();
    if (t.payload_len_ok(h.payload_len, h.payload_crc) && (t.c.flags & kFlagPutDone) != 0 &&
        t.payload != 0)
        t.reject(Error(ErrorCode::BadField, "PUT-done FRAG with a payload"));
    out = h;
}

void decode_put_fields(FixedReader& r, TypeCheck& t, Header& out) {
    PutHdr h{t.c, 0, 0, 0, 0, 0};
    h.send_req = r.u64();
    h.recv_req = r.u64();
    h.offset = r.u64();
    h.want_len = r.u64();
    h.remote_addr = r.u64();
    if (t.payload != 0)
        t.reject(Error(ErrorCode::BadLength, "PUT carries no payload"));
    if (h.offset > h.want_len)
        t.reject(Error(ErrorCode::BadField, "PUT offset past want_len"));
    if (h.remote_addr == 0)
        t.reject(Error(ErrorCode::BadField, "PUT without a remote address"));
    out = h;
}

void decode_ack_fields(FixedReader& r, TypeCheck& t, Header& out) {
    AckHdr h{t.c, 0, 0};
    h.sack_base = r.u32();
    h.sack_mask = r.u64();
    h.ack_delay = r.u32();
    h.max_ack_delay = r.u32();
    h.released_total = r.u64();
    out = h;
    if (t.payload != 0)
        t.reject(Error(ErrorCode::BadLength, "ACK carries no payload"));
}

void decode_credit_fields(FixedReader& r, TypeCheck& t, Header& out) {
    out = CreditHdr{t.c, r.u64()};
    if (t.payload != 0)
        t.reject(Error(ErrorCode::BadLength, "CREDIT carries no payload"));
}

void decode_probe_fields(FixedReader& r, TypeCheck& t, Header& out) {
    const ProbeHdr h{t.c, r.u32(), t.c.type == FrameType::ProbeAck};
    t.reserved_ok = r.u32() == 0;
    out = h;
    if (t.payload != 0)
        t.reject(Error(ErrorCode::BadLength, "PROBE carries no payload"));
    else if (h.probe_id == 0)
        t.reject(Error(ErrorCode::BadField, "PROBE without an id"));
}

void decode_bye_fields(FixedReader& r, TypeCheck& t, Header& out) {
    t.reserved_ok = r.u64() == 0;
    out = ByeHdr{t.c};
    if (t.payload != 0)
        t.reject(Error(ErrorCode::BadLength, "BYE carries no payload"));
}

void decode_nack_fields(FixedReader& r, TypeCheck& t, Header& out) {
    const NackHdr h{t.c, r.u32()};
    t.reserved_ok = r.u32() == 0;
    out = h;
    if (t.payload != 0)
        t.reject(Error(ErrorCode::BadLength, "NACK carries no payload"));
}

// By type byte; header_size() != 0 exactly where an entry is set.
constexpr std::array<TypeDecoder, 12> kDecoders = {
    nullptr,
    decode_match_fields,
    decode_rndv_fields,
    decode_cts_fields,
    decode_frag_fields,
    decode_ack_fields,
    decode_credit_fields,
    decode_nack_fields,
    decode_put_fields,
    decode_probe_fields,
    decode_probe_fields,
    decode_bye_fields,
};
static_assert(static_cast<std::size_t>(FrameType::Bye) + 1 == kDecoders.size());

}  // namespace

Result<void> decode_header_into(std::span<const std::uint8_t> bytes, std::size_t payload_bytes,
                                Decoded& d) noexcept {
    // Only the type byte is looked at before the CRC: it says how many bytes
    // the CRC covers. Everything else is believed only once the CRC matches.
    if (bytes.size() < kCommonHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than common header");
    const auto type = static_cast<FrameType>(bytes[1]);
    const std::size_t hsize = header_size(type);
    if (hsize == 0)
        return fail(ErrorCode::BadType, "unknown frame type");
    if (bytes.size() < hsize)
        return fail(ErrorCode::Truncated, "shorter than its type's header");
    const auto hdr = bytes.first(hsize);
    FixedReader r(hdr.data());
    const auto version = r.get<std::uint8_t>();
    (void)r.get<std::uint8_t>();
    Common c;
    c.type = type;
    c.flags = r.get<std::uint16_t>();
    const std::uint32_t crc = r.u32();
    if (crc != header_crc(type, hdr.data()))
        return fail(ErrorCode::BadChecksum, "header checksum mismatch");
    if (version != kWireVersion)
        return fail(ErrorCode::BadVersion, "unsupported wire version");
    if ((c.flags & ~kKnownFlags) != 0)
        return fail(ErrorCode::BadField, "unknown flag bits");
    if ((c.flags & kRndvOnlyFlags) != 0 && type != FrameType::Rndv)
        return fail(ErrorCode::BadField, "RNDV-only flag on another frame type");
    if ((c.flags & kFlagPutDone) != 0 && type != FrameType::Frag)
        return fail(ErrorCode::BadField, "PUT-done flag on a frame other than FRAG");
    if ((c.flags & kFlagCreditStarved) != 0 && type != FrameType::Match && type != FrameType::Rndv)
        return fail(ErrorCode::BadField, "credit-starved flag on a frame other than MATCH, RNDV");
    if ((c.flags & kFlagCreditAnswer) != 0 && type != FrameType::Ack)
        return fail(ErrorCode::BadField, "credit-answer flag on a frame other than ACK");
    if ((c.flags & kFlagPayloadCsum) != 0 && type != FrameType::Match && type != FrameType::Rndv &&
        type != FrameType::Frag)
        return fail(ErrorCode::BadField, "payload checksum flag on a frame without payload");
    c.src_jobid = r.u32();
    c.src_vpid = r.u32();
    c.frame_seq = r.u32();
    c.ack_seq = r.u32();

    TypeCheck t{c, (bytes.size() - hsize) + payload_bytes};
    kDecoders[static_cast<std::size_t>(type)](r, t, d.header);
    if (!t.reserved_ok)
        return fail(ErrorCode::BadField, "reserved field not zero");
    if (t.rejected)
        return fail(t.bad);
    d.payload = bytes.subspan(hsize);
    return {};
}

// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
Result<Decoded> decode_header(std::span<const std::uint8_t> bytes,
                              std::size_t payload_bytes) noexcept {
    Decoded d;
    auto ok = decode_header_into(bytes, payload_bytes, d);
    if (!ok)
        return fail(ok.error());
    return d;
}

// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
Result<void> decode_into(std::span<const std::uint8_t> frame, Decoded& d) noexcept {
    auto ok = decode_header_into(frame, 0, d);
    if (!ok)
        return ok;
    std::uint32_t expect = 0;
    if (payload_crc_of(d, expect) && crc32c(d.payload.data(), d.payload.size()) != expect)
        return fail(ErrorCode::BadChecksum, "payload checksum mismatch");
    return {};
}

bool payload_crc_of(const Decoded& d, std::uint32_t& crc) noexcept {
    if ((common_of(d.header).flags & kFlagPayloadCsum) == 0)
        return false;
    if (const auto* m = std::get_if<MatchHdr>(&d.header))
        crc = m->match.payload_crc;
    else if (const auto* rv = std::get_if<RndvHdr>(&d.header))
        crc = rv->match.payload_crc;
    else if (const auto* f = std::get_if<FragHdr>(&d.header);
             f != nullptr && (f->common.flags & kFlagPutDone) == 0)
        crc = f->payload_crc;
    else
        return false;  // a PUT-done's payload_crc covers the bytes put, not its payload
    return true;
}

// Assigning trivially copyable headers to the variant cannot throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
Result<Decoded> decode(std::span<const std::uint8_t> frame) noexcept {
    Decoded d;
    auto ok = decode_into(frame, d);
    if (!ok)
        return fail(ok.error());
    return d;
}

}  // namespace pml::dr::core
