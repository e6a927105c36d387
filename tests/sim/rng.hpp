// Seeded random source for the simulator. Every random decision of a run
// (faults, jitter) comes from one of these, so a run is a pure function of
// its seed. The helpers below avoid std::*_distribution on purpose: those are
// implementation-defined, and a failing seed must replay on any toolchain.
#pragma once
#include <cstdint>
#include <random>

#include "time.hpp"

namespace sim {

using plugin::common::Micros;

class Rng {
  public:
    explicit Rng(std::uint64_t seed) : engine_(seed) {}

    std::uint64_t next() { return engine_(); }

    // Uniform in [0, 1) with 53 bits of precision.
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    // True with probability p. A non-positive p consumes no randomness, so a
    // fault class that is switched off does not shift the stream of the others.
    bool chance(double p) {
        if (p <= 0.0)
            return false;
        if (p >= 1.0)
            return true;
        return unit() < p;
    }

    // Uniform in [0, n); n == 0 yields 0. The modulo bias is below 2^-40 for
    // the small ranges used here, far beneath anything a test could observe.
    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }

    // Uniform in [lo, hi]; an empty range yields lo without drawing.
    Micros between(Micros lo, Micros hi) {
        if (hi <= lo)
            return lo;
        const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
        return lo + static_cast<Micros>(below(span));
    }

  private:
    std::mt19937_64 engine_;
};

}  // namespace sim
