// btl drtcp configuration: what its MCA parameters become once validated.
// The glue fills RawParams from the parameter table; validate() turns them
// into a Config or explains what is wrong. (The BTL-generic parameters —
// eager limit, max send size, exclusivity, bandwidth, latency — are
// registered by Open MPI's BTL base and read from the module.)
#pragma once
#include <cstdint>
#include <string>

#include "addr.hpp"
#include "endpoint.hpp"

#include "fault.hpp"

namespace btl::drtcp::core {

enum class FamilyChoice : int { Any = 0, Ipv4 = 4, Ipv6 = 6 };

struct RawParams {
    int verbose = 0;
    unsigned links = 1;
    const char* if_include = nullptr;  // MCA string storage
    const char* if_exclude = nullptr;
    int if_family = 0;  // FamilyChoice
    unsigned port_min_v4 = 0;
    unsigned port_range_v4 = 0;
    unsigned port_min_v6 = 0;
    unsigned port_range_v6 = 0;
    int sndbuf = 0;  // bytes; 0 leaves the kernel's (auto-tuned) default
    int rcvbuf = 0;
    bool nodelay = true;
    unsigned connect_timeout_ms = 10000;
    unsigned connect_attempts = 10;
    unsigned user_timeout_ms = 0;  // TCP_USER_TIMEOUT and keepalive (0: kernel defaults)
    unsigned sendq_frames = 512;   // per endpoint
    bool auth = true;              // MACs in the handshake (off: debugging only)
    plugin::common::BtlFaultParams faults;
};

RawParams default_params() noexcept;

struct Config {
    unsigned links = 1;
    IfList include;
    IfList exclude;
    bool include_set = false;  // the user chose interfaces (no loopback fallback)
    unsigned families = kFamilyV4 | kFamilyV6;
    std::uint16_t port_min_v4 = 0;  // 0: any port
    std::uint16_t port_range_v4 = 0;
    std::uint16_t port_min_v6 = 0;
    std::uint16_t port_range_v6 = 0;
    int sndbuf = 0;
    int rcvbuf = 0;
    bool nodelay = true;
    ConnectPolicy connect;
    unsigned user_timeout_ms = 0;
    unsigned sendq_frames = 512;
    bool auth = true;  // off: MACs sent as zeros and not checked (identity checks stay)
    plugin::common::BtlFaults faults;
};

// Empty string: valid, `out` filled. Otherwise what is wrong, naming the parameter.
std::string validate(const RawParams& raw, Config& out);

// The loopback-excluding default applied when neither list is set.
inline constexpr const char* kDefaultExclude = "127.0.0.0/8,::1";

}  // namespace btl::drtcp::core
