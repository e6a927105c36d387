// The parameter table against Open MPI's real variable system: every
// non-string parameter is registered as a string and parsed strictly, a bad
// value keeps the default and is reported naming parameter and value.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "mca_params.hpp"
#include "opal_prelude.hpp"

using plugin::common::explain_invalid;
using plugin::common::param_error;
using plugin::common::ParamEnumValue;
using plugin::common::ParamRange;
using plugin::common::ParamSpec;
using plugin::common::ParamType;
using plugin::common::register_params;

namespace {

constexpr ParamEnumValue kModes[] = {{0, "auto"}, {1, "always"}, {2, "never"}, {0, nullptr}};

struct Storage {
    unsigned count = 0;
    std::size_t limit = 0;
    int level = 0;
    bool flag = false;
    double drop = 0.0;
    int mode = 0;
    unsigned probe = 0;
    unsigned probe_max = 0;
    const char* where = nullptr;  // MCA string storage
};

// A component of its own per test: names do not collide across tests.
mca_base_component_t make_component(const char* name) {
    mca_base_component_t c;
    std::memset(&c, 0, sizeof c);
    std::strncpy(c.mca_project_name, "opal", sizeof c.mca_project_name - 1);
    std::strncpy(c.mca_type_name, "drtest", sizeof c.mca_type_name - 1);
    std::strncpy(c.mca_component_name, name, sizeof c.mca_component_name - 1);
    return c;
}

int register_all(const mca_base_component_t* c, Storage& s) {
    const ParamSpec specs[] = {
        ParamSpec{"count", "a count", ParamType::Unsigned, &s.count, 7},
        ParamSpec{"limit", "a size", ParamType::SizeT, &s.limit, 4096},
        ParamSpec{"level", "an int", ParamType::Int, &s.level, -3},
        ParamSpec{"flag", "a bool", ParamType::Bool, &s.flag, 1},
        ParamSpec{"drop", "a probability", ParamType::Double, &s.drop, 0, 0.25, nullptr, nullptr, 4,
                  ParamRange::Probability},
        ParamSpec{"mode", "an enum", ParamType::Enum, &s.mode, 0, 0.0, nullptr, kModes},
        ParamSpec{"probe", "a time", ParamType::Unsigned, &s.probe, 100},
        ParamSpec{"probe_max", "a longer time", ParamType::Unsigned, &s.probe_max, 1000},
        ParamSpec{"where", "a string", ParamType::String, &s.where, 0, 0.0, ""},
    };
    return register_params(c, specs);
}

void set(const char* component, const char* param, const char* value) {
    const std::string name = std::string("OMPI_MCA_drtest_") + component + "_" + param;
    ::setenv(name.c_str(), value, 1);
}

class McaParamsTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        int argc = 0;
        char** argv = nullptr;
        ASSERT_EQ(opal_init_util(&argc, &argv), OPAL_SUCCESS);
    }
};

TEST_F(McaParamsTest, DefaultsWhenNothingIsSet) {
    const mca_base_component_t c = make_component("defaults");
    Storage s;
    ASSERT_EQ(register_all(&c, s), 0);
    EXPECT_EQ(s.count, 7u);
    EXPECT_EQ(s.limit, 4096u);
    EXPECT_EQ(s.level, -3);
    EXPECT_TRUE(s.flag);
    EXPECT_DOUBLE_EQ(s.drop, 0.25);
    EXPECT_EQ(s.mode, 0);
    EXPECT_EQ(param_error(&c), "");
}

TEST_F(McaParamsTest, GoodValuesInEverySpelling) {
    set("good", "count", " 0x20 ");
    set("good", "limit", "64k");
    set("good", "level", "-7");
    set("good", "flag", "off");
    set("good", "drop", "0.5");
    set("good", "mode", "NEVER");
    const mca_base_component_t c = make_component("good");
    Storage s;
    ASSERT_EQ(register_all(&c, s), 0);
    EXPECT_EQ(param_error(&c), "");
    EXPECT_EQ(s.count, 32u);
    EXPECT_EQ(s.limit, 65536u);
    EXPECT_EQ(s.level, -7);
    EXPECT_FALSE(s.flag);
    EXPECT_DOUBLE_EQ(s.drop, 0.5);
    EXPECT_EQ(s.mode, 2);
}

TEST_F(McaParamsTest, JunkKeepsTheDefaultAndIsReported) {
    set("junk", "count", "abc");
    const mca_base_component_t c = make_component("junk");
    Storage s;
    // Still registers: the component must load to say what is wrong.
    ASSERT_EQ(register_all(&c, s), 0);
    EXPECT_EQ(s.count, 7u);
    EXPECT_EQ(param_error(&c),
              "invalid value for MCA parameter drtest_junk_count: \"abc\" (not a number)");
}

TEST_F(McaParamsTest, EnumOpenMpiWouldRefuseStillRegisters) {
    set("enum", "mode", "bogus");
    const mca_base_component_t c = make_component("enum");
    Storage s;
    ASSERT_EQ(register_all(&c, s), 0);
    EXPECT_EQ(param_error(&c),
              "invalid value for MCA parameter drtest_enum_mode: \"bogus\" "
              "(must be one of: auto, always, never)");
}

TEST_F(McaParamsTest, ProbabilityOfOneEmptyAndOverflowAreErrors) {
    set("prob", "drop", "1.0");
    const mca_base_component_t p = make_component("prob");
    Storage s;
    ASSERT_EQ(register_all(&p, s), 0);
    EXPECT_NE(param_error(&p).find("drtest_prob_drop: \"1.0\""), std::string::npos);
    EXPECT_DOUBLE_EQ(s.drop, 0.25);

    set("empty", "limit", "");
    const mca_base_component_t e = make_component("empty");
    ASSERT_EQ(register_all(&e, s), 0);
    EXPECT_EQ(param_error(&e), "invalid value for MCA parameter drtest_empty_limit: \"\" (empty)");

    set("big", "level", "99999999999999999999");
    const mca_base_component_t b = make_component("big");
    ASSERT_EQ(register_all(&b, s), 0);
    EXPECT_NE(param_error(&b).find("out of range"), std::string::npos);
    EXPECT_EQ(s.level, -3);
}

TEST_F(McaParamsTest, ValidateMessageGetsTheValueOfTheLongestNameItMentions) {
    set("range", "probe", "50");
    set("range", "probe_max", "20");
    const mca_base_component_t c = make_component("range");
    Storage s;
    ASSERT_EQ(register_all(&c, s), 0);
    EXPECT_EQ(param_error(&c), "");
    EXPECT_EQ(explain_invalid(&c, "drtest_range_probe_max must be at least 100"),
              "invalid value for MCA parameter drtest_range_probe_max: \"20\" "
              "(drtest_range_probe_max must be at least 100)");
    EXPECT_EQ(explain_invalid(&c, "drtest_range_probe must be positive"),
              "invalid value for MCA parameter drtest_range_probe: \"50\" "
              "(drtest_range_probe must be positive)");
    // Not set by the user: nothing to name.
    EXPECT_EQ(explain_invalid(&c, "drtest_range_count must be odd"),
              "invalid MCA parameters: drtest_range_count must be odd");
}

TEST_F(McaParamsTest, ValidateMessageAboutAStringNamesItsValue) {
    set("strs", "where", "eth9");
    const mca_base_component_t c = make_component("strs");
    Storage s;
    ASSERT_EQ(register_all(&c, s), 0);
    ASSERT_NE(s.where, nullptr);
    EXPECT_STREQ(s.where, "eth9");
    EXPECT_EQ(param_error(&c), "");
    EXPECT_EQ(explain_invalid(&c, "drtest_strs_where names nothing"),
              "invalid value for MCA parameter drtest_strs_where: \"eth9\" "
              "(drtest_strs_where names nothing)");
}

}  // namespace
