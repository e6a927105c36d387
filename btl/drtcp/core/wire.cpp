#include "wire.hpp"

#include "crc32c.hpp"
#include "wire_io.hpp"

namespace btl::drtcp::core {

using plugin::common::ByteReader;
using plugin::common::ByteWriter;
using plugin::common::ErrorCode;
using plugin::common::fail;

Result<std::size_t> encode(const Hello& h, std::span<std::uint8_t> out) noexcept {
    if (out.size() < kHelloSize)
        return fail(ErrorCode::NoSpace, "buffer shorter than a HELLO");
    ByteWriter w(out.first(kHelloSize));
    w.u32(kMagic);
    w.u8(kVersion);
    w.u8(0);
    w.u16(h.link);
    w.u32(h.from.jobid);
    w.u32(h.from.vpid);
    w.u64(h.nonce);
    w.u32(0);
    w.u32(plugin::common::crc32c(out.data(), kHelloSize - 4));
    return w.finish();
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

Result<Hello> decode_hello(std::span<const std::uint8_t> bytes) noexcept {
    if (bytes.size() < kHelloSize)
        return fail(ErrorCode::Truncated, "shorter than a HELLO");
    bytes = bytes.first(kHelloSize);
    ByteReader r(bytes);
    if (r.u32() != kMagic)
        return fail(ErrorCode::BadType, "not a drtcp HELLO (magic)");
    // The CRC first: no other field is believed before it matches.
    ByteReader tail(bytes.subspan(kHelloSize - 4));
    if (tail.u32() != plugin::common::crc32c(bytes.data(), kHelloSize - 4))
        return fail(ErrorCode::BadChecksum, "HELLO checksum mismatch");
    const std::uint8_t version = r.u8();
    r.expect_zero(1);
    Hello h;
    h.link = r.u16();
    h.from.jobid = r.u32();
    h.from.vpid = r.u32();
    h.nonce = r.u64();
    r.expect_zero(4);
    if (version != kVersion)
        return fail(ErrorCode::BadVersion, "unsupported drtcp version");
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
