// Seed selection from the environment and the replay hint on failure.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "seeds.hpp"

namespace sim {
namespace {

// Sets or clears the seed variables for one test and restores whatever the
// developer's shell had (e.g. DR_SIM_SEEDS=200) afterwards.
class SeedEnv {
  public:
    SeedEnv(const char* one, const char* many) {
        for (int i = 0; i < 2; ++i) {
            if (const char* v = std::getenv(kNames[i]))
                saved_[i] = v;
        }
        set(kNames[0], one);
        set(kNames[1], many);
    }
    ~SeedEnv() {
        for (int i = 0; i < 2; ++i)
            set(kNames[i], saved_[i] ? saved_[i]->c_str() : nullptr);
    }
    SeedEnv(const SeedEnv&) = delete;
    SeedEnv& operator=(const SeedEnv&) = delete;

  private:
    static void set(const char* name, const char* value) {
        if (value != nullptr) {
            ::setenv(name, value, 1);
        } else {
            ::unsetenv(name);
        }
    }
    static constexpr const char* kNames[2] = {"DR_SIM_SEED", "DR_SIM_SEEDS"};
    std::optional<std::string> saved_[2];
};

TEST(Seeds, DefaultCount) {
    SeedEnv env(nullptr, nullptr);
    const auto s = seeds();
    ASSERT_EQ(s.size(), kDefaultSeedCount);
    EXPECT_EQ(s.front(), 1u);
    EXPECT_EQ(s.back(), kDefaultSeedCount);
}

TEST(Seeds, CountFromEnvironment) {
    SeedEnv env(nullptr, "3");
    EXPECT_EQ(seeds(), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(Seeds, SingleReplaySeedWins) {
    SeedEnv env("123456789012", "50");
    EXPECT_EQ(seeds(), (std::vector<std::uint64_t>{123456789012ull}));
}

TEST(Seeds, GarbageIsAnErrorNotAnotherSeed) {
    {
        SeedEnv env("12abc", nullptr);
        EXPECT_THROW(seeds(), std::invalid_argument);
    }
    {
        SeedEnv env(nullptr, "-4");
        EXPECT_THROW(seeds(), std::invalid_argument);
    }
}

TEST(Seeds, FailureCarriesTheReplayLine) {
    SeedEnv env("7", nullptr);
    EXPECT_NONFATAL_FAILURE(for_each_seed([](std::uint64_t) { ADD_FAILURE() << "boom"; }),
                            "sim seed 7 failed; replay with DR_SIM_SEED=7");
    EXPECT_NONFATAL_FAILURE(for_each_seed([](std::uint64_t) { throw std::runtime_error("kaput"); }),
                            "kaput");
}

TEST(Seeds, ForEachSeedVisitsEverySeedInOrder) {
    SeedEnv env(nullptr, "4");
    std::vector<std::uint64_t> visited;
    for_each_seed([&](std::uint64_t s) { visited.push_back(s); });
    EXPECT_EQ(visited, (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace sim
