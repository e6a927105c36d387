#include "trust.hpp"

#include <algorithm>

namespace pml::dr::core {

PathMedium medium_of_btl(std::string_view component) noexcept {
    if (component == "self")
        return PathMedium::Process;
    if (component == "vader" || component == "sm")
        return PathMedium::Memory;
    return PathMedium::Network;
}

LocalTrust local_trust(const Config& config, std::span<const PathMedium> paths) noexcept {
    if (paths.empty() || std::any_of(paths.begin(), paths.end(),
                                     [](PathMedium m) { return m == PathMedium::Network; }))
        return LocalTrust::None;
    if (!config.trust_local || config.csum == CsumMode::Always)
        return LocalTrust::Accept;
    const bool faults = config.faults_enabled() || config.fault_fail_after > 0;
    const bool in_process = std::all_of(paths.begin(), paths.end(),
                                        [](PathMedium m) { return m == PathMedium::Process; });
    return faults && !in_process ? LocalTrust::Accept : LocalTrust::AcceptAndSend;
}

}  // namespace pml::dr::core
