#include "frame_copy.hpp"

namespace pml::dr::core {

std::string_view to_string(CopyState s) noexcept {
    switch (s) {
        case CopyState::Built:
            return "built";
        case CopyState::InChannel:
            return "in-channel";
        case CopyState::Handed:
            return "handed";
        case CopyState::Acked:
            return "acked";
        case CopyState::Abandoned:
            return "abandoned";
    }
    return "?";
}

}  // namespace pml::dr::core
