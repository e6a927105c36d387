// A local socket peer's identity as the kernel recorded it at connect() or
// listen() (SO_PEERCRED): read by plugin/common/net, judged by a
// component's sans-I/O policy.
#pragma once
#include <cstdint>

namespace plugin::common {

struct PeerCred {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    std::int32_t pid = 0;
};

}  // namespace plugin::common
