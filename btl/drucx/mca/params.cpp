// btl drucx MCA parameters: one table, registered with help text.
#include <array>

#include "btl.hpp"
#include "mca_params.hpp"

namespace btl::drucx::mca {

using plugin::common::ParamSpec;
using plugin::common::ParamType;

core::RawParams& raw_params() noexcept {
    static core::RawParams raw;
    return raw;
}

int register_params(const mca_base_component_t* component) noexcept {
    core::RawParams& r = raw_params();
    const core::RawParams d = core::default_params();
    const std::array specs{
        ParamSpec{"verbose", "Verbosity of the drucx log stream (0 quiet, 20 info, 50 debug)",
                  ParamType::Int, &r.verbose, d.verbose},
        ParamSpec{"tls",
                  "UCX transports to use, in order of preference (e.g. sysv,posix,tcp); any: "
                  "drucx's own order (sysv, posix, tcp)",
                  ParamType::String, &r.tls, 0, 0.0, "any"},
        ParamSpec{"devices", "UCX devices to use (e.g. memory,eth0); any: all", ParamType::String,
                  &r.devices, 0, 0.0, "any"},
        ParamSpec{
            "max_pending",
            "Sends waiting for UCX resources or in flight by zcopy, all peers (back-pressure)",
            ParamType::Unsigned, &r.max_pending, d.max_pending},
        ParamSpec{"max_pending_peer",
                  "Sends waiting for UCX resources or in flight by zcopy, per peer",
                  ParamType::Unsigned, &r.max_pending_peer, d.max_pending_peer},
        ParamSpec{"fault_drop",
                  "Testing: probability (0..1) that an arriving message is dropped (its sender "
                  "saw it sent)",
                  ParamType::Double, &r.fault_drop, 0, d.fault_drop},
        ParamSpec{"fault_corrupt",
                  "Testing: probability (0..1) that an arriving message gets one bit flipped",
                  ParamType::Double, &r.fault_corrupt, 0, d.fault_corrupt},
        ParamSpec{"fault_fail_after",
                  "Testing: after this many messages sent the module dies as if its transport "
                  "were gone (0: never)",
                  ParamType::Unsigned, &r.fault_fail_after, d.fault_fail_after},
        ParamSpec{"fault_seed", "Testing: seed of the fault injection (runs replay exactly)",
                  ParamType::Unsigned, &r.fault_seed, d.fault_seed},
    };
    return plugin::common::register_params(component, specs);
}

}  // namespace btl::drucx::mca
