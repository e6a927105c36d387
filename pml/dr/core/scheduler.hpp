// Splitting a long message's frags across the paths (BTLs) that reach a
// peer, in proportion to their bandwidth: each frag goes to the path whose
// share of the bytes assigned so far, divided by its weight, is smallest.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace pml::dr::core {

// Most paths one message is spread over (more BTLs than this share the rest).
inline constexpr std::size_t kMaxSchedPaths = 8;

// weights[i] > 0 is path i's relative bandwidth; a non-positive weight is
// never picked while some path has a positive one (when none has, all share
// evenly); assigned[i] the bytes it got.
// Returns the index to use next; 0 for an empty or single-path set.
std::size_t pick_weighted(std::span<const double> weights,
                          std::span<const std::uint64_t> assigned) noexcept;

// A path as eager frames weigh it: the BTL's latency and bandwidth weights
// (locality-adjusted by btl drtcp/drucx, issue 29) and whether the channel
// lets new frames use it.
struct PathRank {
    std::uint32_t latency = 0;
    std::uint32_t bandwidth = 0;
    bool usable = false;
};
inline constexpr std::size_t kNoPath = static_cast<std::size_t>(-1);

// The nearest usable path: lowest latency, then highest bandwidth, then the
// first listed. kNoPath when none is usable. Eager frames take it when no
// path of the lowest-latency set (the BML's btl_eager) is usable.
std::size_t pick_nearest(std::span<const PathRank> paths) noexcept;

}  // namespace pml::dr::core
