// Connection set-up cost of btl drtcp (a benchmark, not a test; meson builds
// it, `meson test` does not run it).
//
//   bench_connect [CONNECTIONS] [ROUNDS]
//
// Two transports over loopback in one process play two ranks. Each sample
// is one new connection: fresh transports and endpoints (not timed), then
// the time from the first send() of a 64-byte frame to its delivery at the
// peer, both transports progressed in one loop: TCP connect, the handshake
// (wire v2: HELLO, REPLY, CONFIRM with their MACs) and one frame. Prints
// the median and mean per round, and the cost of the MACs alone (the six
// HMACs a handshake computes, on one core). Compiled with -DDRTCP_WIRE_V1
// against the tree before the authenticated handshake it measures the
// old HELLO exchange the same way (see btl/drtcp/README.md, "Cost").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "auth.hpp"
#include "transport.hpp"

namespace {

using namespace btl::drtcp;
using Clock = std::chrono::steady_clock;

struct Sink final : adapter::TransportEvents {
    int frames = 0;
    void on_frame(void*, std::uint8_t, std::span<std::uint8_t>) override { ++frames; }
    void on_sent(void*, bool) override {}
    void on_endpoint_failed(void*, void*) override {}
};

const core::LocalIf kLo{"lo", *core::parse_ip("127.0.0.1"), 8};

struct Rank {
    explicit Rank(core::ProcName n) : name(n), key(*plugin::common::auth::random_key()) {
        core::Config c;
        c.connect.connect_timeout = 2 * plugin::common::kSeconds;
#ifdef DRTCP_WIRE_V1
        t = std::make_unique<adapter::Transport>(c, n, 1 << 20,
                                                 plugin::common::NullLogSink::instance());
#else
        t = std::make_unique<adapter::Transport>(c, n, key, 1 << 20,
                                                 plugin::common::NullLogSink::instance());
#endif
        (void)t->add_module(kLo, 0, this);
    }
    adapter::Endpoint* add(const Rank& peer) {
#ifdef DRTCP_WIRE_V1
        return t->add_endpoint(0, peer.name, peer.t->published().at(0), nullptr);
#else
        return t->add_endpoint(0, peer.name, peer.t->published().at(0), peer.key, nullptr);
#endif
    }
    core::ProcName name;
    plugin::common::auth::Key key;
    std::unique_ptr<adapter::Transport> t;
    Sink sink;
};

double one_connection(const std::vector<std::uint8_t>& frame) {
    Rank a({7, 0}), b({7, 1});
    adapter::Endpoint* ab = a.add(b);
    b.add(a);
    plugin::common::SendQueue::Frame f;
    f.pieces[0] = {frame.data(), frame.size()};
    f.count = 1;
    f.cookie = nullptr;
    const auto t0 = Clock::now();
    if (a.t->send(ab, f) == adapter::SendResult::Unreachable)
        std::abort();
    const auto give_up = t0 + std::chrono::seconds(5);
    while (b.sink.frames == 0) {
        a.t->progress(a.sink);
        b.t->progress(b.sink);
        if (Clock::now() > give_up)
            std::abort();
    }
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

template <typename K>
double macs_per_handshake_us(const K& key, int rounds) {
    namespace auth = plugin::common::auth;
    const auth::Binding b{"drtcp-btl-v2", {7, 0}, {7, 1}, 0};
    auth::Nonce ni{}, na{};
    const auto t0 = Clock::now();
    unsigned sink = 0;
    for (int i = 0; i < rounds; ++i) {
        ni[0] = static_cast<std::uint8_t>(i);
        for (int k = 0; k < 2; ++k) {  // both ends: HELLO, REPLY, CONFIRM each
            sink += auth::step_mac(key, b, auth::Step::Hello, ni, nullptr)[0];
            sink += auth::step_mac(key, b, auth::Step::Reply, ni, &na)[0];
            sink += auth::step_mac(key, b, auth::Step::Confirm, ni, &na)[0];
        }
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (sink == 0xFFFFFFFFu)
        std::puts("");
    return us / rounds;
}

}  // namespace

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 500;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    std::vector<std::uint8_t> frame(core::kFrameHeaderSize + 64, 0x5A);
    if (!core::encode(core::FrameHeader{65, 0, 64}, frame))
        return 1;
#ifdef DRTCP_WIRE_V1
    const char* wire = "v1 (HELLO exchange)";
#else
    const char* wire = "v2 (authenticated handshake)";
#endif
    std::printf("drtcp connection set-up, wire %s, %d connections x %d rounds\n", wire, n, rounds);
    for (int r = 0; r < rounds; ++r) {
        std::vector<double> us;
        us.reserve(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
            us.push_back(one_connection(frame));
        std::sort(us.begin(), us.end());
        double sum = 0;
        for (double x : us)
            sum += x;
        std::printf("round %d: median %.1f us, mean %.1f us, p90 %.1f us\n", r, us[us.size() / 2],
                    sum / static_cast<double>(us.size()), us[us.size() * 9 / 10]);
    }
    const auto key = *plugin::common::auth::random_key();
    std::printf("MACs of one handshake (6 HMAC-SHA256, both ends), one-shot HMAC(): %.2f us\n",
                macs_per_handshake_us(key, 20000));
#ifndef DRTCP_WIRE_V1
    const plugin::common::auth::KeyedMac keyed(key);
    std::printf("the same with the context kept per peer (KeyedMac, what drtcp uses): %.2f us\n",
                macs_per_handshake_us(keyed, 20000));
#endif
    return 0;
}
