// btl drucx configuration: what its MCA parameters become once validated.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fault.hpp"

namespace btl::drucx::core {

struct RawParams {
    int verbose = 0;
    const char* tls = nullptr;  // MCA string storage
    const char* devices = nullptr;
    unsigned max_pending = 4096;  // operations in flight, all peers
    unsigned max_pending_peer = 512;
    plugin::common::BtlFaultParams faults;
};

RawParams default_params() noexcept;

struct Config {
    std::vector<std::string> tls;      // empty: UCX's choice
    std::vector<std::string> devices;  // empty: all
    unsigned max_pending = 4096;
    unsigned max_pending_peer = 512;
    plugin::common::BtlFaults faults;
};

// Comma-separated names of transports or devices ("posix,cma", "mlx5_0:1").
// Empty, "all" or "any" means no restriction (an empty vector). Names are
// letters, digits, '_', '-', ':' and '.'; anything else is an error.
bool parse_name_list(const char* text, std::vector<std::string>& out);

// Empty string: valid, `out` filled. Otherwise what is wrong, naming the parameter.
std::string validate(const RawParams& raw, Config& out);

}  // namespace btl::drucx::core
