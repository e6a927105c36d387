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
//     state for the peer, its path and its send window), and once it was
//     quiet for the idle period (the peer at rest: its rest record);
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
#include <deque>
#include <map>
#include <memory>
#include <type_traits>
#include <new>
#include <vector>

#include "channel.hpp"
#include "engine.hpp"
#include "reliable_engine.hpp"
#include "simulator.hpp"
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

// The incast: every process is a ReliableEngine (engine and channel, the
// production wiring) whose channel outputs go onto the simulated network
// (5 us each way, frames done at once by their "BTL"); ACK frames carry the
// receiver's credit reports, CREDIT frames go where no ACK would. A sender
// past its window holds a message while the answer to its credit question
// is on its way (retried whenever a frame reaches it, as progress would),
// else sends it as a data-less RNDV, whose CTS and FRAG are counted, not
// simulated.
class Incast {
  public:
    static constexpr int kMsgs = 8;
    static constexpr std::size_t kBytes = 2048;
    static constexpr Micros kLatency = 5;

    // 1,000 senders (999 in a job of 1,000: the receiver is the last rank).
    explicit Incast(std::uint32_t job_size)
        : job_size_(job_size), me_(job_size - 1), senders_(std::min(1000u, job_size - 1)) {
        nodes_.reserve(senders_ + 1);
        // Senders know themselves and the receiver; their limit is scaled to
        // give the window a process of a job of job_size has.
        Config scfg;
        scfg.unexpected_limit = Config{}.unexpected_limit * 2 / job_size;
        for (std::uint32_t s = 0; s < senders_; ++s) {
            auto& n = add_node(scfg, s);
            n.rel->engine().add_peer({kJob, s});
            n.to = n.rel->engine().add_peer({kJob, me_});
            n.rel->engine().set_local({kJob, s});
            n.rel->engine().add_comm(kCid, {n.to, n.to}, n.sink);
        }
        auto& rx = add_node(Config{}, me_);
        std::vector<PeerId> remote;
        remote.reserve(job_size);
        for (std::uint32_t p = 0; p < job_size; ++p)
            remote.push_back(rx.rel->engine().add_peer({kJob, p}));
        rx.rel->engine().set_local({kJob, me_});
        rx.rel->engine().add_comm(kCid, remote, rx.sink);
        Handle h = 1;
        for (std::uint32_t s = 0; s < senders_; ++s)
            for (int i = 0; i < kMsgs; ++i)
                (void)rx.rel->engine().post_recv(kCid, h++, static_cast<std::int32_t>(s), 1,
                                                 rx.sink);
    }

    void run() {
        for (int i = 0; i < kMsgs; ++i)
            for (std::uint32_t s = 0; s < senders_; ++s)
                sim_.schedule(static_cast<Micros>(i), [this, s] {
                    Node& n = *nodes_[s];
                    n.waiting.push_back(n.next_seq++);
                    progress(n);
                });
        (void)sim_.run_until_idle();
    }

    void print() const {
        const double msgs = static_cast<double>(senders_) * kMsgs;
        const Node& rx = *nodes_.back();
        const double frames = static_cast<double>(eager_ + 3 * rndv_ + credit_frames_);
        std::printf(
            "%7u ranks: incast of %u senders x %d x %zu B: eager window %llu B, %.0f%% eager, "
            "%.3f credit frames/msg, %.3f frames/msg (ACKs not counted; %.3f ACKs/msg), "
            "%llu matched, done at %lld us\n",
            job_size_, senders_, kMsgs, kBytes,
            static_cast<unsigned long long>(nodes_[0]->rel->engine().eager_window()),
            100.0 * static_cast<double>(eager_) / msgs, static_cast<double>(credit_frames_) / msgs,
            frames / msgs, static_cast<double>(acks_) / msgs,
            static_cast<unsigned long long>(rx.sink.matched), static_cast<long long>(last_match_));
    }

  private:
    struct Node;
    struct Port final : ChannelOutput {
        Incast* net = nullptr;
        Node* node = nullptr;
        void offer_paths(PeerId, std::vector<PathOffer>& out) override {
            out.push_back({0, false});
        }
        bool transmit(PeerId peer, PathId, FrameRef ref, bool retransmit) override {
            std::vector<std::uint8_t> f = node->store.at(ref.token);
            const std::uint32_t ack = node->rel->channel().ack_seq(peer);
            (void)stamp(f, ref.seq, ack, retransmit ? kFlagRetransmit : 0);
            node->rel->channel().ack_carried(peer, ack);
            net->count_transmit(f, retransmit);
            net->deliver(*node, peer, std::move(f));
            return true;  // the "BTL" is done with it at once
        }
        void send_ack(PeerId peer, PathId, const AckInfo& a) override {
            AckHdr h;
            h.common.type = FrameType::Ack;
            h.common.flags = a.credit_answer ? kFlagCreditAnswer : 0;
            h.common.ack_seq = a.cum_seq;
            h.sack_base = a.sack_base;
            h.sack_mask = a.sack_mask;
            h.max_ack_delay = static_cast<std::uint32_t>(a.max_delay);
            h.released_total = a.released_total;
            ++net->acks_;
            control(peer, h);
        }
        void send_nack(PeerId peer, PathId, std::uint32_t seq) override {
            NackHdr h;
            h.common.type = FrameType::Nack;
            h.seq = seq;
            control(peer, h);
        }
        void send_probe(PeerId peer, PathId, std::uint32_t id, bool reply) override {
            ProbeHdr h;
            h.common.type = reply ? FrameType::ProbeAck : FrameType::Probe;
            h.probe_id = id;
            h.reply = reply;
            control(peer, h);
        }
        void send_bye(PeerId, PathId) override {}
        void path_failed(PeerId, PathId) override {}
        void peer_dead(PeerId) override {}
        void acked(PeerId, FrameToken token) override { node->store.erase(token); }
        void abandoned(PeerId, FrameToken token) override { node->store.erase(token); }
        template <class Hdr>
        void control(PeerId peer, Hdr h) {
            h.common.src_jobid = kJob;
            h.common.src_vpid = node->vpid;
            if constexpr (!std::is_same_v<Hdr, AckHdr>)
                h.common.ack_seq = node->rel->channel().ack_seq(peer);
            net->deliver(*node, peer, frame_of(h));
        }
    };
    struct Node {
        std::uint32_t vpid = 0;
        Port port;
        std::unique_ptr<ReliableEngine> rel;
        Sink sink;
        PeerId to = 0;                      // sender: the receiver
        std::uint16_t next_seq = 0;         // sender: msg_seq of its next message
        std::deque<std::uint16_t> waiting;  // sender: messages not sent yet
        std::map<FrameToken, std::vector<std::uint8_t>> store;  // frames until acked
        FrameToken next_token = 1;
    };

    Node& add_node(const Config& cfg, std::uint32_t vpid) {
        auto n = std::make_unique<Node>();
        n->vpid = vpid;
        n->port.net = this;
        n->port.node = n.get();
        n->rel =
            std::make_unique<ReliableEngine>(cfg, n->port, plugin::common::NullLogSink::instance());
        sim_.add_engine(*n->rel);
        nodes_.push_back(std::move(n));
        return *nodes_.back();
    }
    // Node of the process with `vpid` (senders from 0, the receiver last).
    Node& node_of(std::uint32_t vpid) { return vpid == me_ ? *nodes_.back() : *nodes_[vpid]; }
    std::uint32_t vpid_of(const Node& from, PeerId peer) const {
        return from.vpid == me_ ? static_cast<std::uint32_t>(peer) : me_;
    }

    void deliver(Node& from, PeerId peer, std::vector<std::uint8_t> f) {
        const std::uint32_t dst = vpid_of(from, peer);
        sim_.schedule_after(kLatency, [this, dst, f = std::move(f)] {
            Node& n = node_of(dst);
            (void)n.rel->on_frame(f, n.sink, 0, sim_.now());
            if (n.rel->batches_due())
                n.rel->settle_batches();
            if (dst == me_)
                after_receive(n);
            else
                progress(n);
        });
    }

    void count_transmit(std::span<const std::uint8_t> f, bool retransmit) {
        if (retransmit) {
            ++retransmits_;
            return;
        }
        const auto type = static_cast<FrameType>(f[1]);
        if (type == FrameType::Credit)
            ++credit_frames_;
    }

    // A sender's progress: its waiting messages, in order, as the glue's
    // deferred sends.
    void progress(Node& n) {
        while (!n.waiting.empty()) {
            const EagerGrant g = n.rel->grant_eager(n.to, kBytes);
            if (g == EagerGrant::Wait)
                return;
            const std::uint16_t seq = n.waiting.front();
            n.waiting.pop_front();
            std::vector<std::uint8_t> f;
            if (g == EagerGrant::NoRoom) {
                RndvHdr h;
                h.common.type = FrameType::Rndv;
                h.common.flags = kFlagCreditStarved;
                h.common.src_jobid = kJob;
                h.common.src_vpid = n.vpid;
                h.match = MatchFields{kCid, static_cast<std::int32_t>(n.vpid), 1, seq, 0, 0};
                h.msg_len = kBytes;
                h.send_req = 1u + seq;
                f = frame_of(h);
                ++rndv_;
            } else {
                const std::vector<std::uint8_t> payload(kBytes, 0x5A);
                MatchHdr h = pml_dr_test::match_hdr(
                    kJob, n.vpid, kCid, static_cast<std::int32_t>(n.vpid), 1, seq, payload, false);
                if (g == EagerGrant::SendAndAsk)
                    h.common.flags =
                        static_cast<std::uint16_t>(h.common.flags | kFlagCreditStarved);
                f = frame_of(h, payload);
                ++eager_;
            }
            submit(n, n.to, std::move(f));
        }
    }

    void submit(Node& n, PeerId peer, std::vector<std::uint8_t> f) {
        const FrameToken token = n.next_token++;
        const std::size_t bytes = f.size();
        n.store.emplace(token, std::move(f));
        if (!n.rel->channel().submit(peer, token, sim_.now(), bytes).ok())
            std::abort();  // the window (256 frames) holds every message here
    }

    // The receiver: CREDIT frames its engine asked for.
    void after_receive(Node& rx) {
        if (rx.sink.matched > matched_seen_) {
            matched_seen_ = rx.sink.matched;
            last_match_ = sim_.now();
        }
        for (const auto& [peer, total] : rx.sink.credits) {
            CreditHdr c;
            c.common.type = FrameType::Credit;
            c.common.src_jobid = kJob;
            c.common.src_vpid = me_;
            c.released_total = total;
            submit(rx, peer, frame_of(c));
        }
        rx.sink.credits.clear();
    }

    sim::Simulator sim_;
    std::uint32_t job_size_;
    std::uint32_t me_;
    std::uint32_t senders_;
    std::vector<std::unique_ptr<Node>> nodes_;
    std::uint64_t eager_ = 0, rndv_ = 0, credit_frames_ = 0, acks_ = 0, retransmits_ = 0;
    std::uint64_t matched_seen_ = 0;
    Micros last_match_ = 0;
};

void incast(std::uint32_t job_size) {
    Incast run(job_size);
    run.run();
    run.print();
}

}  // namespace

int main() {
    for (const std::uint32_t p : {1'000u, 10'000u, 100'000u})
        memory_and_matching(p);
    for (const std::uint32_t p : {1'000u, 10'000u, 100'000u})
        incast(p);
    return 0;
}
