// Scale benchmark of the pml dr core (issue 27, item 5). Not a test: it
// prints figures, it checks nothing. Run with `meson test -C build
// --benchmark pml_dr_scale` or scripts/scale.
//
// One process's sans-I/O engine and reliable channel with 1k, 10k and 100k
// peers, as the glue sets them up (the engine knows every process of the
// job, the channel is offered one path per peer on its first use, one
// communicator holds every rank), measured by counting the heap the core
// allocates:
//   - bytes per idle peer (known, never talked to; its rank in one
//     communicator reported apart);
//   - bytes per active peer (more, once one frame went to it: the channel's
//     state for the peer, its path and its send window);
//   - finalize's flush of ACKs with 1,000 peers active: the peers it visits;
//   - an MPI_ANY_SOURCE receive with nothing queued: the sources the matcher
//     visited, and the wall time of post + cancel (the only timed figure);
//   - an incast: 1,000 senders each sending 8 messages of 2 KB to one
//     receiver that posted its receives, the real engines exchanging MATCH
//     and CREDIT frames (encoded and decoded) through the event queue and
//     virtual clock of tests/sim (5 us each way, one send per microsecond
//     per sender); frames and credit frames per message. A sender in a job of P
//     processes gets unexpected_limit / P of eager window; the senders here
//     know 2 peers, so their limit is scaled by 2 / P to give that window.
#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "channel.hpp"
#include "simulator.hpp"
#include "engine.hpp"
#include "frame_util.hpp"
#include "log.hpp"

namespace {
std::size_t g_live = 0;  // bytes the core holds on the heap (single-threaded)
}  // namespace

void* operator new(std::size_t n) {
    void* p = std::malloc(n == 0 ? 1 : n);
    if (p == nullptr)
        throw std::bad_alloc();
    g_live += malloc_usable_size(p);
    return p;
}
// g++ cannot see that this free() pairs with the malloc() above.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
    if (p == nullptr)
        return;
    g_live -= malloc_usable_size(p);
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    operator delete(p);
}
#pragma GCC diagnostic pop

namespace {

using namespace pml::dr::core;
using plugin::common::Micros;
using pml_dr_test::frame_of;
using pml_dr_test::match_frame;

constexpr std::uint32_t kJob = 7;
constexpr std::uint32_t kCid = 0;

struct NullOutput final : ChannelOutput {
    ReliableChannel* ch = nullptr;
    void offer_paths(PeerId, std::vector<PathOffer>& out) override { out.push_back({0, false}); }
    bool transmit(PeerId peer, PathId path, FrameRef ref, bool) override {
        if (ch != nullptr)
            ch->on_local_complete(peer, path, ref, true, 0);
        return false;
    }
    void send_ack(PeerId, PathId, const AckInfo&) override {}
    void send_nack(PeerId, PathId, std::uint32_t) override {}
    void send_probe(PeerId, PathId, std::uint32_t, bool) override {}
    void send_bye(PeerId, PathId) override {}
    void path_failed(PeerId, PathId) override {}
    void peer_dead(PeerId) override {}
    void acked(PeerId, FrameToken) override {}
    void abandoned(PeerId, FrameToken) override {}
};

struct Sink : EngineSink {
    std::uint64_t matched = 0;
    std::vector<std::pair<PeerId, std::uint64_t>> credits;
    void on_match(Handle, const MessageInfo&, std::span<const std::uint8_t>) override { ++matched; }
    void on_cts(Handle, PeerId, const CtsHdr&) override {}
    void on_frag(Handle, PeerId, std::uint64_t, std::span<const std::uint8_t>) override {}
    void on_credit(PeerId peer, std::uint64_t total) override { credits.emplace_back(peer, total); }
};

void memory_and_matching(std::uint32_t peers) {
    NullOutput out;
    const std::size_t base = g_live;
    Engine engine(Config{}, plugin::common::NullLogSink::instance());
    ReliableChannel ch(ChannelParams{}, out);
    out.ch = &ch;
    std::vector<PeerId> remote;
    remote.reserve(peers);
    for (std::uint32_t p = 0; p < peers; ++p)
        remote.push_back(engine.add_peer({kJob, p}));
    const std::size_t after_peers = g_live;
    Sink sink;
    engine.add_comm(kCid, std::move(remote), sink);
    const std::size_t after_comm = g_live;
    const double idle = static_cast<double>(after_peers - base) / peers;
    const double comm = static_cast<double>(after_comm - after_peers) / peers;

    // Active: one frame to each of the first min(P, 1000) peers.
    const std::uint32_t active = std::min<std::uint32_t>(peers, 1000);
    for (std::uint32_t p = 0; p < active; ++p)
        ch.submit(p, p + 1, 0);
    const double per_active = static_cast<double>(g_live - after_comm) / active;
    // Finalize's flush: the peers it visits (those with frames unacknowledged).
    ch.flush_acks(0);
    const std::uint64_t flushed = ch.flush_visits();
    // The peers acknowledge, then nothing happens for the idle period.
    for (std::uint32_t p = 0; p < active; ++p)
        ch.on_ack(p, 0, AckInfo{1, 0, 0}, 10);
    const std::size_t before_idle = g_live;
    ch.on_timer(10 + ChannelParams{}.window_idle_release);
    const double after_idle = per_active - static_cast<double>(before_idle - g_live) / active;

    // MPI_ANY_SOURCE receive with nothing queued.
    CommMatcher& m = *engine.comm(kCid);
    constexpr int kCalls = 200'000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
        auto u = engine.post_recv(kCid, static_cast<Handle>(i + 1), kAnySource, 5, sink);
        m.cancel(static_cast<Handle>(i + 1), kAnySource);
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
        kCalls;
    std::printf(
        "%7u peers: idle peer %7.1f B (+%5.1f B per rank per communicator), active peer "
        "+%8.1f B (+%6.1f B after the idle period); ANY_SOURCE recv, nothing queued: %3llu "
        "sources visited, %6.1f ns (post+cancel); final flush visits %llu peers\n",
        peers, idle, comm, per_active, after_idle,
        static_cast<unsigned long long>(m.stats().any_source_visits), ns,
        static_cast<unsigned long long>(flushed));
}

void incast(std::uint32_t job_size) {
    constexpr std::uint32_t kSenders = 1000;
    constexpr int kMsgs = 8;
    constexpr std::size_t kBytes = 2048;
    constexpr Micros kLatency = 5;
    sim::Simulator sim;
    Config rcfg;
    Engine rx(rcfg, plugin::common::NullLogSink::instance());
    std::vector<PeerId> remote;
    remote.reserve(job_size);
    for (std::uint32_t p = 0; p < job_size; ++p)
        remote.push_back(rx.add_peer({kJob, p}));
    Sink rsink;
    rx.add_comm(kCid, remote, rsink);
    const std::uint32_t me = job_size - 1;  // the receiver's rank; senders are 0..999

    struct Sender {
        std::unique_ptr<Engine> engine;
        PeerId to = 0;
        std::uint16_t seq = 0;
        Sink sink;
    };
    std::vector<Sender> senders(kSenders);
    Config scfg;
    scfg.unexpected_limit = rcfg.unexpected_limit * 2 / job_size;
    for (std::uint32_t s = 0; s < kSenders; ++s) {
        Sender& x = senders[s];
        x.engine = std::make_unique<Engine>(scfg, plugin::common::NullLogSink::instance());
        x.engine->add_peer({kJob, s});
        x.to = x.engine->add_peer({kJob, me});
        x.engine->add_comm(kCid, {x.to, x.to}, x.sink);  // only the window matters here
    }
    // The receiver posted every receive.
    Handle h = 1;
    for (std::uint32_t s = 0; s < kSenders; ++s)
        for (int i = 0; i < kMsgs; ++i)
            (void)rx.post_recv(kCid, h++, static_cast<std::int32_t>(s), 1, rsink);

    // Each sender sends its messages back to back, one per microsecond (an
    // eager send completes locally at once); frames take 5 us each way.
    std::uint64_t eager = 0, rndv = 0, credit_frames = 0;
    const std::vector<std::uint8_t> payload(kBytes, 0x5A);
    auto arrive = [&](std::vector<std::uint8_t> f) {
        rx.on_frame(f, rsink);
        for (const auto& [peer, total] : rsink.credits) {
            CreditHdr c;
            c.common.type = FrameType::Credit;
            c.common.src_jobid = kJob;
            c.common.src_vpid = me;
            c.released_total = total;
            ++credit_frames;
            const PeerId to = peer;
            sim.schedule_after(kLatency, [&senders, to, f = frame_of(c)] {
                senders[to].engine->on_frame(f, senders[to].sink);
            });
        }
        rsink.credits.clear();
    };
    for (int i = 0; i < kMsgs; ++i) {
        for (std::uint32_t s = 0; s < kSenders; ++s) {
            sim.schedule(static_cast<Micros>(i), [&, s] {
                Sender& x = senders[s];
                const std::uint16_t seq = x.seq++;
                const bool fits = x.engine->try_charge_eager(x.to, kBytes);
                // Past the window: a data-less RNDV, then its CTS and a FRAG
                // (only the RNDV is simulated; the other two are counted).
                (fits ? eager : rndv) += 1;
                auto f = match_frame(
                    kJob, s, kCid, static_cast<std::int32_t>(s), 1, seq,
                    fits ? std::span<const std::uint8_t>(payload) : std::span<const std::uint8_t>(),
                    false);
                sim.schedule_after(kLatency,
                                   [&arrive, f = std::move(f)]() mutable { arrive(std::move(f)); });
            });
        }
    }
    (void)sim.run_until_idle();
    const double msgs = static_cast<double>(kSenders) * kMsgs;
    const double frames = static_cast<double>(eager + 3 * rndv + credit_frames);
    std::printf(
        "%7u ranks: incast of %u senders x %d x %zu B: eager window %llu B, %.0f%% "
        "eager, %.3f credit frames/msg, %.3f frames/msg (ACKs not counted)\n",
        job_size, kSenders, kMsgs, kBytes,
        static_cast<unsigned long long>(senders[0].engine->eager_window()),
        100.0 * static_cast<double>(eager) / msgs, static_cast<double>(credit_frames) / msgs,
        frames / msgs);
}

}  // namespace

int main() {
    for (const std::uint32_t p : {1'000u, 10'000u, 100'000u})
        memory_and_matching(p);
    for (const std::uint32_t p : {1'000u, 10'000u, 100'000u})
        incast(p);
    return 0;
}
