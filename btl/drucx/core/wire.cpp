#include "wire.hpp"

#include "crc32c.hpp"
#include "wire_io.hpp"

namespace btl::drucx::core {

using plugin::common::ByteReader;
using plugin::common::ByteWriter;
using plugin::common::ErrorCode;
using plugin::common::fail;

std::vector<std::uint8_t> encode_modex(std::span<const std::uint8_t> address) {
    const std::size_t n = address.size() > kMaxAddress ? kMaxAddress : address.size();
    std::vector<std::uint8_t> out(12 + n);
    ByteWriter w(out);
    w.u8(kVersion);
    w.u8(0);
    w.u16(0);
    w.u32(static_cast<std::uint32_t>(n));
    w.bytes(address.first(n));
    w.u32(plugin::common::crc32c(out.data(), 8 + n));
    return out;
}

Result<std::span<const std::uint8_t>> decode_modex(std::span<const std::uint8_t> blob) noexcept {
    ByteReader r(blob);
    const std::uint8_t version = r.u8();
    r.expect_zero(3);
    const std::uint32_t len = r.u32();
    if (!r.ok())
        return fail(r.error());
    if (len > kMaxAddress || blob.size() != 12 + std::size_t{len})
        return fail(ErrorCode::BadLength, "drucx modex length");
    ByteReader tail(blob.subspan(8 + len));
    if (tail.u32() != plugin::common::crc32c(blob.data(), 8 + len))
        return fail(ErrorCode::BadChecksum, "drucx modex checksum");
    if (version != kVersion)
        return fail(ErrorCode::BadVersion, "drucx modex version");
    if (len == 0)
        return fail(ErrorCode::BadLength, "drucx modex without an address");
    return blob.subspan(8, len);
}

std::vector<std::uint8_t> encode_addresses(std::span<const TlAddress> entries) {
    std::vector<std::uint8_t> out;
    for (const TlAddress& e : entries) {
        out.insert(out.end(), e.tl.begin(), e.tl.end());
        out.push_back(0);
        out.push_back(static_cast<std::uint8_t>(e.address.size() >> 8));
        out.push_back(static_cast<std::uint8_t>(e.address.size()));
        out.insert(out.end(), e.address.begin(), e.address.end());
    }
    return out;
}

Result<std::vector<TlAddress>> decode_addresses(std::span<const std::uint8_t> bytes) {
    std::vector<TlAddress> out;
    while (!bytes.empty()) {
        if (out.size() == kMaxTlAddresses)
            return fail(ErrorCode::BadLength, "too many transport addresses");
        std::size_t name_len = 0;
        while (name_len < bytes.size() && name_len < 32 && bytes[name_len] != 0)
            ++name_len;
        if (name_len == 0 || name_len == 32 || name_len + 3 > bytes.size())
            return fail(ErrorCode::BadField, "transport name");
        const std::size_t len = (std::size_t{bytes[name_len + 1]} << 8) | bytes[name_len + 2];
        if (name_len + 3 + len > bytes.size())
            return fail(ErrorCode::Truncated, "transport address");
        TlAddress e;
        e.tl.assign(reinterpret_cast<const char*>(bytes.data()), name_len);
        e.address = bytes.subspan(name_len + 3, len);
        out.push_back(std::move(e));
        bytes = bytes.subspan(name_len + 3 + len);
    }
    if (out.empty())
        return fail(ErrorCode::BadLength, "no transport address");
    return out;
}

std::array<std::uint8_t, kByeSize> encode_bye(ProcName sender) noexcept {
    std::array<std::uint8_t, kByeSize> out{};
    (void)encode(AmHeader{0, AmKind::Bye}, out);
    const std::span<std::uint8_t> name = std::span(out).subspan(kAmHeaderSize);
    ByteWriter w(name);
    w.name(sender);
    return out;
}

Result<ProcName> decode_bye(std::span<const std::uint8_t> message) noexcept {
    auto h = decode_am_header(message);
    if (!h)
        return fail(h.error());
    if (h->kind != AmKind::Bye)
        return fail(ErrorCode::BadType, "not a BYE");
    ByteReader r(message.subspan(kAmHeaderSize));
    ProcName name;
    name = r.name();
    return name;
}

}  // namespace btl::drucx::core
