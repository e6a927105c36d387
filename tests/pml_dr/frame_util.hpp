// Frame building helpers shared by the pml dr tests (not part of the core).
#pragma once
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "crc32c.hpp"
#include "wire.hpp"

namespace pml_dr_test {

using namespace pml::dr::core;

// Bitwise CRC32C (reflected 0x82F63B78), written from the definition so the
// golden tests do not trust the library's table/hardware paths.
inline std::uint32_t ref_crc32c(std::span<const std::uint8_t> bytes) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::uint8_t b : bytes) {
        crc ^= b;
        for (int i = 0; i < 8; ++i)
            crc = (crc & 1u) != 0 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

// Header followed by payload, as one contiguous frame.
template <class Hdr>
std::vector<std::uint8_t> frame_of(const Hdr& h, std::span<const std::uint8_t> payload = {}) {
    std::vector<std::uint8_t> f(kMaxHeaderSize + payload.size());
    auto n = encode(h, f);
    EXPECT_TRUE(n.has_value());
    if (!n)
        return {};
    f.resize(*n);
    f.insert(f.end(), payload.begin(), payload.end());
    return f;
}

inline void put_be32(std::span<std::uint8_t> at, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i)
        at[i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
inline void put_be64(std::span<std::uint8_t> at, std::uint64_t v) {
    for (std::size_t i = 0; i < 8; ++i)
        at[i] = static_cast<std::uint8_t>(v >> (56 - 8 * i));
}

// Recomputes hdr_crc over the first hsize bytes (CRC field as zero), so a
// test can tamper with a field and still get past the checksum check.
inline void reseal(std::vector<std::uint8_t>& f, std::size_t hsize) {
    ASSERT_GE(f.size(), hsize);
    put_be32(std::span(f).subspan(4, 4), 0);
    put_be32(std::span(f).subspan(4, 4), ref_crc32c(std::span(f).first(hsize)));
}
// Same, with the header size taken from the frame's (known) type byte.
inline void reseal(std::vector<std::uint8_t>& f) {
    ASSERT_GE(f.size(), 2u);
    reseal(f, header_size(static_cast<FrameType>(f[1])));
}

// Deterministic payload bytes for message `id` from `src`.
inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t src, std::uint32_t id) {
    std::vector<std::uint8_t> p(n);
    std::uint32_t x = (src + 1) * 0x9E3779B9u ^ (id * 0x85EBCA6Bu);
    for (std::size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = static_cast<std::uint8_t>(x);
    }
    return p;
}

inline MatchHdr match_hdr(std::uint32_t jobid, std::uint32_t vpid, std::uint32_t cid,
                          std::int32_t rank, std::int32_t tag, std::uint16_t seq,
                          std::span<const std::uint8_t> payload, bool csum = true) {
    MatchHdr h;
    h.common.flags = csum ? kFlagPayloadCsum : 0;
    h.common.src_jobid = jobid;
    h.common.src_vpid = vpid;
    h.match.cid = cid;
    h.match.src_rank = rank;
    h.match.tag = tag;
    h.match.msg_seq = seq;
    h.match.payload_len = static_cast<std::uint32_t>(payload.size());
    h.match.payload_crc = csum ? plugin::common::crc32c(payload) : 0;
    return h;
}

inline std::vector<std::uint8_t> match_frame(std::uint32_t jobid, std::uint32_t vpid,
                                             std::uint32_t cid, std::int32_t rank, std::int32_t tag,
                                             std::uint16_t seq,
                                             std::span<const std::uint8_t> payload,
                                             bool csum = true) {
    return frame_of(match_hdr(jobid, vpid, cid, rank, tag, seq, payload, csum), payload);
}

}  // namespace pml_dr_test
