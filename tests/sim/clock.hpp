// Virtual time for simulated runs. Nothing in a test may read a real clock:
// time moves only when the simulator advances it, so a run is reproducible
// and a 10-second protocol timeout costs no wall time.
#pragma once
#include <stdexcept>

#include "time.hpp"

namespace sim {

using plugin::common::Micros;

class VirtualClock {
  public:
    explicit VirtualClock(Micros start = 0) : now_(start) {}

    Micros now() const noexcept { return now_; }

    // Time never runs backwards: an engine that saw `now` once may rely on it.
    // A backwards step is a simulator bug, so it is loud rather than ignored.
    void advance_to(Micros t) {
        if (t < now_)
            throw std::logic_error("VirtualClock::advance_to: time would run backwards");
        now_ = t;
    }

  private:
    Micros now_;
};

}  // namespace sim
