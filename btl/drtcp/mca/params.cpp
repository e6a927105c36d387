// btl drtcp MCA parameters: one table, registered with help text.
#include <array>

#include "btl.hpp"
#include "mca_params.hpp"

namespace btl::drtcp::mca {

using plugin::common::ParamEnumValue;
using plugin::common::ParamSpec;
using plugin::common::ParamType;

core::RawParams& raw_params() noexcept {
    static core::RawParams raw;
    return raw;
}

namespace {
constexpr ParamEnumValue kFamilies[] = {
    {static_cast<int>(core::FamilyChoice::Any), "any"},
    {static_cast<int>(core::FamilyChoice::Ipv4), "ipv4"},
    {static_cast<int>(core::FamilyChoice::Ipv6), "ipv6"},
    {0, nullptr},
};
}  // namespace

int register_params(const mca_base_component_t* component) noexcept {
    core::RawParams& r = raw_params();
    const core::RawParams d = core::default_params();
    const std::array specs{
        ParamSpec{"verbose", "Verbosity of the drtcp log stream (0 quiet, 20 info, 50 debug)",
                  ParamType::Int, &r.verbose, d.verbose},
        ParamSpec{"links", "TCP connections (and BTL modules) per interface and peer (1..16)",
                  ParamType::Unsigned, &r.links, d.links},
        ParamSpec{
            "if_include",
            "Interfaces to use: comma-separated names (eth0) or CIDRs (10.0.0.0/8, fd00::/8); "
            "mutually exclusive with if_exclude",
            ParamType::String, &r.if_include, 0, 0.0, ""},
        ParamSpec{"if_exclude",
                  "Interfaces not to use: names or CIDRs; mutually exclusive with if_include. When "
                  "neither is set, loopback is excluded unless nothing else is up",
                  ParamType::String, &r.if_exclude, 0, 0.0, ""},
        ParamSpec{"if_family", "Address families to use: any, ipv4 or ipv6", ParamType::Enum,
                  &r.if_family, d.if_family, 0.0, nullptr, kFamilies},
        ParamSpec{"port_min_v4", "First IPv4 port to listen on (0: any free port)",
                  ParamType::Unsigned, &r.port_min_v4, d.port_min_v4},
        ParamSpec{"port_range_v4", "Number of IPv4 ports tried from port_min_v4",
                  ParamType::Unsigned, &r.port_range_v4, d.port_range_v4},
        ParamSpec{"port_min_v6", "First IPv6 port to listen on (0: any free port)",
                  ParamType::Unsigned, &r.port_min_v6, d.port_min_v6},
        ParamSpec{"port_range_v6", "Number of IPv6 ports tried from port_min_v6",
                  ParamType::Unsigned, &r.port_range_v6, d.port_range_v6},
        ParamSpec{"sndbuf", "Socket send buffer in bytes (0: the kernel's auto-tuning)",
                  ParamType::Int, &r.sndbuf, d.sndbuf},
        ParamSpec{"rcvbuf", "Socket receive buffer in bytes (0: the kernel's auto-tuning)",
                  ParamType::Int, &r.rcvbuf, d.rcvbuf},
        ParamSpec{"nodelay", "Disable Nagle's algorithm (TCP_NODELAY) for low latency",
                  ParamType::Bool, &r.nodelay, d.nodelay},
        ParamSpec{"connect_timeout",
                  "Milliseconds a connection attempt may take, HELLO exchange included",
                  ParamType::Unsigned, &r.connect_timeout_ms, d.connect_timeout_ms},
        ParamSpec{"connect_attempts", "Connection attempts to a peer before it is reported dead",
                  ParamType::Unsigned, &r.connect_attempts, d.connect_attempts},
        ParamSpec{"user_timeout",
                  "Milliseconds unacknowledged data (or unanswered keepalives) may wait before "
                  "the connection is declared broken (TCP_USER_TIMEOUT; 0: kernel default)",
                  ParamType::Unsigned, &r.user_timeout_ms, d.user_timeout_ms},
        ParamSpec{"auth",
                  "Authenticate every connection with a keyed MAC (HMAC-SHA256) over fresh "
                  "nonces from both sides, the key derived from both processes' random keys "
                  "published in the modex. For debugging only: turning it off (on every "
                  "process of the job alike) lets anybody who can reach the port and name a "
                  "rank of the job in. Identity checks stay on",
                  ParamType::Bool, &r.auth, d.auth},
        ParamSpec{"sendq_frames",
                  "Frames queued per peer before new descriptors are refused (back-pressure)",
                  ParamType::Unsigned, &r.sendq_frames, d.sendq_frames},
    };
    return plugin::common::register_params(component, specs) +
           plugin::common::register_params(component, plugin::common::btl_fault_specs(r.faults));
}

}  // namespace btl::drtcp::mca
