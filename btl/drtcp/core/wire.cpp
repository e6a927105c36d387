#include "wire.hpp"

#include <algorithm>

#include "wire_io.hpp"

namespace btl::drtcp::core {

using plugin::common::ByteReader;
using plugin::common::ByteWriter;
using plugin::common::ErrorCode;
using plugin::common::fail;

std::size_t handshake_size(HsType type) noexcept {
    switch (type) {
        case HsType::Hello:
            return kHelloSize;
        case HsType::Reply:
            return kReplySize;
        case HsType::Confirm:
            return kConfirmSize;
    }
    return 0;
}

std::uint64_t hello_sequence(const auth::Nonce& nonce) noexcept {
    ByteReader r(nonce);
    return r.u64();
}

auth::Nonce make_hello_nonce(std::uint64_t seq, std::span<const std::uint8_t, 8> random) noexcept {
    auth::Nonce n{};
    ByteWriter w(n);
    w.u64(seq);
    w.bytes(random);
    return n;
}

namespace {

void put_preamble(ByteWriter& w, HsType type) noexcept {
    w.u32(kMagic);
    w.u8(kVersion);
    w.u8(static_cast<std::uint8_t>(type));
    w.u16(static_cast<std::uint16_t>(handshake_size(type)));
}

}  // namespace

Result<std::size_t> encode(const Hello& h, std::span<std::uint8_t> out) noexcept {
    if (out.size() < kHelloSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a HELLO");
    ByteWriter w(out.first(kHelloSize));
    put_preamble(w, HsType::Hello);
    w.u16(h.link);
    w.u8(h.flags);
    w.u8(0);
    w.name(h.from);
    w.name(h.to);
    w.bytes(h.nonce);
    w.bytes(h.mac);
    return w.finish();
}

Result<std::size_t> encode(const Reply& h, std::span<std::uint8_t> out) noexcept {
    if (out.size() < kReplySize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a REPLY");
    ByteWriter w(out.first(kReplySize));
    put_preamble(w, HsType::Reply);
    w.name(h.from);
    w.bytes(h.nonce);
    w.bytes(h.mac);
    return w.finish();
}

Result<std::size_t> encode(const Confirm& h, std::span<std::uint8_t> out) noexcept {
    if (out.size() < kConfirmSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a CONFIRM");
    ByteWriter w(out.first(kConfirmSize));
    put_preamble(w, HsType::Confirm);
    w.bytes(h.mac);
    return w.finish();
}

Result<void> check_preamble(std::span<const std::uint8_t> bytes, HsType expected) noexcept {
    if (bytes.size() < kPreambleSize)
        return fail(ErrorCode::Truncated, "shorter than a handshake preamble");
    ByteReader r(bytes.first(kPreambleSize));
    if (r.u32() != kMagic)
        return fail(ErrorCode::BadType, "not a drtcp handshake (magic)");
    if (r.u8() != kVersion)
        return fail(ErrorCode::BadVersion, "unsupported drtcp version");
    if (r.u8() != static_cast<std::uint8_t>(expected))
        return fail(ErrorCode::BadType, "not the handshake message expected here");
    if (r.u16() != handshake_size(expected))
        return fail(ErrorCode::BadLength, "handshake message of the wrong length");
    return {};
}

Result<Hello> decode_hello(std::span<const std::uint8_t> bytes) noexcept {
    if (auto ok = check_preamble(bytes, HsType::Hello); !ok)
        return fail(ok.error());
    if (bytes.size() < kHelloSize)
        return fail(ErrorCode::Truncated, "shorter than a HELLO");
    ByteReader r(bytes.first(kHelloSize).subspan(kPreambleSize));
    Hello h;
    h.link = r.u16();
    h.flags = r.u8();
    r.expect_zero(1);
    h.from = r.name();
    h.to = r.name();
    r.array(h.nonce);
    r.array(h.mac);
    if (!r.ok())
        return fail(r.error());
    if ((h.flags & ~kHelloReconnect) != 0)
        return fail(ErrorCode::BadField, "unknown HELLO flags");
    return h;
}

Result<Reply> decode_reply(std::span<const std::uint8_t> bytes) noexcept {
    if (auto ok = check_preamble(bytes, HsType::Reply); !ok)
        return fail(ok.error());
    if (bytes.size() < kReplySize)
        return fail(ErrorCode::Truncated, "shorter than a REPLY");
    ByteReader r(bytes.first(kReplySize).subspan(kPreambleSize));
    Reply h;
    h.from = r.name();
    r.array(h.nonce);
    r.array(h.mac);
    if (!r.ok())
        return fail(r.error());
    return h;
}

Result<Confirm> decode_confirm(std::span<const std::uint8_t> bytes) noexcept {
    if (auto ok = check_preamble(bytes, HsType::Confirm); !ok)
        return fail(ok.error());
    if (bytes.size() < kConfirmSize)
        return fail(ErrorCode::Truncated, "shorter than a CONFIRM");
    ByteReader r(bytes.first(kConfirmSize).subspan(kPreambleSize));
    Confirm h;
    r.array(h.mac);
    if (!r.ok())
        return fail(r.error());
    return h;
}

Result<std::size_t> encode(const FrameHeader& h, std::span<std::uint8_t> out) noexcept {
    if (out.size() < kFrameHeaderSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a frame header");
    ByteWriter w(out.first(kFrameHeaderSize));
    w.u8(kFrameSync);
    w.u8(h.tag);
    w.u16(h.flags);
    w.u32(h.len);
    return w.finish();
}

Result<std::size_t> encode(const PutHeader& h, std::span<std::uint8_t> out) noexcept {
    if (out.size() < kPutHeaderSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a PUT header");
    ByteWriter w(out.first(kPutHeaderSize));
    w.u64(h.key);
    w.u64(h.addr);
    return w.finish();
}

Result<PutHeader> decode_put_header(std::span<const std::uint8_t> bytes) noexcept {
    if (bytes.size() < kPutHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than a PUT header");
    ByteReader r(bytes.first(kPutHeaderSize));
    PutHeader h;
    h.key = r.u64();
    h.addr = r.u64();
    if (!r.ok())
        return fail(r.error());
    return h;
}

Result<FrameHeader> decode_frame_header(std::span<const std::uint8_t> bytes,
                                        std::uint32_t max_frame) noexcept {
    if (bytes.size() < kFrameHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than a frame header");
    ByteReader r(bytes.first(kFrameHeaderSize));
    if (r.u8() != kFrameSync)
        return fail(ErrorCode::BadType, "frame sync byte missing: stream out of step");
    FrameHeader h;
    h.tag = r.u8();
    h.flags = r.u16();
    h.len = r.u32();
    if (!r.ok())
        return fail(r.error());
    switch (h.flags) {
        case 0:
            if (h.len > max_frame)
                return fail(ErrorCode::BadLength, "frame longer than max_frame");
            break;
        case kFrameFlagBye:
            if (h.len != 0 || h.tag != 0)
                return fail(ErrorCode::BadField, "BYE frame with a tag or payload");
            break;
        case kFrameFlagPut:
            if (h.tag != 0 || h.len == 0)
                return fail(ErrorCode::BadField, "PUT frame with a tag or empty");
            if (h.len > kMaxPutBytes)
                return fail(ErrorCode::BadLength, "PUT longer than kMaxPutBytes");
            break;
        default:
            return fail(ErrorCode::BadField, "unknown frame flags");
    }
    return h;
}

}  // namespace btl::drtcp::core
