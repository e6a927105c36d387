#include <gtest/gtest.h>

#include "config.hpp"

using namespace pml::dr::core;

TEST(PmlDrConfig, DefaultsValidate) {
    Config c;
    EXPECT_EQ(validate(default_params(), c), "");
    EXPECT_EQ(c.eager_limit, 128u * 1024u);
    EXPECT_EQ(c.ack_timeout, 10 * plugin::common::kSeconds);
    EXPECT_FALSE(c.faults_enabled());
}

TEST(PmlDrConfig, RejectsOutOfRange) {
    Config c;
    RawParams p = default_params();
    p.vfrag_frags = 65;
    EXPECT_NE(validate(p, c), "");
    p = default_params();
    p.fault_drop = 1.5;
    EXPECT_NE(validate(p, c), "");
    p = default_params();
    p.csum = 7;
    EXPECT_NE(validate(p, c), "");
    p = default_params();
    p.ack_timeout_ms = 0;
    EXPECT_NE(validate(p, c), "");
}
