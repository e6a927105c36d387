#include "wire_local.hpp"

namespace pml::dr::core {

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
