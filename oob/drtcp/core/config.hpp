// oob drtcp parameters (sans I/O): the raw MCA values and their validation.
#pragma once
#include <cstdint>
#include <string>

#include "netaddr.hpp"
#include "peer.hpp"

namespace oob::drtcp::core {

struct RawParams {
    int verbose = 0;
    const char* if_include = nullptr;  // MCA string storage
    const char* if_exclude = nullptr;
    const char* static_ports = nullptr;  // "" / nullptr: the kernel picks
    unsigned max_msg_size_mb = 256;      // largest message accepted, MiB
    unsigned connect_timeout_ms = 10000;
    unsigned connect_attempts = 10;
    unsigned retry_delay_ms = 100;
    unsigned user_timeout_ms = 20000;  // 0: keepalive_* below, else derived from it
    unsigned keepalive_time_s = 300;   // 0: no keepalive
    unsigned keepalive_intvl_s = 20;
    unsigned keepalive_probes = 9;
    bool auth = true;  // false: handshake MACs not checked (debugging)
};

struct Config {
    plugin::common::IfList include;
    plugin::common::IfList exclude;
    bool include_set = false;
    std::uint16_t port_min = 0;  // 0: dynamic
    std::uint16_t port_max = 0;
    std::uint32_t max_msg_bytes = 256u << 20;
    ConnectPolicy retry;
    unsigned user_timeout_ms = 20000;
    unsigned keepalive_time_s = 300;
    unsigned keepalive_intvl_s = 20;
    unsigned keepalive_probes = 9;
    bool auth = true;
};

// Empty string: valid (`out` filled). Otherwise what is wrong, for the log.
std::string validate(const RawParams& raw, Config& out);

}  // namespace oob::drtcp::core
