// oob drtcp parameter validation.
#include <gtest/gtest.h>

#include "config.hpp"

namespace {

using namespace oob::drtcp::core;

TEST(OobConfig, DefaultsAreValid) {
    Config c;
    EXPECT_EQ(validate(RawParams{}, c), "");
    EXPECT_EQ(c.max_msg_bytes, 256u << 20);
    EXPECT_EQ(c.port_min, 0);
    EXPECT_EQ(c.retry.attempts, 10u);
}

TEST(OobConfig, PortsAndInterfaces) {
    Config c;
    RawParams r;
    r.static_ports = "7000-7010";
    r.if_include = "lo,10.0.0.0/8";
    EXPECT_EQ(validate(r, c), "");
    EXPECT_EQ(c.port_min, 7000);
    EXPECT_EQ(c.port_max, 7010);
    EXPECT_TRUE(c.include_set);
    r.static_ports = "7010-7000";
    EXPECT_NE(validate(r, c), "");
    r.static_ports = "70000";
    EXPECT_NE(validate(r, c), "");
    r.static_ports = "12345";
    EXPECT_EQ(validate(r, c), "");
    EXPECT_EQ(c.port_max, 12345);
    r.if_exclude = "eth0";
    EXPECT_NE(validate(r, c), "");  // both lists
    r.if_exclude = nullptr;
    r.if_include = "10.0.0.0/99";
    EXPECT_NE(validate(r, c), "");
}

TEST(OobConfig, Bounds) {
    Config c;
    RawParams r;
    r.max_msg_size_mb = 0;
    EXPECT_NE(validate(r, c), "");
    r = RawParams{};
    r.connect_attempts = 0;
    EXPECT_NE(validate(r, c), "");
    r = RawParams{};
    r.keepalive_probes = 0;
    EXPECT_NE(validate(r, c), "");
    r.keepalive_time_s = 0;  // keepalive off: probes do not matter
    EXPECT_EQ(validate(r, c), "");
    r = RawParams{};
    r.user_timeout_ms = 1999;
    EXPECT_NE(validate(r, c), "");
    r.user_timeout_ms = 0;  // off: the keepalive parameters apply
    EXPECT_EQ(validate(r, c), "");
    EXPECT_EQ(c.user_timeout_ms, 0u);
}

TEST(OobConfig, AUserTimeoutByDefault) {
    // A daemon cut off from mpirun must be noticed in seconds, not after the
    // kernel's keepalive or retransmission limits (minutes).
    Config c;
    ASSERT_EQ(validate(RawParams{}, c), "");
    EXPECT_GT(c.user_timeout_ms, 0u);
    EXPECT_LE(c.user_timeout_ms, 60000u);
}

}  // namespace
