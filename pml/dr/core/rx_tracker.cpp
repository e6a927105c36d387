#include "rx_tracker.hpp"

namespace pml::dr::core {

bool RxTracker::record(std::uint32_t seq, std::uint32_t window) {
    const bool past_gap = plugin::common::seq_diff(seq, cum_) > 1;
    if (past_gap) {
        if (bits_.empty())
            bits_.assign(window / 64, 0);
        put(seq, window, true);
        ++ahead_;
    } else {
        cum_ = seq;
    }
    advance(window);
    return past_gap;
}

void RxTracker::put(std::uint32_t seq, std::uint32_t window, bool on) noexcept {
    const std::uint32_t pos = seq & (window - 1);
    const std::uint64_t m = std::uint64_t{1} << (pos % 64);
    if (on)
        bits_[pos / 64] |= m;
    else
        bits_[pos / 64] &= ~m;
}

void RxTracker::advance(std::uint32_t window) noexcept {
    for (;;) {
        const auto n = static_cast<std::uint32_t>(cum_ + 1u);
        if (n != 0) {
            if (!bit(n, window))
                break;
            put(n, window, false);
            --ahead_;
        }
        cum_ = n;
    }
}

}  // namespace pml::dr::core
