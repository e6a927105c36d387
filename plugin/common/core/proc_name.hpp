// A process's ORTE name as the cores see it (no Open MPI headers): job id
// and rank within the job. Ordered, so two processes can agree on which of
// them decides (e.g. which of two simultaneous connections survives).
#pragma once
#include <compare>
#include <cstdint>

namespace plugin::common {

struct ProcName {
    std::uint32_t jobid = 0;
    std::uint32_t vpid = 0;
    friend bool operator==(const ProcName&, const ProcName&) = default;
    // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
    friend auto operator<=>(const ProcName&, const ProcName&) = default;
};

}  // namespace plugin::common
