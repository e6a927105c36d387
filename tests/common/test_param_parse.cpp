// Strict MCA parameter parsing: junk, overflow, negative sizes and empty text
// are errors (Open MPI itself reads them as 0 or as all ones).
#include <gtest/gtest.h>

#include "param_parse.hpp"

using namespace plugin::common;

namespace {

constexpr ParamEnumValue kCsum[] = {{0, "auto"}, {1, "always"}, {2, "never"}, {0, nullptr}};

ParamParse p(ParamKind k, std::string_view text, ParamRange r = ParamRange::Any) {
    return parse_param(k, text, kCsum, r);
}

}  // namespace

TEST(ParamParse, UnsignedAcceptsDecimalHexAndSuffixes) {
    EXPECT_EQ(p(ParamKind::Unsigned, "0").value.size, 0u);
    EXPECT_EQ(p(ParamKind::Unsigned, " 42 ").value.size, 42u);
    EXPECT_EQ(p(ParamKind::Unsigned, "+7").value.size, 7u);
    EXPECT_EQ(p(ParamKind::Unsigned, "0x10").value.size, 16u);
    EXPECT_EQ(p(ParamKind::Unsigned, "4k").value.size, 4096u);
    EXPECT_EQ(p(ParamKind::SizeT, "2M").value.size, 2u << 20);
    EXPECT_EQ(p(ParamKind::SizeT, "3G").value.size, 3ull << 30);
    EXPECT_EQ(p(ParamKind::Unsigned, "4294967295").value.size, 4294967295u);
    EXPECT_TRUE(p(ParamKind::Unsigned, "-0").ok);
}

TEST(ParamParse, UnsignedRejectsJunkNegativeOverflowAndEmpty) {
    for (const char* bad : {"abc", "", "   ", "12abc", "1.5", "0x", "--1", "k", "1kk", "1 2"}) {
        const ParamParse r = p(ParamKind::Unsigned, bad);
        EXPECT_FALSE(r.ok) << '"' << bad << '"';
        EXPECT_FALSE(r.reason.empty()) << bad;
    }
    EXPECT_EQ(p(ParamKind::Unsigned, "").reason, "empty");
    EXPECT_EQ(p(ParamKind::Unsigned, "abc").reason, "not a number");
    EXPECT_NE(p(ParamKind::Unsigned, "-5").reason.find("negative"), std::string::npos);
    EXPECT_NE(p(ParamKind::SizeT, "-1").reason.find("negative"), std::string::npos);
    EXPECT_NE(p(ParamKind::Unsigned, "4294967296").reason.find("out of range"), std::string::npos);
    EXPECT_NE(p(ParamKind::Unsigned, "4194304k").reason.find("out of range"), std::string::npos);
    EXPECT_FALSE(p(ParamKind::SizeT, "99999999999999999999").ok);
    EXPECT_FALSE(p(ParamKind::SizeT, "17179869184G").ok);  // 2^34 G = 2^64
    EXPECT_TRUE(p(ParamKind::SizeT, "18446744073709551615").ok);
}

TEST(ParamParse, IntIsSigned32Bit) {
    EXPECT_EQ(p(ParamKind::Int, "-5").value.integer, -5);
    EXPECT_EQ(p(ParamKind::Int, "2147483647").value.integer, 2147483647);
    EXPECT_EQ(p(ParamKind::Int, "-2147483648").value.integer, -2147483648LL);
    EXPECT_FALSE(p(ParamKind::Int, "2147483648").ok);
    EXPECT_FALSE(p(ParamKind::Int, "-2147483649").ok);
    // Open MPI reads this one as -1 (all ones truncated to int).
    EXPECT_FALSE(p(ParamKind::Int, "99999999999999999999").ok);
    EXPECT_FALSE(p(ParamKind::Int, "x").ok);
}

TEST(ParamParse, DoubleMustParseCompletelyAndBeFinite) {
    EXPECT_DOUBLE_EQ(p(ParamKind::Double, "0.25").value.real, 0.25);
    EXPECT_DOUBLE_EQ(p(ParamKind::Double, "1e-3").value.real, 0.001);
    EXPECT_DOUBLE_EQ(p(ParamKind::Double, "+2").value.real, 2.0);
    for (const char* bad : {"abc", "", "0.5x", "nan", "inf", "-inf", "1e999", "0,5"})
        EXPECT_FALSE(p(ParamKind::Double, bad).ok) << bad;
    EXPECT_EQ(p(ParamKind::Double, "abc").reason, "not a number");
}

TEST(ParamParse, ProbabilityIsBelowOne) {
    EXPECT_TRUE(p(ParamKind::Double, "0", ParamRange::Probability).ok);
    EXPECT_TRUE(p(ParamKind::Double, "0.999", ParamRange::Probability).ok);
    EXPECT_FALSE(p(ParamKind::Double, "1.0", ParamRange::Probability).ok);
    EXPECT_FALSE(p(ParamKind::Double, "1", ParamRange::Probability).ok);
    EXPECT_FALSE(p(ParamKind::Double, "2", ParamRange::Probability).ok);
    EXPECT_FALSE(p(ParamKind::Double, "-0.1", ParamRange::Probability).ok);
    EXPECT_NE(p(ParamKind::Double, "1.0", ParamRange::Probability).reason.find("below 1"),
              std::string::npos);
    // Without the range a double may be anything finite.
    EXPECT_TRUE(p(ParamKind::Double, "1.0").ok);
}

TEST(ParamParse, BoolWords) {
    for (const char* t : {"true", "TRUE", "yes", "on", "1", "enabled", "t", "y"}) {
        EXPECT_TRUE(p(ParamKind::Bool, t).ok) << t;
        EXPECT_TRUE(p(ParamKind::Bool, t).value.flag) << t;
    }
    for (const char* f : {"false", "No", "off", "0", "disabled", "f", "n"}) {
        EXPECT_TRUE(p(ParamKind::Bool, f).ok) << f;
        EXPECT_FALSE(p(ParamKind::Bool, f).value.flag) << f;
    }
    for (const char* bad : {"2", "maybe", "", "truex"})
        EXPECT_FALSE(p(ParamKind::Bool, bad).ok) << bad;
}

TEST(ParamParse, EnumByNameOrNumber) {
    EXPECT_EQ(p(ParamKind::Enum, "always").value.integer, 1);
    EXPECT_EQ(p(ParamKind::Enum, "NEVER").value.integer, 2);
    EXPECT_EQ(p(ParamKind::Enum, "0").value.integer, 0);
    const ParamParse bogus = p(ParamKind::Enum, "bogus");
    EXPECT_FALSE(bogus.ok);
    EXPECT_EQ(bogus.reason, "must be one of: auto, always, never");
    EXPECT_FALSE(p(ParamKind::Enum, "3").ok);
    EXPECT_FALSE(p(ParamKind::Enum, "").ok);
}

TEST(ParamParse, FormatRoundTrips) {
    for (ParamKind k : {ParamKind::Int, ParamKind::Unsigned, ParamKind::SizeT, ParamKind::Bool,
                        ParamKind::Double, ParamKind::Enum}) {
        ParamValue v;
        v.integer = 2;
        v.size = 131072;
        v.real = 0.01;
        v.flag = true;
        const std::string text = format_param(k, v, kCsum);
        const ParamParse back = parse_param(k, text, kCsum);
        ASSERT_TRUE(back.ok) << text;
        EXPECT_EQ(format_param(k, back.value, kCsum), text);
    }
    ParamValue v;
    v.integer = 1;
    EXPECT_EQ(format_param(ParamKind::Enum, v, kCsum), "always");
    v.real = 0.0;
    EXPECT_EQ(format_param(ParamKind::Double, v), "0");
}

TEST(ParamParse, MessageNamesParameterValueAndReason) {
    EXPECT_EQ(bad_param_message("pml_dr_fault_drop", "abc", "not a number"),
              "invalid value for MCA parameter pml_dr_fault_drop: \"abc\" (not a number)");
}
