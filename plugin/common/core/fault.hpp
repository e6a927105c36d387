// Receive-side fault injection for testing (pml_dr_fault_*, btl_drtcp_fault_*): decides for
// each arriving frame whether it is dropped, gets one bit flipped, or is
// delivered twice. Deterministic for a seed, so a failing run can be replayed.
// Sans I/O: the glue applies the plan to the bytes it holds.
#pragma once
#include <cstddef>
#include <cstdint>

namespace plugin::common {

// A fault probability parameter is valid: finite, at least 0 and below 1 (1
// would lose every frame: a job that never ends).
inline bool is_probability(double p) noexcept {
    return p >= 0.0 && p < 1.0;
}  // NaN fails both

struct FaultPlan {
    bool drop = false;
    bool duplicate = false;
    bool corrupt = false;
    std::size_t byte = 0;   // corrupt: which byte of the frame
    std::uint8_t mask = 0;  // corrupt: the bit flipped in it (one bit set)
};

struct FaultCounters {
    std::uint64_t dropped = 0;
    std::uint64_t corrupted = 0;
    std::uint64_t duplicated = 0;
};

// The fault-injection parameters our BTLs share (btl_<name>_fault_*): what
// the MCA variables hold, and the values once validated.
struct BtlFaultParams {
    double drop = 0.0;
    double corrupt = 0.0;
    unsigned fail_after = 0;
    unsigned seed = 0;
};
struct BtlFaults {
    double drop = 0.0;             // probability that an arriving frame is dropped
    double corrupt = 0.0;          // ... gets one bit flipped
    std::uint64_t fail_after = 0;  // frames sent before the module dies; 0: never
    std::uint64_t seed = 0;
};
// False (out untouched) when a probability is outside 0..1.
bool validate_faults(const BtlFaultParams& raw, BtlFaults& out) noexcept;

class FaultInjector {
  public:
    FaultInjector() = default;
    // Probabilities outside 0..1 are clamped.
    FaultInjector(double drop, double corrupt, double duplicate, std::uint64_t seed) noexcept;
    // A BTL's receive-side faults (it never duplicates).
    explicit FaultInjector(const BtlFaults& f) noexcept
        : FaultInjector(f.drop, f.corrupt, 0.0, f.seed) {}

    // Kept, not worked out per frame: every arriving frame asks.
    [[nodiscard]] bool enabled() const noexcept { return enabled_; }
    // The fate of the next frame of `frame_len` bytes. A dropped frame is
    // neither corrupted nor duplicated; an empty frame is never corrupted.
    FaultPlan next(std::size_t frame_len) noexcept;
    [[nodiscard]] const FaultCounters& counters() const noexcept { return counters_; }

  private:
    std::uint64_t bits() noexcept;  // splitmix64
    double uniform() noexcept;      // [0, 1)

    double drop_ = 0.0;
    double corrupt_ = 0.0;
    double dup_ = 0.0;
    bool enabled_ = false;
    std::uint64_t state_ = 0;
    FaultCounters counters_;
};

}  // namespace plugin::common
