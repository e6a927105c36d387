#include "result.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <type_traits>

namespace plugin::common {
namespace {

Result<int> parse_digit(char c) {
    if (c < '0' || c > '9')
        return fail(ErrorCode::BadField, "not a digit");
    return c - '0';
}

Result<int> sum_digits(char a, char b) {
    const auto x = parse_digit(a);
    if (!x)
        return fail(x.error());  // propagate unchanged
    const auto y = parse_digit(b);
    if (!y)
        return fail(y.error());
    return *x + *y;
}

Result<void> check_even(int v) {
    if (v % 2 != 0)
        return fail(ErrorCode::OutOfRange, "odd");
    return {};
}

TEST(Result, HoldsValue) {
    const Result<int> r = parse_digit('7');
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(static_cast<bool>(r));
    EXPECT_EQ(r.value(), 7);
    EXPECT_EQ(*r, 7);
    EXPECT_EQ(r.value_or(-1), 7);
}

TEST(Result, HoldsError) {
    const Result<int> r = parse_digit('x');
    ASSERT_FALSE(r.has_value());
    EXPECT_FALSE(static_cast<bool>(r));
    EXPECT_EQ(r.error().code, ErrorCode::BadField);
    EXPECT_EQ(r.error().message, "not a digit");
    EXPECT_EQ(r.value_or(-1), -1);
}

TEST(Result, PropagatesFirstError) {
    EXPECT_EQ(sum_digits('2', '3').value(), 5);
    const auto r = sum_digits('2', '?');
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), ErrorCode::BadField);
}

TEST(Result, ArrowAndMutation) {
    Result<std::string> r(std::string("abc"));
    EXPECT_EQ(r->size(), 3u);
    r->push_back('d');
    *r += "e";
    EXPECT_EQ(r.value(), "abcde");
}

TEST(Result, ConvertibleSourcesBuildTheValue) {
    Result<std::string> r = "literal";  // via the converting constructor
    EXPECT_EQ(*r, "literal");
    Result<std::pair<int, int>> p(std::in_place, 1, 2);
    EXPECT_EQ(p->second, 2);
}

TEST(Result, MoveOnlyValue) {
    Result<std::unique_ptr<int>> r = std::make_unique<int>(42);
    ASSERT_TRUE(r);
    std::unique_ptr<int> owned = std::move(r).value();
    ASSERT_NE(owned, nullptr);
    EXPECT_EQ(*owned, 42);

    Result<std::unique_ptr<int>> e = fail(ErrorCode::NoResources);
    EXPECT_EQ(std::move(e).value_or(nullptr), nullptr);
}

TEST(Result, Void) {
    EXPECT_TRUE(check_even(4).has_value());
    check_even(4).value();  // no abort
    const auto r = check_even(3);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::OutOfRange);
    EXPECT_EQ(r.error().message, "odd");
    const Result<void> dflt;
    EXPECT_TRUE(dflt);
}

TEST(Result, ErrorEqualityIgnoresMessage) {
    const Error a(ErrorCode::Timeout, "ack timer");
    const Error b(ErrorCode::Timeout, "watchdog");
    const Error c(ErrorCode::Closed, "ack timer");
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_EQ(a, ErrorCode::Timeout);
    EXPECT_TRUE(Error(ErrorCode::Closed).message.empty());
}

TEST(Result, UsableInConstantExpressions) {
    constexpr Result<int> ok = 3;
    constexpr Result<int> bad = fail(ErrorCode::Timeout, "t");
    static_assert(ok.has_value() && *ok == 3);
    static_assert(!bad.has_value() && bad.error().code == ErrorCode::Timeout);
    static_assert(bad.value_or(9) == 9);
    SUCCEED();
}

TEST(Result, StaysSmall) {
    // Returned on every decode: an Error is a code and a view, nothing more.
    static_assert(sizeof(Error) <= 3 * sizeof(void*));
    static_assert(std::is_trivially_copyable_v<Error>);
    static_assert(std::is_trivially_copyable_v<Result<std::uint32_t>>);
    SUCCEED();
}

TEST(ErrorCodeNames, EveryCodeHasAUniqueName) {
    std::set<std::string_view> names;
    const auto first = static_cast<int>(kFirstErrorCode);
    const auto last = static_cast<int>(kLastErrorCode);
    for (int v = first; v <= last; ++v) {
        const auto name = to_string(static_cast<ErrorCode>(v));
        EXPECT_NE(name, "unknown") << "code " << v;
        EXPECT_FALSE(name.empty());
        EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    }
    EXPECT_EQ(names.size(), static_cast<std::size_t>(last - first + 1));
    EXPECT_EQ(to_string(ErrorCode::BadChecksum), "bad_checksum");
}

TEST(ErrorCodeNames, OutsideTheEnumIsUnknown) {
    EXPECT_EQ(to_string(static_cast<ErrorCode>(0)), "unknown");
    EXPECT_EQ(to_string(static_cast<ErrorCode>(static_cast<int>(kLastErrorCode) + 1)), "unknown");
    EXPECT_EQ(to_string(static_cast<ErrorCode>(255)), "unknown");
}

TEST(ResultDeathTest, ValueOnErrorAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const Result<int> r = fail(ErrorCode::BadLength, "length field 9 > 4");
    EXPECT_DEATH((void)r.value(), "bad_length: length field 9 > 4");
    const Result<void> v = fail(ErrorCode::Closed);
    EXPECT_DEATH(v.value(), "closed");
}

TEST(ResultDeathTest, ErrorOnValueAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const Result<int> r = 1;
    EXPECT_DEATH((void)r.error(), "error\\(\\) on a value");
}

}  // namespace
}  // namespace plugin::common
