#include "wire_local.hpp"

#include "wire_io.hpp"

namespace pml::dr::core {

using plugin::common::ErrorCode;
using plugin::common::fail;
using plugin::common::load_be;
using plugin::common::Result;
using plugin::common::store_be;

namespace {

// The header is four big-endian words: one load or store each.
constexpr std::uint32_t first_word(std::uint16_t msg_seq) noexcept {
    return (std::uint32_t{kWireVersion} << 24) | (std::uint32_t{kLocalMatchType} << 16) | msg_seq;
}

}  // namespace

void encode_local_match(const LocalMatchHdr& h,
                        std::span<std::uint8_t, kLocalMatchHeaderSize> out) noexcept {
    std::uint8_t* p = out.data();
    store_be(p, first_word(h.msg_seq));
    store_be(p + 4, h.cid);
    store_be(p + 8, static_cast<std::uint32_t>(h.src_rank));
    store_be(p + 12, static_cast<std::uint32_t>(h.tag));
}

Result<LocalMatchHdr> decode_local_match(std::span<const std::uint8_t> header) noexcept {
    if (header.size() < kLocalMatchHeaderSize)
        return fail(ErrorCode::Truncated, "shorter than a LOCAL_MATCH header");
    const std::uint8_t* p = header.data();
    const std::uint32_t w0 = load_be<std::uint32_t>(p);
    if ((w0 >> 24) != kWireVersion)
        return fail(ErrorCode::BadVersion, "LOCAL_MATCH of another wire version");
    if (((w0 >> 16) & 0xFF) != kLocalMatchType)
        return fail(ErrorCode::BadType, "not a LOCAL_MATCH");
    LocalMatchHdr h;
    h.msg_seq = static_cast<std::uint16_t>(w0 & 0xFFFF);
    h.cid = load_be<std::uint32_t>(p + 4);
    h.src_rank = static_cast<std::int32_t>(load_be<std::uint32_t>(p + 8));
    h.tag = static_cast<std::int32_t>(load_be<std::uint32_t>(p + 12));
    return h;
}

MatchFields match_fields_of(const LocalMatchHdr& h, std::size_t payload_len) noexcept {
    MatchFields m;
    m.cid = h.cid;
    m.src_rank = h.src_rank;
    m.tag = h.tag;
    m.msg_seq = h.msg_seq;
    m.payload_len = static_cast<std::uint32_t>(payload_len);
    return m;
}

}  // namespace pml::dr::core
