#include "wire.hpp"

#include <algorithm>

#include "crc32c.hpp"
#include "wire_io.hpp"

namespace oob::drtcp::core {

using plugin::common::ByteReader;
using plugin::common::ByteWriter;
using plugin::common::crc32c;
using plugin::common::ErrorCode;
using plugin::common::fail;

namespace {

bool routed_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// The CRC in the last 4 bytes of `msg` covers everything before it.
bool crc_ok(std::span<const std::uint8_t> msg, std::uint32_t crc) noexcept {
    return crc32c(msg.first(msg.size() - 4)) == crc;
}

Result<std::size_t> seal(ByteWriter& w, std::span<std::uint8_t> out, std::size_t size) noexcept {
    w.u32(crc32c(out.first(size - 4)));
    return w.finish();
}

}  // namespace

bool set_routed(Header& h, std::string_view routed) noexcept {
    if (routed.size() > kRoutedMax || !std::all_of(routed.begin(), routed.end(), routed_char))
        return false;
    std::fill(std::begin(h.routed), std::end(h.routed), '\0');
    std::copy(routed.begin(), routed.end(), h.routed);
    return true;
}

std::string_view to_string(HsType t) noexcept {
    switch (t) {
        case HsType::Hello:
            return "HELLO";
        case HsType::Reply:
            return "REPLY";
        case HsType::Confirm:
            return "CONFIRM";
    }
    return "?";
}

Result<std::size_t> encode_handshake(const HandshakeFrame& f,
                                     std::span<std::uint8_t> out) noexcept {
    if (out.size() < kHandshakeSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a handshake frame");
    ByteWriter w(out.first(kHandshakeSize));
    w.u32(kMagic);
    w.u8(kVersion);
    w.u8(static_cast<std::uint8_t>(f.type));
    w.u8(f.flags);
    w.u8(0);
    w.name(f.sender);
    w.name(f.receiver);
    w.bytes(f.nonce);
    w.bytes(f.mac);
    return seal(w, out, kHandshakeSize);
}

Result<std::size_t> encode_header(const Header& h, std::span<std::uint8_t> out) noexcept {
    if (out.size() < kHeaderSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a message header");
    const std::string_view routed = h.routed_name();
    if (routed.size() > kRoutedMax || !std::all_of(routed.begin(), routed.end(), routed_char))
        return fail(ErrorCode::BadField, "routed module name");
    ByteWriter w(out.first(kHeaderSize));
    w.u8(kSync);
    w.u8(kVersion);
    w.u8(static_cast<std::uint8_t>(h.kind));
    w.u8(static_cast<std::uint8_t>(routed.size()));
    w.name(h.origin);
    w.name(h.dst);
    w.u32(h.tag);
    w.u32(h.seq_num);
    w.u32(h.nbytes);
    for (std::size_t i = 0; i <= kRoutedMax; ++i)
        w.u8(i < routed.size() ? static_cast<std::uint8_t>(routed[i]) : 0);
    w.u32(0);
    return seal(w, out, kHeaderSize);
}

Result<void> check_handshake_prefix(std::span<const std::uint8_t> in) noexcept {
    if (in.size() < kHandshakePrefix)
        return fail(ErrorCode::Truncated, "shorter than a handshake prefix");
    ByteReader r(in.first(kHandshakePrefix));
    const std::uint32_t magic = r.u32();
    const std::uint8_t version = r.u8();
    const std::uint8_t type = r.u8();
    const std::uint8_t flags = r.u8();
    const std::uint8_t reserved = r.u8();
    if (magic != kMagic)
        return fail(ErrorCode::BadField, "not an oob drtcp handshake (magic)");
    if (version != kVersion)
        return fail(ErrorCode::BadVersion, "unsupported oob drtcp version");
    if (type < static_cast<std::uint8_t>(HsType::Hello) ||
        type > static_cast<std::uint8_t>(HsType::Confirm))
        return fail(ErrorCode::BadType, "unknown handshake type");
    const std::uint8_t allowed =
        type == static_cast<std::uint8_t>(HsType::Hello) ? kFlagReconnect : 0;
    if ((flags & ~allowed) != 0 || reserved != 0)
        return fail(ErrorCode::BadField, "handshake flags or reserved byte");
    return {};
}

Result<HandshakeFrame> decode_handshake(std::span<const std::uint8_t> in) noexcept {
    if (in.size() < kHandshakeSize)
        return fail(ErrorCode::Truncated, "shorter than a handshake frame");
    in = in.first(kHandshakeSize);
    if (auto p = check_handshake_prefix(in); !p)
        return fail(p.error());
    ByteReader r(in);
    r.skip(4);
    HandshakeFrame f;
    r.skip(1);
    f.type = static_cast<HsType>(r.u8());
    f.flags = r.u8();
    r.skip(1);
    f.sender = r.name();
    f.receiver = r.name();
    r.array(f.nonce);
    r.array(f.mac);
    const std::uint32_t crc = r.u32();
    if (!r.ok())
        return fail(r.error());
    if (!crc_ok(in, crc))
        return fail(ErrorCode::BadChecksum, "handshake checksum");
    if (f.type == HsType::Confirm &&
        std::any_of(f.nonce.begin(), f.nonce.end(), [](std::uint8_t b) { return b != 0; }))
        return fail(ErrorCode::BadField, "CONFIRM carries no nonce");
    return f;
}

Result<Header> decode_header(std::span<const std::uint8_t> in, std::uint32_t max_nbytes) noexcept {
    if (in.size() < kHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than a message header");
    in = in.first(kHeaderSize);
    ByteReader r(in);
    const std::uint8_t sync = r.u8();
    const std::uint8_t version = r.u8();
    const std::uint8_t kind = r.u8();
    const std::uint8_t routed_len = r.u8();
    Header h;
    h.origin = r.name();
    h.dst = r.name();
    h.tag = r.u32();
    h.seq_num = r.u32();
    h.nbytes = r.u32();
    const auto routed = r.bytes(kRoutedMax + 1);
    r.expect_zero(4);
    const std::uint32_t crc = r.u32();
    if (!r.ok())
        return fail(r.error());
    if (sync != kSync)
        return fail(ErrorCode::BadField, "bad sync byte");
    if (!crc_ok(in, crc))
        return fail(ErrorCode::BadChecksum, "message header checksum");
    if (version != kVersion)
        return fail(ErrorCode::BadVersion, "unsupported oob drtcp version");
    if (kind != static_cast<std::uint8_t>(Kind::Message) &&
        kind != static_cast<std::uint8_t>(Kind::Bye))
        return fail(ErrorCode::BadType, "unknown message kind");
    h.kind = static_cast<Kind>(kind);
    if (routed_len > kRoutedMax)
        return fail(ErrorCode::BadLength, "routed name too long");
    for (std::size_t i = 0; i < routed.size(); ++i) {
        const char c = static_cast<char>(routed[i]);
        if (i < routed_len ? !routed_char(c) : c != '\0')
            return fail(ErrorCode::BadField, "routed name characters or padding");
    }
    std::copy(routed.begin(), routed.begin() + routed_len, h.routed);
    if (h.kind == Kind::Bye && (h.nbytes != 0 || routed_len != 0 || h.tag != 0 ||
                                h.origin != ProcName{} || h.dst != ProcName{} || h.seq_num != 0))
        return fail(ErrorCode::BadField, "BYE carries nothing");
    if (h.nbytes > max_nbytes)
        return fail(ErrorCode::BadLength, "message longer than oob_drtcp_max_msg_size");
    return h;
}

}  // namespace oob::drtcp::core
