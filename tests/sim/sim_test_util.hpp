// Helpers shared by the sim tests (not part of sim_lib).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "network.hpp"

namespace sim::testing {

struct Delivery {
    Micros at;
    Rank src;
    Rank dst;
    LinkIndex link;
    std::vector<std::uint8_t> bytes;

    bool operator==(const Delivery&) const = default;
};

// A link-error or writable notice: which endpoint heard about which link.
struct Notice {
    Micros at;
    Rank endpoint;
    Rank peer;
    LinkIndex link;

    bool operator==(const Notice&) const = default;
};

// Attaches to every endpoint and records everything it is told.
struct Recorder {
    std::vector<Delivery> got;
    std::vector<Notice> link_errors;
    std::vector<Notice> writable;

    explicit Recorder(Network& net) {
        for (Rank r = 0; r < net.ranks(); ++r) {
            Simulator& sim = net.simulator();
            net.attach(r, Endpoint{
                              [this, r, &sim](Rank src, LinkIndex link,
                                              std::span<const std::uint8_t> bytes) {
                                  got.push_back(Delivery{
                                      sim.now(), src, r, link, {bytes.begin(), bytes.end()}});
                              },
                              [this, r, &sim](Rank dst, LinkIndex link) {
                                  writable.push_back(Notice{sim.now(), r, dst, link});
                              },
                              [this, r, &sim](Rank peer, LinkIndex link) {
                                  link_errors.push_back(Notice{sim.now(), r, peer, link});
                              },
                          });
        }
    }
};

// A frame whose payload names its own index, so order and identity are
// checkable after delivery.
inline Frame numbered_frame(Rank src, Rank dst, LinkIndex link, std::uint32_t n,
                            std::size_t size = 16) {
    Frame f{src, dst, link, std::vector<std::uint8_t>(std::max<std::size_t>(size, 4), 0)};
    for (std::size_t i = 0; i < 4; ++i)
        f.bytes[i] = static_cast<std::uint8_t>(n >> (8 * i));
    for (std::size_t i = 4; i < f.bytes.size(); ++i)
        f.bytes[i] = static_cast<std::uint8_t>(n + i);
    return f;
}

inline std::uint32_t frame_number(std::span<const std::uint8_t> bytes) {
    std::uint32_t n = 0;
    for (std::size_t i = 0; i < 4 && i < bytes.size(); ++i)
        n |= std::uint32_t{bytes[i]} << (8 * i);
    return n;
}

inline void expect_conservation(const Network& net) {
    const NetworkStats& s = net.stats();
    EXPECT_EQ(s.sent + s.duplicated, s.delivered + s.dropped + net.frames_pending());
}

}  // namespace sim::testing
