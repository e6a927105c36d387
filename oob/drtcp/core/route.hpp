// oob drtcp: where a message goes (sans I/O). ORTE's routed framework names
// the next hop towards a destination; this decides what the OOB does with a
// message for `dst` in process `me`.
#pragma once
#include <cstdint>

#include "wire.hpp"

namespace oob::drtcp::core {

// ORTE's reserved name fields (ORTE_JOBID_INVALID/WILDCARD, same for vpids).
inline constexpr std::uint32_t kNameInvalid = 0xFFFFFFFFu;
inline constexpr std::uint32_t kNameWildcard = 0xFFFFFFFEu;

constexpr bool is_real(const ProcName& n) noexcept {
    return n.jobid != kNameInvalid && n.jobid != kNameWildcard && n.vpid != kNameInvalid &&
           n.vpid != kNameWildcard;
}

enum class RouteKind : std::uint8_t {
    Deliver,  // for this process: hand it to the RML
    Forward,  // send it to `hop` (the destination itself or a relay)
    NoRoute,  // no usable hop (unknown, reserved, or this process itself)
};

struct Route {
    RouteKind kind = RouteKind::NoRoute;
    ProcName hop;
};

// `hop`: what the routed module said for `dst` (ignored when dst is me).
constexpr Route route(const ProcName& me, const ProcName& dst, const ProcName& hop) noexcept {
    if (dst == me)
        return {RouteKind::Deliver, me};
    if (!is_real(dst) || !is_real(hop) || hop == me)
        return {RouteKind::NoRoute, hop};
    return {RouteKind::Forward, hop};
}

}  // namespace oob::drtcp::core
