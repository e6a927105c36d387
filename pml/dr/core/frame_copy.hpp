// The life of a frame's kept copy (the glue's StoredFrame): made, given to
// the channel, taken by a BTL, released by the channel (acknowledged or
// abandoned), and freed once released and no BTL descriptor or queued retry
// holds it any more. One state machine (house style: enum, name table,
// checked transition) instead of a set of flags.
#pragma once
#include <cstdint>
#include <string_view>

namespace pml::dr::core {

enum class CopyState : std::uint8_t {
    Built,      // made, not the channel's yet
    InChannel,  // the channel has it; no BTL has taken a transmission of it
    Handed,     // a BTL took a transmission (an eager send waiting on it is MPI-complete)
    Acked,      // released: the peer acknowledged it
    Abandoned,  // released: the channel gave up on it (peer dead, no path left)
};

std::string_view to_string(CopyState s) noexcept;

// Inline: every frame makes three of these transitions.
constexpr bool transition_allowed(CopyState from, CopyState to) noexcept {
    switch (from) {
        case CopyState::Built:
            return to == CopyState::InChannel;
        case CopyState::InChannel:
            return to == CopyState::Handed || to == CopyState::Acked || to == CopyState::Abandoned;
        case CopyState::Handed:
            return to == CopyState::Acked || to == CopyState::Abandoned;
        case CopyState::Acked:
        case CopyState::Abandoned:
            return false;
    }
    return false;
}

class CopyLife {
  public:
    [[nodiscard]] CopyState state() const noexcept { return state_; }
    [[nodiscard]] bool released() const noexcept {
        return state_ == CopyState::Acked || state_ == CopyState::Abandoned;
    }
    // Whether it left this process's hands: a BTL took it, the peer has it,
    // or the channel gave up (the sender waits no longer either way).
    [[nodiscard]] bool past_handover() const noexcept {
        return state_ != CopyState::Built && state_ != CopyState::InChannel;
    }
    // May be freed: released and held by nothing.
    [[nodiscard]] bool done() const noexcept { return released() && holds_ == 0; }
    [[nodiscard]] unsigned holds() const noexcept { return holds_; }

    // The one checked transition; false (nothing changed) if not allowed.
    [[nodiscard]] bool to(CopyState next) noexcept {
        if (!transition_allowed(state_, next))
            return false;
        state_ = next;
        return true;
    }
    // A BTL took a transmission: the first one moves InChannel -> Handed;
    // later ones, and one that completes after the release, change nothing.
    void taken_by_btl() noexcept {
        if (state_ == CopyState::InChannel)
            (void)to(CopyState::Handed);
    }
    // A BTL descriptor or a queued retry refers to the copy, or no longer.
    void hold() noexcept { ++holds_; }
    void let_go() noexcept { --holds_; }

  private:
    CopyState state_ = CopyState::Built;
    unsigned holds_ = 0;
};

}  // namespace pml::dr::core
