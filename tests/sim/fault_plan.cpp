#include "fault_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sim {
namespace {

void check_probability(double p, const char* what) {
    if (!(p >= 0.0 && p <= 1.0)) {  // also rejects NaN
        throw std::invalid_argument(std::string("FaultRates: ") + what + " must be in [0, 1]");
    }
}

}  // namespace

FaultPlan& FaultPlan::add_rule(FaultScope scope, const FaultRates& rates) {
    check_probability(rates.drop, "drop");
    check_probability(rates.duplicate, "duplicate");
    check_probability(rates.reorder, "reorder");
    check_probability(rates.corrupt, "corrupt");
    check_probability(rates.delay, "delay");
    if (rates.max_corrupt_bits < 1)
        throw std::invalid_argument("FaultRates: max_corrupt_bits < 1");
    if (rates.max_extra_delay < 1 || rates.max_reorder_delay < 1 || rates.max_duplicate_delay < 0) {
        throw std::invalid_argument("FaultRates: delay bounds out of range");
    }
    rules_.push_back(Rule{scope, rates});
    return *this;
}

FaultPlan& FaultPlan::add_outage(const LinkOutage& outage) {
    if (outage.up_at <= outage.down_at)
        throw std::invalid_argument("LinkOutage: up_at <= down_at");
    outages_.push_back(outage);
    return *this;
}

const FaultRates* FaultPlan::rates_for(Rank src, Rank dst, LinkIndex link) const noexcept {
    for (const Rule& rule : rules_) {
        if (rule.scope.matches(src, dst, link))
            return &rule.rates;
    }
    return nullptr;
}

FrameFate FaultPlan::draw(Rank src, Rank dst, LinkIndex link, std::size_t size) {
    FrameFate fate;
    const FaultRates* rates = rates_for(src, dst, link);
    if (rates == nullptr)
        return fate;
    // The draw order is part of the replay contract: changing it changes what
    // every recorded seed means.
    if (rng_.chance(rates->drop)) {
        fate.drop = true;
        return fate;
    }
    if (rng_.chance(rates->duplicate)) {
        fate.duplicate = true;
        fate.duplicate_delay = rng_.between(0, rates->max_duplicate_delay);
    }
    if (rng_.chance(rates->reorder))
        fate.reorder_delay = rng_.between(1, rates->max_reorder_delay);
    if (rng_.chance(rates->delay))
        fate.extra_delay = rng_.between(1, rates->max_extra_delay);
    const std::size_t total_bits = size * 8;
    if (total_bits > 0 && rng_.chance(rates->corrupt)) {
        const auto wanted = 1 + rng_.below(static_cast<std::uint64_t>(rates->max_corrupt_bits));
        const std::size_t count = std::min<std::size_t>(wanted, total_bits);
        // Distinct positions: flipping one bit twice would undo the corruption.
        while (fate.flipped_bits.size() < count) {
            const std::size_t bit = rng_.below(total_bits);
            if (std::find(fate.flipped_bits.begin(), fate.flipped_bits.end(), bit) ==
                fate.flipped_bits.end()) {
                fate.flipped_bits.push_back(bit);
            }
        }
    }
    return fate;
}

void apply_bit_flips(std::span<std::uint8_t> bytes, const std::vector<std::size_t>& bits) {
    for (const std::size_t bit : bits) {
        if (bit / 8 >= bytes.size())
            continue;
        bytes[bit / 8] = static_cast<std::uint8_t>(bytes[bit / 8] ^ (1u << (bit % 8)));
    }
}

}  // namespace sim
