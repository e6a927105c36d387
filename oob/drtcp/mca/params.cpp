// oob drtcp MCA parameters: one table, registered with help text
// (ompi_info --param oob drtcp --level 9).
#include <array>

#include "mca_params.hpp"
#include "oob.hpp"

namespace oob::drtcp::mca {

using plugin::common::ParamSpec;
using plugin::common::ParamType;

int register_params() noexcept {
    core::RawParams& r = state().raw;
    const core::RawParams d;
    const std::array specs{
        ParamSpec{"verbose", "Verbosity of the oob drtcp log stream (0 quiet, 20 info, 50 debug)",
                  ParamType::Int, &r.verbose, d.verbose},
        ParamSpec{"if_include",
                  "Interfaces to publish: comma-separated names (eth0) or CIDRs (10.0.0.0/8); "
                  "mutually exclusive with if_exclude",
                  ParamType::String, &r.if_include, 0, 0.0, ""},
        ParamSpec{"if_exclude", "Interfaces not to publish: names or CIDRs", ParamType::String,
                  &r.if_exclude, 0, 0.0, ""},
        ParamSpec{"static_ports",
                  "Port or range first-last the listener binds to (empty: the kernel picks)",
                  ParamType::String, &r.static_ports, 0, 0.0, ""},
        ParamSpec{"max_msg_size",
                  "Largest message accepted, in MiB (a longer one closes the connection)",
                  ParamType::Unsigned, &r.max_msg_size_mb, d.max_msg_size_mb},
        ParamSpec{"connect_timeout",
                  "Milliseconds an attempt may take until the handshake is complete (also the "
                  "time an accepted connection has to complete it)",
                  ParamType::Unsigned, &r.connect_timeout_ms, d.connect_timeout_ms},
        ParamSpec{"connect_attempts",
                  "Attempts in a row before a peer is reported unreachable (FAILED_TO_CONNECT)",
                  ParamType::Unsigned, &r.connect_attempts, d.connect_attempts},
        ParamSpec{"retry_delay", "Milliseconds before retry n, times n (linear back-off)",
                  ParamType::Unsigned, &r.retry_delay_ms, d.retry_delay_ms},
        ParamSpec{"user_timeout",
                  "Milliseconds a connection may leave data or keepalive probes unacknowledged "
                  "before it is declared lost, so that a daemon whose host is cut off is noticed "
                  "and the job ends (TCP_USER_TIMEOUT; keepalive is then derived from it: first "
                  "probe after half of it idle). 0: the kernel's retransmission limits (minutes) "
                  "and the oob_drtcp_keepalive_* parameters",
                  ParamType::Unsigned, &r.user_timeout_ms, d.user_timeout_ms},
        ParamSpec{"keepalive_time",
                  "Seconds of idleness before TCP keepalive probes start, when "
                  "oob_drtcp_user_timeout is 0 (0: no keepalive)",
                  ParamType::Unsigned, &r.keepalive_time_s, d.keepalive_time_s},
        ParamSpec{"keepalive_intvl", "Seconds between keepalive probes", ParamType::Unsigned,
                  &r.keepalive_intvl_s, d.keepalive_intvl_s},
        ParamSpec{"auth",
                  "For debugging only: false sends and accepts connection handshakes without "
                  "checking that both ends hold the job's key (identities are still checked). "
                  "Turning it off lets any local or network user who knows the job id join the "
                  "job's launcher traffic; every daemon must use the same setting",
                  ParamType::Bool, &r.auth, d.auth ? 1 : 0},
        ParamSpec{"keepalive_probes", "Unanswered probes before the connection is declared lost",
                  ParamType::Unsigned, &r.keepalive_probes, d.keepalive_probes},
    };
    return plugin::common::register_params(&mca_oob_drtcp_component.oob_base, specs) == 0
               ? ORTE_SUCCESS
               : ORTE_ERROR;
}

}  // namespace oob::drtcp::mca
