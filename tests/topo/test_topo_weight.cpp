#include "topo_weight.hpp"

#include <gtest/gtest.h>

namespace plugin::common::topo {
namespace {

constexpr Weights kTcp{100, 1000};  // btl drtcp's defaults
constexpr Weights kUcx{1, 10000};   // btl drucx's

DeviceLocality at(Locality k, double ratio = 1.0) {
    DeviceLocality l;
    l.kind = k;
    l.distance_ratio = ratio;
    return l;
}

TEST(TopoWeight, WhereTheTopologySaysNothingTheWeightsStay) {
    for (Locality k :
         {Locality::Unknown, Locality::SingleNuma, Locality::Unbound, Locality::Near}) {
        for (std::uint64_t speed : {0ull, 1000ull, 100000ull}) {
            EXPECT_EQ(topo_weights(kTcp, at(k, 2.1), speed), kTcp) << locality_name(k);
            EXPECT_EQ(topo_weights(kUcx, at(k, 2.1), speed), kUcx) << locality_name(k);
        }
    }
    // A "far" device at ratio 1 (a matrix that says nothing) changes nothing either.
    EXPECT_EQ(topo_weights(kTcp, at(Locality::Far, 1.0), 0), kTcp);
}

TEST(TopoWeight, FarDeviceRanksBelowNear) {
    const Weights near = topo_weights(kTcp, at(Locality::Near), 0);
    const Weights far = topo_weights(kTcp, at(Locality::Far, 2.1), 0);
    EXPECT_GT(far.latency, near.latency);
    EXPECT_LT(far.bandwidth, near.bandwidth);
    EXPECT_EQ(far.latency, 210u);
    EXPECT_EQ(far.bandwidth, 476u);  // 1000 / 2.1
    // drucx's latency 1 still moves (eager frames avoid the far device).
    const Weights ufar = topo_weights(kUcx, at(Locality::Far, 1.1), 0);
    EXPECT_EQ(ufar.latency, 2u);
    EXPECT_EQ(ufar.bandwidth, 9090u);
}

TEST(TopoWeight, FasterLinksPayMoreForCrossingSockets) {
    const DeviceLocality far = at(Locality::Far, 2.0);
    const Weights slow = topo_weights(kTcp, far, 1000);    // 1 Gb/s: a quarter of the cost
    const Weights mid = topo_weights(kTcp, far, 5000);     // half
    const Weights fast = topo_weights(kTcp, far, 100000);  // all of it
    const Weights unknown = topo_weights(kTcp, far, 0);    // all of it
    EXPECT_EQ(slow.bandwidth, 800u);
    EXPECT_EQ(mid.bandwidth, 666u);
    EXPECT_EQ(fast.bandwidth, 500u);
    EXPECT_EQ(unknown, fast);
    // Latency does not depend on the link.
    EXPECT_EQ(slow.latency, fast.latency);
    EXPECT_LT(slow.bandwidth, kTcp.bandwidth);
}

TEST(TopoWeight, Extremes) {
    // No bandwidth configured stays none (the BML then shares evenly).
    EXPECT_EQ(topo_weights({100, 0}, at(Locality::Far, 2.0), 0).bandwidth, 0u);
    // Zero latency still ranks the far device behind.
    EXPECT_EQ(topo_weights({0, 1000}, at(Locality::Far, 2.0), 0).latency, 1u);
    // A tiny bandwidth never becomes 0 (which would mean "unknown").
    EXPECT_EQ(topo_weights({100, 1}, at(Locality::Far, 2.0), 0).bandwidth, 1u);
    // A bogus ratio is capped; the maximum latency does not wrap.
    const Weights w = topo_weights({UINT32_MAX, 1000}, at(Locality::Far, 1e9), 0);
    EXPECT_EQ(w.latency, UINT32_MAX);
    EXPECT_EQ(w.bandwidth, static_cast<std::uint32_t>(1000 / kMaxDistanceRatio));
}

TEST(TopoWeight, DescribeSaysWhatWasChosen) {
    DeviceLocality far = at(Locality::Far, 2.1);
    far.detail = "NUMA 1, distance 21/10";
    const std::string s = describe("eth3", far, 25000, kTcp, topo_weights(kTcp, far, 25000));
    EXPECT_EQ(s,
              "eth3: far (NUMA 1, distance 21/10), 25000 Mbps: latency 100 -> 210, bandwidth "
              "1000 -> 476");
    EXPECT_EQ(describe("lo", at(Locality::SingleNuma), 0, kTcp, kTcp),
              "lo: single NUMA node, speed unknown: latency 100 -> 100, bandwidth 1000 -> 1000 "
              "(unchanged)");
}

}  // namespace
}  // namespace plugin::common::topo
