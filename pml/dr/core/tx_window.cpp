#include "tx_window.hpp"

namespace pml::dr::core {

void TxWindow::advance_una() noexcept {
    if (!allocated())
        return;
    while (una_ != next_seq_ && at(una_).state == FrameState::Free)
        una_ = channel_detail::seq_after(una_);
    const auto floor = static_cast<std::uint32_t>(una_ - 1u);
    if (plugin::common::seq_lt(cum_acked_, floor))
        cum_acked_ = floor;
    if (plugin::common::seq_lt(carried_, cum_acked_))
        carried_ = cum_acked_;
}

}  // namespace pml::dr::core
