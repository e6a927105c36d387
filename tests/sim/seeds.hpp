// Seed handling for simulated tests (GoogleTest only).
//
//   DR_SIM_SEED=N   run exactly seed N (replaying a failure)
//   DR_SIM_SEEDS=K  run seeds 1..K (default kDefaultSeedCount)
//
// Every failure inside for_each_seed (or under SIM_SEED_TRACE) carries the
// line "sim seed N failed; replay with DR_SIM_SEED=N".
#pragma once
#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sim {

inline constexpr std::uint64_t kDefaultSeedCount = 20;

// Throws std::invalid_argument: a mistyped replay seed must not quietly run
// some other seed.
inline std::uint64_t parse_seed_value(std::string_view name, std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        throw std::invalid_argument(std::string(name) + ": not an unsigned integer: '" +
                                    std::string(text) + "'");
    }
    return value;
}

inline std::vector<std::uint64_t> seeds() {
    if (const char* one = std::getenv("DR_SIM_SEED"); one != nullptr && *one != '\0') {
        return {parse_seed_value("DR_SIM_SEED", one)};
    }
    std::uint64_t count = kDefaultSeedCount;
    if (const char* many = std::getenv("DR_SIM_SEEDS"); many != nullptr && *many != '\0') {
        count = parse_seed_value("DR_SIM_SEEDS", many);
    }
    std::vector<std::uint64_t> out;
    out.reserve(count);
    for (std::uint64_t s = 1; s <= count; ++s)
        out.push_back(s);
    return out;
}

inline std::string replay_hint(std::uint64_t seed) {
    return "sim seed " + std::to_string(seed) +
           " failed; replay with DR_SIM_SEED=" + std::to_string(seed);
}

// For TEST_P bodies parameterized over seeds(): tags every failure.
#define SIM_SEED_TRACE(seed) SCOPED_TRACE(::sim::replay_hint(seed))

// Runs body once per seed. Stops at the first seed that fails (the rest
// would mostly repeat the noise) and prints its replay line once more.
inline void for_each_seed(const std::function<void(std::uint64_t)>& body) {
    const bool failed_before = ::testing::Test::HasFailure();
    for (const std::uint64_t seed : seeds()) {
        {
            SIM_SEED_TRACE(seed);
            try {
                body(seed);
            } catch (const std::exception& e) {
                ADD_FAILURE() << "exception: " << e.what();
            }
        }
        if (!failed_before && ::testing::Test::HasFailure()) {
            std::fprintf(stderr, "%s\n", replay_hint(seed).c_str());
            return;
        }
    }
}

// Readable TEST_P names: INSTANTIATE_TEST_SUITE_P(S, T, ValuesIn(sim::seeds()), sim::SeedName{}).
struct SeedName {
    std::string operator()(const ::testing::TestParamInfo<std::uint64_t>& info) const {
        return "seed" + std::to_string(info.param);
    }
};

}  // namespace sim
