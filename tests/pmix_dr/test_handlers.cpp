// pmix dr HandlerChain: handlers for a code run before default ones, each
// group prepended-first then in registration order; remove by reference
// hands back the registration's token.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "handlers.hpp"

namespace {

using plugin::pmix::core::HandlerChain;
using Tokens = std::vector<std::uint64_t>;

TEST(PmixHandlers, CodeSpecificBeforeDefaultPrependFirst) {
    HandlerChain c;
    c.add({}, false, 1);          // default
    c.add({-25, -26}, false, 2);  // specific
    c.add({}, true, 3);           // default, prepended
    c.add({-25}, false, 4);       // specific
    c.add({-25}, true, 5);        // specific, prepended
    c.add({-30}, false, 6);       // another code
    EXPECT_EQ(c.for_event(-25), (Tokens{5, 2, 4, 3, 1}));
    EXPECT_EQ(c.for_event(-26), (Tokens{2, 3, 1}));
    EXPECT_EQ(c.for_event(-99), (Tokens{3, 1}));
    EXPECT_EQ(c.size(), 6u);
}

TEST(PmixHandlers, RemoveByReference) {
    HandlerChain c;
    const auto a = c.add({-25}, false, 1);
    const auto b = c.add({}, false, 2);
    const auto d = c.add({-25}, false, 3);
    EXPECT_NE(a, b);
    EXPECT_NE(b, d);
    EXPECT_EQ(c.remove(a), std::optional<std::uint64_t>(1));  // its token
    EXPECT_EQ(c.remove(a), std::nullopt);
    EXPECT_EQ(c.remove(12345), std::nullopt);
    EXPECT_EQ(c.for_event(-25), (Tokens{3, 2}));
    EXPECT_EQ(c.remove(b), std::optional<std::uint64_t>(2));
    EXPECT_EQ(c.for_event(-25), (Tokens{3}));
    EXPECT_TRUE(c.for_event(-1).empty());
    const auto e = c.add({}, false, 4);  // references are never reused
    EXPECT_NE(e, a);
    EXPECT_NE(e, b);
    EXPECT_EQ(c.size(), 2u);
}

}  // namespace
