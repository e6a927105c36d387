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
    };
    return plugin::common::register_params(component, specs) +
           plugin::common::register_params(component, plugin::common::btl_fault_specs(r.faults));
}

}  // namespace btl::drucx::mca
