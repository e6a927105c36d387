// ReliableChannel end to end on the simulated network (tests/sim): 2..4
// endpoints joined by two links, each running a channel whose transmit() puts
// a tiny frame (seq | token | header CRC | payload | payload CRC) on the link
// of the chosen path. Receivers check the CRCs and treat corrupt frames as
// lost, exactly as the glue does; a frame whose header survived but whose
// payload did not is reported to the channel, which NACKs it. Under drop, corruption, duplication,
// reordering, delay and a rail that dies mid-transfer, every message must be delivered exactly
// once, byte-exact, and every token acked exactly once; with every link down the peer must be
// declared dead within a bounded virtual time.
//
// Replay a failure with DR_SIM_SEED=N (see tests/sim/README.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "backoff.hpp"
#include "channel.hpp"
#include "crc32c.hpp"
#include "network.hpp"
#include "rng.hpp"
#include "seeds.hpp"
#include "simulator.hpp"

namespace {

using namespace pml::dr::core;
using plugin::common::crc32c;
using plugin::common::kMillis;

constexpr int kLinks = 2;

// ---------------------------------------------------------------- test wire
// DATA: kind=1 | seq u32 | token u64 | len u16 | hdr crc32c u32 | payload | crc32c u32
// ACK:  kind=2 | cum u32 | base u32 | mask u64 | crc32c u32
// NACK: kind=3 | seq u32 | crc32c u32
// Big-endian; the last CRC covers everything before it, DATA's header CRC
// the 15 bytes before it.
constexpr std::uint8_t kData = 1;
constexpr std::uint8_t kAck = 2;
constexpr std::uint8_t kNack = 3;
constexpr std::uint8_t kProbe = 4;
constexpr std::uint8_t kProbeAck = 5;
constexpr std::uint8_t kBye = 6;

void put(std::vector<std::uint8_t>& b, std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i)
        b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t get(std::span<const std::uint8_t> b, std::size_t off, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
        v = (v << 8) | b[off + static_cast<std::size_t>(i)];
    return v;
}
void seal(std::vector<std::uint8_t>& b) {
    put(b, crc32c(b), 4);
}

std::vector<std::uint8_t> encode_data(std::uint32_t seq, FrameToken token,
                                      std::span<const std::uint8_t> payload) {
    std::vector<std::uint8_t> b{kData};
    put(b, seq, 4);
    put(b, token, 8);
    put(b, payload.size(), 2);
    seal(b);  // header CRC
    b.insert(b.end(), payload.begin(), payload.end());
    seal(b);
    return b;
}

std::vector<std::uint8_t> encode_nack(std::uint32_t seq) {
    std::vector<std::uint8_t> b{kNack};
    put(b, seq, 4);
    seal(b);
    return b;
}

std::vector<std::uint8_t> encode_ack(const AckInfo& a) {
    std::vector<std::uint8_t> b{kAck};
    put(b, a.cum_seq, 4);
    put(b, a.sack_base, 4);
    put(b, a.sack_mask, 8);
    put(b, static_cast<std::uint64_t>(a.delay), 4);
    put(b, static_cast<std::uint64_t>(a.max_delay), 4);
    seal(b);
    return b;
}

std::vector<std::uint8_t> encode_probe(std::uint32_t id, bool reply) {
    std::vector<std::uint8_t> b{reply ? kProbeAck : kProbe};
    put(b, id, 4);
    seal(b);
    return b;
}

std::vector<std::uint8_t> encode_bye() {
    std::vector<std::uint8_t> b{kBye};
    seal(b);
    return b;
}

struct Parsed {
    std::uint8_t kind = 0;
    std::uint32_t seq = 0;
    FrameToken token = 0;
    std::span<const std::uint8_t> payload;
    AckInfo ack;
    bool damaged = false;  // DATA with an intact header and a damaged payload
};

std::optional<Parsed> parse(std::span<const std::uint8_t> b) {
    if (b.size() < 5)
        return std::nullopt;
    const std::size_t body = b.size() - 4;
    const bool intact = crc32c(b.first(body)) == static_cast<std::uint32_t>(get(b, body, 4));
    Parsed p;
    p.kind = b[0];
    if (p.kind == kData && body >= 19) {
        if (crc32c(b.first(15)) != static_cast<std::uint32_t>(get(b, 15, 4)))
            return std::nullopt;  // header damaged: nothing can be believed
        p.seq = static_cast<std::uint32_t>(get(b, 1, 4));
        p.token = get(b, 5, 8);
        const auto len = static_cast<std::size_t>(get(b, 13, 2));
        if (body != 19 + len)
            return std::nullopt;
        p.payload = b.subspan(19, len);
        p.damaged = !intact;
        return p;
    }
    if (!intact)
        return std::nullopt;
    if ((p.kind == kNack || p.kind == kProbe || p.kind == kProbeAck) && body == 5) {
        p.seq = static_cast<std::uint32_t>(get(b, 1, 4));
        return p;
    }
    if (p.kind == kBye && body == 1)
        return p;
    if (p.kind == kAck && body == 25) {
        p.ack = AckInfo{static_cast<std::uint32_t>(get(b, 1, 4)),
                        static_cast<std::uint32_t>(get(b, 5, 4)), get(b, 9, 8),
                        static_cast<Micros>(get(b, 17, 4)), static_cast<Micros>(get(b, 21, 4))};
        return p;
    }
    return std::nullopt;
}

// Tokens name (src, dst, index); the payload is a pure function of the token,
// so the receiver can check every byte.
FrameToken make_token(int src, int dst, std::uint32_t index) {
    return (std::uint64_t(src) << 40) | (std::uint64_t(dst) << 32) | index;
}
int token_src(FrameToken t) {
    return static_cast<int>((t >> 40) & 0xFF);
}
int token_dst(FrameToken t) {
    return static_cast<int>((t >> 32) & 0xFF);
}

std::vector<std::uint8_t> payload_of(FrameToken token) {
    std::uint64_t h = (token + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    std::vector<std::uint8_t> p(1 + h % 64);
    for (auto& byte : p) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        byte = static_cast<std::uint8_t>(h >> 56);
    }
    return p;
}

// ---------------------------------------------------------------- glue

struct World;

// One process: its channel plus the test's stand-in for the glue.
struct Node final : ChannelOutput {
    World& w;
    int rank;
    std::unique_ptr<ReliableChannel> ch;
    std::unordered_map<FrameToken, std::vector<std::uint8_t>> store;  // bytes the glue owns
    std::vector<std::deque<FrameToken>> backlog;                      // per peer, back-pressure
    std::uint32_t next_index = 0;
    std::map<PeerId, Micros> dead_at;
    std::uint64_t failed_requests = 0;  // rejected or abandoned sends
    std::uint64_t paths_failed = 0;
    // Finalize: leave() called at leave_at, gone (its connections closed:
    // nothing reaches it any more) at departed_at.
    Micros leave_at = plugin::common::kNever;
    Micros departed_at = plugin::common::kNever;
    bool departed_by_bound = false;  // gave up waiting (a lost BYE)

    Node(World& world, int r, const ChannelParams& params);
    void app_send(int dst);
    void pump_backlog(PeerId peer);
    void fail_backlog(PeerId peer);
    void on_frame(int src, int link, std::span<const std::uint8_t> bytes);

    bool transmit(PeerId peer, PathId path, FrameRef ref, bool retransmit) override;
    void send_ack(PeerId peer, PathId path, const AckInfo& ack) override;
    void send_nack(PeerId peer, PathId path, std::uint32_t seq) override;
    void send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) override;
    void send_bye(PeerId peer, PathId path) override;
    void path_failed(PeerId, PathId) override { ++paths_failed; }
    void peer_dead(PeerId peer) override;
    void acked(PeerId peer, FrameToken token) override;
    void abandoned(PeerId peer, FrameToken token) override;
};

struct World {
    sim::Simulator sim;
    sim::Network net;
    std::vector<std::unique_ptr<Node>> nodes;
    std::map<FrameToken, int> delivered;
    std::map<FrameToken, int> acked;
    std::map<FrameToken, int> abandoned;
    std::vector<FrameToken> sent;
    // (src, dst) -> seq -> token: a seq must never carry two tokens.
    std::map<std::pair<int, int>, std::unordered_map<std::uint32_t, FrameToken>> seq_token;
    std::uint64_t corrupt_rx = 0;
    std::uint64_t damaged_rx = 0;  // corrupt payloads reported to the channel
    std::uint64_t payload_mismatch = 0;
    std::uint64_t seq_reuse = 0;
    std::uint64_t misrouted = 0;
    std::uint64_t glue_errors = 0;
    // Frames that reached a process after it had left (finalize): a real BTL
    // writing them would meet a closed connection.
    std::uint64_t after_departure = 0;
    // Times next_deadline() had moved although take_timers_changed() said it
    // had not: the glue, which re-arms only on its word, would miss a timer.
    std::uint64_t timer_misses = 0;
    // The BTL finishes sends that reach the wire inline (as sendi does):
    // transmit() returns true and no completion event follows.
    bool inline_completions = false;

    World(int ranks, const sim::LinkParams& link, const ChannelParams& params)
        : net(sim, ranks, kLinks, link) {
        for (int r = 0; r < ranks; ++r)
            nodes.push_back(std::make_unique<Node>(*this, r, params));
        for (int r = 0; r < ranks; ++r) {
            Node* n = nodes[static_cast<std::size_t>(r)].get();
            net.attach(r, sim::Endpoint{
                              [n](int src, int link_index, std::span<const std::uint8_t> bytes) {
                                  n->on_frame(src, link_index, bytes);
                              },
                              {},
                              [this, n](int peer, int link_index) {
                                  n->ch->remove_path(static_cast<PeerId>(peer),
                                                     static_cast<PathId>(link_index), sim.now());
                              },
                          });
            add_lazily_armed(*n->ch);
        }
    }
    // The channel's timers as the glue arms them: the deadline is asked for
    // again only when the channel says it may have moved, or after it fired.
    void add_lazily_armed(ReliableChannel& ch) {
        auto armed = std::make_shared<std::pair<Micros, bool>>(plugin::common::kNever, true);
        sim.add_deadline_source(
            [this, &ch, armed] {
                const bool changed = ch.take_timers_changed();
                if (changed || armed->second)
                    armed->first = ch.next_deadline();
                else if (ch.next_deadline() != armed->first)
                    ++timer_misses;
                armed->second = false;
                return armed->first;
            },
            [&ch, armed](Micros t) {
                ch.on_timer(t);
                armed->second = true;  // fired: armed no more
            });
    }
    Node& node(int r) { return *nodes[static_cast<std::size_t>(r)]; }
};

Node::Node(World& world, int r, const ChannelParams& params)
    : w(world), rank(r), ch(std::make_unique<ReliableChannel>(params, *this)) {
    const int ranks = w.net.ranks();
    backlog.resize(static_cast<std::size_t>(ranks));
    for (int peer = 0; peer < ranks; ++peer) {
        if (peer == r)
            continue;
        ch->add_peer(static_cast<PeerId>(peer));
        for (int l = 0; l < kLinks; ++l)
            ch->add_path(static_cast<PeerId>(peer), static_cast<PathId>(l));
    }
}

void Node::app_send(int dst) {
    const FrameToken token = make_token(rank, dst, next_index++);
    store.emplace(token, payload_of(token));
    w.sent.push_back(token);
    backlog[static_cast<std::size_t>(dst)].push_back(token);
    pump_backlog(static_cast<PeerId>(dst));
}

void Node::pump_backlog(PeerId peer) {
    auto& q = backlog[peer];
    while (!q.empty()) {
        const FrameToken token = q.front();
        const SubmitResult r = ch->submit(peer, token, w.sim.now(), store.at(token).size());
        if (r.ok()) {
            q.pop_front();
            continue;
        }
        if (r.status != SubmitStatus::WindowFull)
            fail_backlog(peer);
        return;
    }
}

void Node::fail_backlog(PeerId peer) {
    for (const FrameToken t : backlog[peer]) {
        store.erase(t);
        ++failed_requests;
    }
    backlog[peer].clear();
}

bool Node::transmit(PeerId peer, PathId path, FrameRef ref, bool) {
    const auto it = store.find(ref.token);
    if (it == store.end()) {  // the channel asked for bytes the glue already released
        ++w.glue_errors;
        return false;
    }
    const sim::SendStatus status =
        w.net.send(sim::Frame{rank, static_cast<int>(peer), static_cast<int>(path),
                              encode_data(ref.seq, ref.token, it->second)});
    const bool ok = status == sim::SendStatus::Ok;
    if (ok && w.inline_completions)
        return true;
    // The BTL's completion callback comes later, as its own event.
    w.sim.schedule_after(1, [this, peer, path, ref, ok] {
        ch->on_local_complete(peer, path, ref, ok, w.sim.now());
    });
    return false;
}

void Node::send_ack(PeerId peer, PathId path, const AckInfo& ack) {
    w.net.send(sim::Frame{rank, static_cast<int>(peer), static_cast<int>(path), encode_ack(ack)});
}

void Node::send_nack(PeerId peer, PathId path, std::uint32_t seq) {
    w.net.send(sim::Frame{rank, static_cast<int>(peer), static_cast<int>(path), encode_nack(seq)});
}

void Node::send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) {
    w.net.send(
        sim::Frame{rank, static_cast<int>(peer), static_cast<int>(path), encode_probe(id, reply)});
}

void Node::send_bye(PeerId peer, PathId path) {
    w.net.send(sim::Frame{rank, static_cast<int>(peer), static_cast<int>(path), encode_bye()});
}

void Node::peer_dead(PeerId peer) {
    if (!dead_at.emplace(peer, w.sim.now()).second)
        ++w.glue_errors;  // twice
    fail_backlog(peer);
}

void Node::acked(PeerId peer, FrameToken token) {
    ++w.acked[token];
    if (store.erase(token) == 0)
        ++w.glue_errors;
    pump_backlog(peer);
}

void Node::abandoned(PeerId, FrameToken token) {
    ++w.abandoned[token];
    if (store.erase(token) == 0)
        ++w.glue_errors;
    ++failed_requests;
}

void Node::on_frame(int src, int link, std::span<const std::uint8_t> bytes) {
    if (departed_at != plugin::common::kNever) {
        ++w.after_departure;
        return;
    }
    const auto f = parse(bytes);
    if (!f) {
        ++w.corrupt_rx;  // corrupt: as good as lost
        return;
    }
    const auto peer = static_cast<PeerId>(src);
    const auto path = static_cast<PathId>(link);
    if (f->kind == kAck) {
        ch->on_ack(peer, path, f->ack, w.sim.now());
        return;
    }
    if (f->kind == kNack) {
        ch->on_nack(peer, path, f->seq, w.sim.now());
        return;
    }
    if (f->kind == kProbe) {
        ch->on_probe(peer, path, f->seq, w.sim.now());
        return;
    }
    if (f->kind == kProbeAck) {
        ch->on_probe_ack(peer, path, f->seq, w.sim.now());
        return;
    }
    if (f->kind == kBye) {
        ch->on_bye(peer, path, w.sim.now());
        return;
    }
    if (f->damaged) {
        ++w.corrupt_rx;
        ++w.damaged_rx;
        ch->on_damaged(peer, path, f->seq, w.sim.now());
        return;
    }
    auto& seqs = w.seq_token[{src, rank}];
    if (const auto [it, fresh] = seqs.emplace(f->seq, f->token); !fresh && it->second != f->token)
        ++w.seq_reuse;
    if (ch->on_data(peer, path, f->seq, w.sim.now(), f->payload.size()) != Verdict::Deliver)
        return;
    if (token_src(f->token) != src || token_dst(f->token) != rank)
        ++w.misrouted;
    const std::vector<std::uint8_t> want = payload_of(f->token);
    if (!std::equal(want.begin(), want.end(), f->payload.begin(), f->payload.end()))
        ++w.payload_mismatch;
    ++w.delivered[f->token];
}

// Schedules `messages` sends between random pairs at random times in [0, span).
void schedule_workload(World& w, sim::Rng& rng, int messages, Micros span) {
    const auto ranks = static_cast<std::uint64_t>(w.net.ranks());
    for (int i = 0; i < messages; ++i) {
        const Micros at = rng.between(0, span - 1);
        const auto src = static_cast<int>(rng.below(ranks));
        const auto dst =
            static_cast<int>((static_cast<std::uint64_t>(src) + 1 + rng.below(ranks - 1)) % ranks);
        w.sim.schedule(at, [&w, src, dst] { w.node(src).app_send(dst); });
    }
}

sim::FaultRates hostile() {
    sim::FaultRates r;
    r.drop = 0.10;
    r.corrupt = 0.05;
    r.duplicate = 0.05;
    r.reorder = 0.05;
    r.delay = 0.05;
    return r;
}

// ---------------------------------------------------------------- lossy run

ChannelParams lossy_params() {
    ChannelParams p;
    p.window = 64;  // small, so back-pressure is part of every run
    p.ack_every = 8;
    p.ack_delay = 50;
    p.ack_timeout = 2 * kMillis;  // > worst round trip incl. reorder/delay faults
    // 15% loss each way: a healthy path must not lose 13 rounds in a row.
    p.ack_retries = 12;
    p.watchdog_timeout = 5 * kMillis;
    p.watchdog_retries = 1;
    p.peer_dead_timeout = 5 * plugin::common::kSeconds;
    return p;
}

constexpr int kMessages = 4000;
constexpr Micros kSpan = 30 * kMillis;

TEST(ChannelSim, ExactlyOnceByteExactUnderFaultsAndALinkOutage) {
    std::uint64_t total_retx = 0;
    std::uint64_t total_nacked = 0;
    std::uint64_t total_damaged = 0;
    std::uint64_t total_failovers = 0;
    sim::for_each_seed([&](std::uint64_t seed) {
        const int ranks = 2 + static_cast<int>(seed % 3);
        const bool reported = seed % 2 == 1;  // odd: the BTL reports the outage; even: silent
        World w(ranks, sim::LinkParams{.latency = 20, .bandwidth = 1000.0, .jitter = 10},
                lossy_params());
        w.inline_completions = seed % 4 >= 2;
        sim::FaultPlan plan(seed);
        plan.set_all(hostile());
        plan.add_outage(sim::LinkOutage{sim::LinkSelector{1}, kSpan / 3, plugin::common::kNever});
        plan.report_link_errors(reported);
        w.net.set_fault_plan(std::move(plan));
        sim::Rng rng(seed * 7919 + 17);
        schedule_workload(w, rng, kMessages, kSpan);

        const sim::RunResult run = w.sim.run_until_idle(100 * plugin::common::kSeconds, 10'000'000);
        ASSERT_EQ(run.reason, sim::StopReason::Idle) << sim::stop_reason_name(run.reason);

        ASSERT_EQ(w.sent.size(), static_cast<std::size_t>(kMessages));
        std::size_t not_once = 0;
        for (const FrameToken t : w.sent) {
            if (w.delivered[t] != 1 || w.acked[t] != 1)
                ++not_once;
        }
        EXPECT_EQ(not_once, 0u) << "messages not delivered+acked exactly once";
        EXPECT_EQ(w.delivered.size(), static_cast<std::size_t>(kMessages));
        EXPECT_TRUE(w.abandoned.empty());
        EXPECT_EQ(w.payload_mismatch, 0u);
        EXPECT_EQ(w.seq_reuse, 0u);
        EXPECT_EQ(w.misrouted, 0u);
        EXPECT_EQ(w.glue_errors, 0u);
        EXPECT_EQ(w.timer_misses, 0u);
        std::uint64_t paths_lost = 0;
        for (const auto& n : w.nodes) {
            EXPECT_TRUE(n->dead_at.empty()) << "rank " << n->rank << " declared a peer dead";
            EXPECT_TRUE(n->store.empty()) << "rank " << n->rank << " still holds frames";
            EXPECT_EQ(n->failed_requests, 0u);
            for (int peer = 0; peer < ranks; ++peer) {
                if (peer == n->rank)
                    continue;
                const PeerCounters* c = n->ch->counters(static_cast<PeerId>(peer));
                ASSERT_NE(c, nullptr);
                EXPECT_EQ(n->ch->unreleased(static_cast<PeerId>(peer)), 0u);
                EXPECT_EQ(c->bad_acks, 0u);
                total_retx += c->retransmits;
                total_failovers += c->failovers;
                total_nacked += c->nacks_received;
                paths_lost += c->paths_lost;
            }
        }
        // The faults really happened and were really survived.
        const sim::NetworkStats& ns = w.net.stats();
        EXPECT_GT(ns.corrupted, 0u);
        EXPECT_GT(ns.duplicated, 0u);
        EXPECT_GT(w.corrupt_rx, 0u);
        total_damaged += w.damaged_rx;
        // Every pair that talked after the outage lost link 1 (a pair may have
        // had nothing in flight on it then, so failovers are summed over seeds).
        EXPECT_GT(paths_lost, 0u) << "the outage on link 1 went unnoticed";
    });
    EXPECT_GT(total_retx, 0u);
    EXPECT_GT(total_failovers, 0u);
    // Damaged payloads were NACKed and the NACKs reached their senders.
    EXPECT_GT(total_damaged, 0u);
    EXPECT_GT(total_nacked, 0u);
}

// ---------------------------------------------------------------- every path down

enum class Outage { Reported, SilentPastRetries, SilentPeerTimeout };

struct DeathCase {
    Outage kind;
    const char* name;
};

TEST(ChannelSim, EveryPathDownKillsThePeerInBoundedTime) {
    constexpr Micros kDownAt = 5 * kMillis;
    constexpr DeathCase kCases[] = {
        {Outage::Reported, "reported"},
        {Outage::SilentPastRetries, "silent past the path retries"},
        {Outage::SilentPeerTimeout, "silent, peer_dead_timeout"},
    };
    sim::for_each_seed([&](std::uint64_t seed) {
        for (const DeathCase& dc : kCases) {
            SCOPED_TRACE(dc.name);
            ChannelParams p;
            p.window = 64;
            p.ack_every = 8;
            p.ack_delay = 50;
            p.ack_timeout = 1 * kMillis;
            p.ack_retries = 3;
            p.watchdog_timeout = 5 * kMillis;
            // Silence on every path fails no path (a peer computing outside
            // MPI sounds the same): peer_dead_timeout alone gives up, before
            // the paths' retries run out or well after.
            p.peer_dead_timeout = dc.kind == Outage::SilentPeerTimeout
                                      ? 4 * kMillis  // < time_to_fail(1 ms, 3) = 10 ms
                                  : dc.kind == Outage::SilentPastRetries
                                      ? 40 * kMillis
                                      : 10 * plugin::common::kSeconds;
            World w(2, sim::LinkParams{.latency = 20, .bandwidth = 1000.0, .jitter = 10}, p);
            sim::FaultPlan plan(seed);
            sim::FaultRates mild;
            mild.drop = 0.05;
            mild.duplicate = 0.05;
            plan.set_all(mild);
            plan.add_outage(sim::LinkOutage{sim::LinkSelector{}, kDownAt, plugin::common::kNever});
            plan.report_link_errors(dc.kind == Outage::Reported);
            w.net.set_fault_plan(std::move(plan));
            sim::Rng rng(seed * 31 + 7);
            schedule_workload(w, rng, 2000, 20 * kMillis);

            const sim::RunResult run =
                w.sim.run_until_idle(100 * plugin::common::kSeconds, 10'000'000);
            ASSERT_EQ(run.reason, sim::StopReason::Idle) << sim::stop_reason_name(run.reason);

            // The bound each mechanism guarantees, from the moment the links died.
            Micros bound = 0;
            switch (dc.kind) {
                case Outage::Reported:
                    bound = 10;
                    break;  // the link-error callback
                case Outage::SilentPastRetries:
                case Outage::SilentPeerTimeout:
                    // Nothing is acknowledged after kDownAt; allow the sender a
                    // moment to have a frame outstanding again.
                    bound = p.peer_dead_timeout + 1 * kMillis;
                    break;
            }
            for (const auto& n : w.nodes) {
                const auto peer = static_cast<PeerId>(1 - n->rank);
                ASSERT_EQ(n->dead_at.size(), 1u) << "rank " << n->rank;
                const Micros at = n->dead_at.at(peer);
                EXPECT_GE(at, kDownAt);
                EXPECT_LE(at, kDownAt + bound) << "rank " << n->rank << " died late";
                EXPECT_EQ(n->ch->peer_state(peer), PeerState::Dead);
                EXPECT_TRUE(n->store.empty()) << "frames leaked at rank " << n->rank;
                EXPECT_GT(n->failed_requests, 0u);
            }
            // Every token: acked or abandoned (or rejected before submit),
            // never both, never twice; delivered at most once.
            for (const FrameToken t : w.sent) {
                const int a = w.acked.count(t) != 0 ? w.acked[t] : 0;
                const int b = w.abandoned.count(t) != 0 ? w.abandoned[t] : 0;
                EXPECT_LE(a + b, 1) << "token " << t;
                if (a == 1) {
                    EXPECT_EQ(w.delivered[t], 1) << "acked but not delivered";
                }
            }
            for (const auto& [t, times] : w.delivered)
                EXPECT_EQ(times, 1);
            EXPECT_EQ(w.payload_mismatch, 0u);
            EXPECT_EQ(w.glue_errors, 0u);
            EXPECT_EQ(w.timer_misses, 0u);
            if (::testing::Test::HasFailure())
                return;
        }
    });
}

// ---------------------------------------------------------------- finalize

// Every message sent so far has reached its receiver: what finalize's
// fence stands for (each rank completed its receives before entering it).
bool all_delivered(World& w) {
    for (const FrameToken t : w.sent)
        if (w.delivered[t] == 0)
            return false;
    for (const auto& n : w.nodes)
        for (const auto& q : n->backlog)
            if (!q.empty())
                return false;
    return true;
}

// MPI_Finalize as the glue runs it: from `at` (once past the fence) leave(),
// then leaving() from progress every 10 us until it is 0 or the bound
// passed; then the process is gone.
void finalize_at(World& w, int rank, Micros at, Micros bound) {
    w.sim.schedule(at, [&w, rank, bound] {
        Node& n = w.node(rank);
        if (!all_delivered(w)) {
            finalize_at(w, rank, w.sim.now() + 10, bound);  // still in the fence
            return;
        }
        n.leave_at = w.sim.now();
        n.ch->leave(w.sim.now());
        auto poll = std::make_shared<std::function<void()>>();
        *poll = [&w, rank, bound, poll] {
            Node& m = w.node(rank);
            const bool done = m.ch->leaving(w.sim.now()) == 0;
            if (done || w.sim.now() >= m.leave_at + bound) {
                m.departed_at = w.sim.now();
                m.departed_by_bound = !done;
                *poll = nullptr;  // breaks the cycle
                return;
            }
            w.sim.schedule_after(10, [poll] { (*poll)(); });
        };
        (*poll)();
    });
}

// Ranks leave finalize's fence at different times, with frames and ACKs
// still in flight (the fence does not go through the channel). Nothing may
// reach a process once it left, and every message is delivered once.
TEST(ChannelSim, FinalizeWritesNothingToAPeerThatLeft) {
    ChannelParams p = lossy_params();
    p.ack_timeout = 1 * kMillis;
    p.ack_retries = 3;
    const Micros bound = 2 * p.ack_timeout;  // as reliability_drain()
    std::uint64_t byes = 0;
    sim::for_each_seed([&](std::uint64_t seed) {
        const int ranks = 2 + static_cast<int>(seed % 3);
        World w(ranks, sim::LinkParams{.latency = 20, .bandwidth = 1000.0, .jitter = 10}, p);
        sim::Rng rng(seed * 104729 + 3);
        constexpr Micros kWork = 5 * kMillis;
        schedule_workload(w, rng, 600, kWork);
        for (int r = 0; r < ranks; ++r)
            finalize_at(w, r, kWork + rng.between(0, 300), bound);
        const sim::RunResult run = w.sim.run_until_idle(10 * plugin::common::kSeconds, 10'000'000);
        ASSERT_EQ(run.reason, sim::StopReason::Idle) << sim::stop_reason_name(run.reason);
        EXPECT_EQ(w.after_departure, 0u) << "frames sent to a process that had left";
        for (const FrameToken t : w.sent)
            EXPECT_EQ(w.delivered[t], 1) << "token " << t;
        EXPECT_EQ(w.glue_errors, 0u);
        for (const auto& n : w.nodes) {
            EXPECT_NE(n->departed_at, plugin::common::kNever) << "rank " << n->rank;
            EXPECT_FALSE(n->departed_by_bound) << "rank " << n->rank << " waited for a BYE";
            EXPECT_TRUE(n->store.empty()) << "rank " << n->rank << " left with frames unacked";
            for (int peer = 0; peer < ranks; ++peer) {
                if (peer == n->rank)
                    continue;
                EXPECT_TRUE(n->ch->left(static_cast<PeerId>(peer)));
                byes += n->ch->counters(static_cast<PeerId>(peer))->byes_sent;
            }
        }
    });
    EXPECT_GT(byes, 0u);
}

// The same with frames dropped, duplicated and reordered: a lost BYE may
// make a process wait out the bound, but nothing is lost or delivered
// twice, and a process that left in order is never written to by a peer
// that also left in order.
TEST(ChannelSim, FinalizeUnderLossDeliversEverythingAndEnds) {
    ChannelParams p = lossy_params();
    const Micros bound = 2 * p.ack_timeout;
    sim::for_each_seed([&](std::uint64_t seed) {
        const int ranks = 2 + static_cast<int>(seed % 3);
        World w(ranks, sim::LinkParams{.latency = 20, .bandwidth = 1000.0, .jitter = 10}, p);
        sim::FaultPlan plan(seed);
        sim::FaultRates r;
        r.drop = 0.05;
        r.duplicate = 0.05;
        r.reorder = 0.05;
        plan.set_all(r);
        w.net.set_fault_plan(std::move(plan));
        sim::Rng rng(seed * 7877 + 5);
        constexpr Micros kWork = 5 * kMillis;
        schedule_workload(w, rng, 600, kWork);
        for (int rank = 0; rank < ranks; ++rank)
            finalize_at(w, rank, kWork + rng.between(0, 300), bound);
        const sim::RunResult run = w.sim.run_until_idle(10 * plugin::common::kSeconds, 10'000'000);
        ASSERT_EQ(run.reason, sim::StopReason::Idle) << sim::stop_reason_name(run.reason);
        for (const FrameToken t : w.sent)
            EXPECT_EQ(w.delivered[t], 1) << "token " << t;
        EXPECT_EQ(w.glue_errors, 0u);
        for (const auto& n : w.nodes) {
            EXPECT_NE(n->departed_at, plugin::common::kNever) << "rank " << n->rank;
            EXPECT_LE(n->departed_at, n->leave_at + bound + 10) << "rank " << n->rank;
        }
    });
}

}  // namespace
