// What goes wrong on the simulated network, and when.
//
// A FaultPlan holds per-frame fault probabilities (optionally restricted to a
// link index and/or a direction) and scheduled link outages. It owns the one
// random stream of a run: every per-frame decision and every jitter sample is
// drawn here, in send order, so a seed fully determines a run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rng.hpp"
#include "time.hpp"

namespace sim {

using plugin::common::kNever;
using plugin::common::Micros;

using Rank = int;
using LinkIndex = int;

// Wildcard for a rank or link index in scopes and selectors.
inline constexpr int kAny = -1;

struct FaultRates {
    double drop = 0.0;
    double duplicate = 0.0;
    double reorder = 0.0;  // held back so that later frames on the link may pass it
    double corrupt = 0.0;
    double delay = 0.0;                // held back; on an ordered link later frames wait behind it
    int max_corrupt_bits = 3;          // a corrupted frame gets 1..max distinct flipped bits
    Micros max_extra_delay = 200;      // delay fault adds U[1, max]
    Micros max_reorder_delay = 500;    // reorder fault adds U[1, max]
    Micros max_duplicate_delay = 100;  // the copy arrives U[0, max] after the original
};

// Which frames a rule applies to; src/dst make it one direction only.
struct FaultScope {
    Rank src = kAny;
    Rank dst = kAny;
    LinkIndex link = kAny;

    bool matches(Rank s, Rank d, LinkIndex l) const noexcept {
        return (src == kAny || src == s) && (dst == kAny || dst == d) &&
               (link == kAny || link == l);
    }
};

// Which links an outage takes down: both directions between a and b on one
// link index. kAny widens it: {link, a, kAny} is rank a's NIC on that rail,
// {link} the whole rail, {kAny, a} isolates rank a.
struct LinkSelector {
    LinkIndex link = kAny;
    Rank a = kAny;
    Rank b = kAny;

    bool matches(Rank s, Rank d, LinkIndex l) const noexcept {
        if (link != kAny && link != l)
            return false;
        const auto one_way = [this](Rank x, Rank y) {
            return (a == kAny || a == x) && (b == kAny || b == y);
        };
        return one_way(s, d) || one_way(d, s);
    }
};

struct LinkOutage {
    LinkSelector where;
    Micros down_at = 0;
    Micros up_at = kNever;  // kNever: stays down
};

// The fate of one sent frame, decided when it is sent.
struct FrameFate {
    bool drop = false;
    bool duplicate = false;
    Micros duplicate_delay = 0;
    Micros extra_delay = 0;
    Micros reorder_delay = 0;               // > 0: later frames may overtake it
    std::vector<std::size_t> flipped_bits;  // bit i is bit (i % 8) of byte i / 8
};

class FaultPlan {
  public:
    explicit FaultPlan(std::uint64_t seed = 0) : seed_(seed), rng_(seed) {}

    // Rules are tried in order and the first match wins, so a narrow rule goes
    // before a broad one. Throws std::invalid_argument on nonsense rates.
    FaultPlan& add_rule(FaultScope scope, const FaultRates& rates);
    FaultPlan& set_all(const FaultRates& rates) { return add_rule(FaultScope{}, rates); }
    FaultPlan& add_outage(const LinkOutage& outage);
    // On: endpoints hear on_link_error when a link goes down and send() on a
    // down link returns LinkDown. Off: a down link is a silent black hole.
    FaultPlan& report_link_errors(bool on) {
        report_link_errors_ = on;
        return *this;
    }

    std::uint64_t seed() const noexcept { return seed_; }
    const std::vector<LinkOutage>& outages() const noexcept { return outages_; }
    bool reports_link_errors() const noexcept { return report_link_errors_; }
    // nullptr when no rule matches: the frame travels untouched.
    const FaultRates* rates_for(Rank src, Rank dst, LinkIndex link) const noexcept;

    // Consumes randomness: call exactly once per sent frame.
    FrameFate draw(Rank src, Rank dst, LinkIndex link, std::size_t size);
    Micros draw_jitter(Micros max_jitter) { return rng_.between(0, max_jitter); }

  private:
    struct Rule {
        FaultScope scope;
        FaultRates rates;
    };

    std::uint64_t seed_;
    Rng rng_;
    std::vector<Rule> rules_;
    std::vector<LinkOutage> outages_;
    bool report_link_errors_ = true;
};

// Flips the listed bits in place; positions past the end are ignored.
void apply_bit_flips(std::span<std::uint8_t> bytes, const std::vector<std::size_t>& bits);

}  // namespace sim
