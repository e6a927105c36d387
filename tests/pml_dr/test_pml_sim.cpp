// Randomized matching over the simulated network: 2..4 endpoints, two links
// with reordering, each endpoint an Engine fed by a test sender (MATCH frames
// sprayed over both links) and a test receiver posting receives at random
// times. Every decision of the engine is compared with a naive reference
// matcher, and the MPI rules are checked on their own: every message matched
// exactly once, payload bytes exact, no message overtaken by a later one from
// the same source that the same receive could take.
//
// The lossy variant puts the reliability channel under the engine, wired as
// the glue wires it (frames kept by token, stamped with their seq on every
// transmission, ACK/NACK as real wire frames, the channel as the engine's
// gate), on a network that drops, corrupts, duplicates and reorders frames
// and loses one of its two links for good halfway: the same MPI checks must
// hold, with every message matched exactly once. Its credit-limited form
// gives each sender an eager window of 3000 bytes (messages up to 2000): the
// sender asks for the receiver's answer (an ACK) when short, holds what does
// not fit until it comes, and sends a data-less RNDV when there is no room
// (its data is taken as moved by CTS and FRAGs, which are not simulated).
//
// Replay a failure with DR_SIM_SEED=N (see tests/sim/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "channel.hpp"
#include "engine.hpp"
#include "frame_util.hpp"
#include "match_oracle.hpp"
#include "network.hpp"
#include "reliable_engine.hpp"
#include "rng.hpp"
#include "seeds.hpp"
#include "simulator.hpp"

namespace {

using namespace pml::dr::core;
using namespace pml_dr_test;

constexpr std::uint32_t kJob = 42;
constexpr std::uint32_t kCid = 0;
// Small, with negative (collective-style) tags. -1 is MPI_ANY_TAG and never a message tag.
constexpr std::array<std::int32_t, 6> kTags = {-17, -3, 0, 1, 5, 42};
constexpr sim::Micros kSpan = 20'000;  // sends and posts happen in [0, kSpan)

class SimRun;

struct NodeSink : EngineSink {
    SimRun* run = nullptr;
    int rank = 0;
    std::vector<Oracle::Event> events;  // what the engine did during one on_frame
    void on_match(Handle recv, const MessageInfo& info,
                  std::span<const std::uint8_t> eager) override;
    void on_unexpected(const Unexpected& u) override {
        events.push_back(Oracle::Event{std::nullopt, {u.info.src, u.info.seq}});
    }
    void on_cts(Handle, PeerId, const CtsHdr&) override { ADD_FAILURE() << "unexpected CTS"; }
    void on_frag(Handle, PeerId, std::uint64_t, std::span<const std::uint8_t>) override {
        ADD_FAILURE() << "unexpected FRAG";
    }
};

// The lossy variant's transport (the ChannelOutput the glue implements in production): the
// channel's outputs onto the simulated network (methods forward to SimRun).
struct NodeTransport final : ChannelOutput {
    SimRun* run = nullptr;
    int rank = 0;
    // Both links, when the run makes the channel's peers on first use.
    void offer_paths(PeerId peer, std::vector<PathOffer>& out) override;
    bool transmit(PeerId peer, PathId path, FrameRef ref, bool retransmit) override;
    void send_ack(PeerId peer, PathId path, const AckInfo& ack) override;
    void send_nack(PeerId peer, PathId path, std::uint32_t seq) override;
    void send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) override;
    void send_bye(PeerId peer, PathId path) override;
    void path_failed(PeerId, PathId) override {}
    void peer_dead(PeerId peer) override;
    void acked(PeerId peer, FrameToken token) override;
    void abandoned(PeerId peer, FrameToken token) override;
};

struct Node {
    // The ordered variant: an engine alone (no reliability layer). The lossy
    // one: the production protocol object, engine and channel.
    std::unique_ptr<Engine> bare;
    std::unique_ptr<ReliableEngine> rel;
    Engine& engine() { return rel ? rel->engine() : *bare; }
    ReliableChannel& ch() { return rel->channel(); }
    NodeSink sink;
    std::unique_ptr<Oracle> oracle;
    std::vector<Recv> recvs;  // index == handle
    std::uint64_t frames_in = 0;
    // lossy variant
    NodeTransport transport;
    std::map<FrameToken, std::vector<std::uint8_t>> store;  // frames kept until acked
    std::vector<std::deque<FrameToken>> backlog;            // per peer, window full
    std::vector<std::deque<std::uint32_t>> credit_wait;     // per peer: message ids held
    std::set<PeerId> pumping;                               // peers inside pump()
};

struct RunStats {
    std::uint64_t messages = 0;
    std::uint64_t matched_posted = 0;  // matched on arrival
    std::uint64_t matched_on_post = 0;
    std::uint64_t drained = 0;  // left over after all receives: taken by probe at the end
    std::uint64_t held_out_of_order = 0;
    std::uint64_t reordered = 0;
    // lossy variant
    std::uint64_t dropped = 0;
    std::uint64_t corrupted = 0;
    std::uint64_t duplicated = 0;
    std::uint64_t retransmits = 0;
    std::uint64_t carried_acks = 0;  // frames released by ack_seqs data frames carried
    std::uint64_t acks_carried = 0;  // ACK frames a data frame made unnecessary
    std::uint64_t nacks = 0;
    std::uint64_t failovers = 0;
    // credit-limited variant
    std::uint64_t asked = 0;       // frames flagged credit-starved
    std::uint64_t waited = 0;      // sends held for an answer
    std::uint64_t rendezvous = 0;  // data-less RNDVs (no room)
    // resting variant
    std::uint64_t rests = 0;
    std::uint64_t wakes = 0;

    RunStats& operator+=(const RunStats& o) noexcept {
        for (std::uint64_t RunStats::*f :
             {&RunStats::messages, &RunStats::matched_posted, &RunStats::matched_on_post,
              &RunStats::drained, &RunStats::held_out_of_order, &RunStats::reordered,
              &RunStats::dropped, &RunStats::corrupted, &RunStats::duplicated,
              &RunStats::retransmits, &RunStats::carried_acks, &RunStats::acks_carried,
              &RunStats::nacks, &RunStats::failovers, &RunStats::asked, &RunStats::waited,
              &RunStats::rendezvous, &RunStats::rests, &RunStats::wakes})
            this->*f += o.*f;
        return *this;
    }
};
static_assert(sizeof(RunStats) == 19 * sizeof(std::uint64_t), "operator+= sums every field");

class SimRun {
  public:
    // LossyResting: traffic in bursts with quiet gaps longer than the
    // channel's idle period, so peers rest and wake between them; both links
    // stay up (a failed path keeps a peer awake).
    enum class Mode { Ordered, Lossy, LossyCreditLimited, LossyResting };
    SimRun(std::uint64_t seed, int nodes, std::uint32_t msgs_per_node, Mode mode = Mode::Ordered)
        : rng_(seed * 0x9E3779B97F4A7C15ull + 1),
          net_(sim_, nodes, 2),
          n_(nodes),
          lossy_(mode != Mode::Ordered),
          credit_limited_(mode == Mode::LossyCreditLimited),
          resting_(mode == Mode::LossyResting),
          lazy_(resting_ || (lossy_ && seed % 4 >= 2)) {
        sim::LinkParams fast;  // TCP-like, with reorder faults
        fast.latency = 5;
        sim::LinkParams slow;  // a second rail: slower, unordered with jitter
        slow.latency = 30;
        slow.bandwidth = 200.0;
        slow.jitter = 40;
        slow.ordered = false;
        net_.set_link_params(0, fast);
        net_.set_link_params(1, slow);
        sim::FaultPlan plan(seed);
        sim::FaultRates rates;
        rates.reorder = 0.25;
        rates.max_reorder_delay = 300;
        if (lossy_ && !resting_) {
            rates.drop = 0.10;
            rates.corrupt = 0.05;
            rates.duplicate = 0.05;
            // Link 1 dies halfway; odd seeds: the BTL reports it, even: silence.
            plan.add_outage(sim::LinkOutage{sim::LinkSelector{1}, kSpan / 2, sim::kNever});
            plan.report_link_errors(seed % 2 == 1);
        } else if (resting_) {
            rates.drop = 0.05;
            rates.corrupt = 0.02;
            rates.duplicate = 0.02;
        }
        plan.set_all(rates);
        net_.set_fault_plan(std::move(plan));

        Config cfg;
        if (credit_limited_)
            cfg.unexpected_limit = 3000u * static_cast<std::uint64_t>(n_);  // windows of 3000
        nodes_.resize(static_cast<std::size_t>(n_));
        sent_.assign(static_cast<std::size_t>(n_ * n_), {});
        std::vector<PeerId> remote;
        for (int r = 0; r < n_; ++r) {
            Node& node = nodes_[static_cast<std::size_t>(r)];
            if (lossy_)
                node.rel =
                    std::make_unique<ReliableEngine>(cfg, channel_params(r, node), node.transport,
                                                     plugin::common::NullLogSink::instance());
            else
                node.bare = std::make_unique<Engine>(cfg, plugin::common::NullLogSink::instance());
            for (int p = 0; p < n_; ++p)
                EXPECT_EQ(node.engine().add_peer({kJob, static_cast<std::uint32_t>(p)}),
                          static_cast<PeerId>(p));
            node.sink.run = this;
            node.sink.rank = r;
            node.oracle = std::make_unique<Oracle>(n_);
            remote.push_back(static_cast<PeerId>(r));
            if (lossy_)
                add_paths(node);
        }
        for (int r = 0; r < n_; ++r) {
            Node& node = nodes_[static_cast<std::size_t>(r)];
            node.engine().add_comm(kCid, remote, node.sink);
            net_.attach(
                r, sim::Endpoint{
                       [this, r](sim::Rank src, sim::LinkIndex link,
                                 std::span<const std::uint8_t> b) { on_frame(r, src, link, b); },
                       {},
                       [this, r](sim::Rank peer, sim::LinkIndex link) {
                           Node& n = nodes_[static_cast<std::size_t>(r)];
                           if (n.rel)
                               n.rel->path_lost(static_cast<PeerId>(peer),
                                                static_cast<PathId>(link), sim_.now());
                       }});
        }
        plan_traffic(msgs_per_node);
    }

    void execute() {
        const auto res = sim_.run_until_idle(kSpan * 100, 10'000'000);
        EXPECT_EQ(res.reason, sim::StopReason::Idle) << sim::stop_reason_name(res.reason);
        const auto& ns = net_.stats();
        stats_.reordered = ns.reordered;
        if (lossy_) {
            stats_.dropped = ns.dropped;
            stats_.corrupted = ns.corrupted;
            stats_.duplicated = ns.duplicated;
            check_channels();
        } else {
            EXPECT_EQ(ns.delivered, ns.sent);
            EXPECT_EQ(ns.dropped, 0u);
        }
        drain_and_check();
    }

    const RunStats& stats() const { return stats_; }

    // Called from NodeSink::on_match while the engine is inside on_frame.
    void engine_matched(int dst, Handle recv, const MessageInfo& info,
                        std::span<const std::uint8_t> eager) {
        Node& node = nodes_[static_cast<std::size_t>(dst)];
        node.sink.events.push_back(Oracle::Event{recv, {info.src, info.seq}});
        ASSERT_LT(recv, node.recvs.size());
        Recv& r = node.recvs[recv];
        EXPECT_FALSE(r.done) << "receive " << recv << " matched twice";
        r.done = true;
        ++stats_.matched_posted;
        check_match(dst, r.src, r.tag, info, eager);
    }

    // --- the lossy variant's transport (NodeTransport forwards here)
    void transport_transmit(int rank, PeerId peer, PathId path, FrameRef ref, bool retransmit) {
        Node& node = nodes_[static_cast<std::size_t>(rank)];
        auto it = node.store.find(ref.token);
        ASSERT_NE(it, node.store.end()) << "the channel transmitted a released frame";
        std::vector<std::uint8_t> bytes = it->second;
        // As the glue does: every transmission carries the current ack_seq,
        // which then needs no ACK frame.
        const std::uint32_t ack = node.ch().ack_seq(peer);
        ASSERT_TRUE(stamp(bytes, ref.seq, ack, retransmit ? kFlagRetransmit : 0).has_value());
        const bool ok =
            net_.send(sim::Frame{rank, static_cast<int>(peer), static_cast<sim::LinkIndex>(path),
                                 std::move(bytes)}) == sim::SendStatus::Ok;
        if (ok)
            node.ch().ack_carried(peer, ack);
        // The BTL's completion comes later, as its own event.
        sim_.schedule_after(1, [this, rank, peer, path, ref, ok] {
            nodes_[static_cast<std::size_t>(rank)].ch().on_local_complete(peer, path, ref, ok,
                                                                          sim_.now());
        });
    }
    template <class Hdr>
    void transport_control(int rank, PeerId peer, PathId path, Hdr h) {
        if constexpr (!std::is_same_v<Hdr, AckHdr>)
            h.common.ack_seq = channel_of(rank).ack_seq(peer);
        h.common.src_jobid = kJob;
        h.common.src_vpid = static_cast<std::uint32_t>(rank);
        net_.send(sim::Frame{rank, static_cast<int>(peer), static_cast<sim::LinkIndex>(path),
                             frame_of(h)});
    }
    void transport_acked(int rank, PeerId peer, FrameToken token, bool ok) {
        Node& node = nodes_[static_cast<std::size_t>(rank)];
        EXPECT_TRUE(ok) << "frame abandoned at rank " << rank;
        EXPECT_EQ(node.store.erase(token), 1u) << "token released twice";
        pump(rank, peer);
    }
    void transport_peer_dead(int rank, PeerId peer) {
        ADD_FAILURE() << "rank " << rank << " declared peer " << peer
                      << " dead while link 0 still works";
    }
    ReliableChannel& channel_of(int rank) { return nodes_[static_cast<std::size_t>(rank)].ch(); }
    [[nodiscard]] bool lazy() const noexcept { return lazy_; }
    sim::Micros now() const { return sim_.now(); }

  private:
    // The lossy variant's channel parameters; also points the node's
    // transport at this run.
    ChannelParams channel_params(int r, Node& node) {
        ChannelParams p;
        p.window = 64;  // small, so back-pressure is part of every run
        p.ack_every = 8;
        p.ack_delay = 50;
        p.ack_timeout = 2 * plugin::common::kMillis;  // > worst round trip with faults
        p.ack_retries = 12;                           // a healthy path must not lose 13 in a row
        p.watchdog_timeout = 5 * plugin::common::kMillis;
        p.peer_dead_timeout = 5 * plugin::common::kSeconds;
        if (resting_)
            p.window_idle_release = kIdle;
        node.transport.run = this;
        node.transport.rank = r;
        return p;
    }
    // Both links to every peer (or, lazy, offered on first use), and the
    // protocol's timers on the simulator.
    void add_paths(Node& node) {
        node.backlog.resize(static_cast<std::size_t>(n_));
        node.credit_wait.resize(static_cast<std::size_t>(n_));
        for (int peer = 0; peer < n_ && !lazy_; ++peer) {
            node.ch().add_peer(static_cast<PeerId>(peer));
            for (PathId link = 0; link < 2; ++link)
                EXPECT_TRUE(node.ch().add_path(static_cast<PeerId>(peer), link));
        }
        sim_.add_engine(*node.rel);
    }

    // Submits what the window takes, oldest first.
    void pump(int rank, PeerId peer) {
        Node& node = nodes_[static_cast<std::size_t>(rank)];
        // A submit that finds the window full applies the carried acks,
        // whose releases call back here: the outer loop goes on instead.
        if (!node.pumping.insert(peer).second)
            return;
        struct Done {
            std::set<PeerId>& set;
            PeerId peer;
            ~Done() { set.erase(peer); }
        } done{node.pumping, peer};
        auto& q = node.backlog[peer];
        while (!q.empty()) {
            const FrameToken t = q.front();
            const SubmitResult r = node.ch().submit(peer, t, sim_.now(), node.store.at(t).size());
            if (!r.ok()) {
                ASSERT_EQ(r.status, SubmitStatus::WindowFull) << to_string(r.status);
                return;
            }
            q.pop_front();
            node.ch().settle_batches();  // as the glue does after each transmission
        }
    }

    void check_channels() {
        for (int r = 0; r < n_; ++r) {
            Node& node = nodes_[static_cast<std::size_t>(r)];
            EXPECT_TRUE(node.store.empty()) << "rank " << r << " still holds frames";
            for (int peer = 0; peer < n_; ++peer) {
                EXPECT_TRUE(node.backlog[static_cast<std::size_t>(peer)].empty());
                EXPECT_TRUE(node.credit_wait[static_cast<std::size_t>(peer)].empty());
                const PeerCounters* c = node.ch().counters(static_cast<PeerId>(peer));
                if (lazy_ && c == nullptr)
                    continue;  // never talked to, or resting
                ASSERT_NE(c, nullptr);
                EXPECT_EQ(c->bad_acks, 0u);
                EXPECT_EQ(c->frames_abandoned, 0u);
                stats_.retransmits += c->retransmits;
                stats_.carried_acks += c->carried_acks;
                stats_.acks_carried += c->acks_carried;
                stats_.nacks += c->nacks_received;
                stats_.failovers += c->failovers;
            }
            stats_.rests += node.ch().rest_counters().rests;
            stats_.wakes += node.ch().rest_counters().wakes;
        }
    }

    Msg& msg(int src, int dst, std::uint32_t id) {
        return sent_[static_cast<std::size_t>(src * n_ + dst)][id];
    }
    std::vector<Msg>& stream(int src, int dst) {
        return sent_[static_cast<std::size_t>(src * n_ + dst)];
    }

    // A time in [0, kSpan) as the plan draws it; the resting variant packs
    // each kBurst of it into a burst followed by a quiet gap of kGap.
    [[nodiscard]] sim::Micros when(std::uint64_t t) const {
        if (!resting_)
            return static_cast<sim::Micros>(t);
        return static_cast<sim::Micros>(t / kBurst * (kBurst + kGap) + t % kBurst);
    }

    void plan_traffic(std::uint32_t msgs_per_node) {
        // Messages: random destination, tag, size, time; ids in send order per
        // (src, dst), which is also the order the sends are scheduled in.
        struct Planned {
            sim::Micros at;
            int src;
            int dst;
        };
        std::vector<Planned> sends;
        for (int s = 0; s < n_; ++s) {
            std::vector<sim::Micros> times(msgs_per_node);
            for (auto& t : times)
                t = when(rng_.below(kSpan));
            std::sort(times.begin(), times.end());
            for (const sim::Micros t : times) {
                int d = static_cast<int>(rng_.below(static_cast<std::uint64_t>(n_ - 1)));
                if (d >= s)
                    ++d;
                Msg m;
                m.src = s;
                m.dst = d;
                m.tag = kTags[rng_.below(kTags.size())];
                m.id = static_cast<std::uint32_t>(stream(s, d).size());
                // Mostly small, some empty, some up to 2000 bytes.
                const auto kind = rng_.below(10);
                m.size = kind == 0 ? 0
                                   : static_cast<std::size_t>(kind < 7 ? rng_.below(200)
                                                                       : rng_.below(2001));
                // On the lossy network every frame needs its payload CRC: without
                // it corruption is undetectable (what pml_dr_csum=never means).
                m.csum = lossy_ || rng_.below(4) != 0;
                stream(s, d).push_back(m);
                sends.push_back(Planned{t, s, d});
                ++stats_.messages;
            }
        }
        // Each send event sends the next unsent message of its (src, dst) stream.
        for (const Planned& p : sends) {
            sim_.schedule(p.at, [this, s = p.src, d = p.dst] { send_next(s, d); });
        }
        // Receives: one per message, a generalisation of it (so the totals
        // agree), posted at random times in random order.
        for (int d = 0; d < n_; ++d) {
            std::vector<Recv> wanted;
            for (int s = 0; s < n_; ++s) {
                for (const Msg& m : stream(s, d)) {
                    Recv r;
                    const auto how = rng_.below(4);
                    const bool any_tag_ok = m.tag >= 0;
                    r.src = (how == 1 || how == 3) ? kAnySource : s;
                    r.tag = ((how == 2 || how == 3) && any_tag_ok) ? kAnyTag : m.tag;
                    wanted.push_back(r);
                }
            }
            for (std::size_t i = wanted.size(); i > 1; --i)
                std::swap(wanted[i - 1], wanted[rng_.below(i)]);
            Node& node = nodes_[static_cast<std::size_t>(d)];
            for (std::size_t i = 0; i < wanted.size(); ++i) {
                wanted[i].handle = i;
                node.recvs.push_back(wanted[i]);
                sim_.schedule(when(rng_.below(kSpan)), [this, d, i] { post(d, i); });
            }
        }
    }

    void send_next(int s, int d) {
        std::uint32_t& next = next_send_[{s, d}];
        const Msg& m = msg(s, d, next++);
        Engine& eng = nodes_[static_cast<std::size_t>(s)].engine();
        const std::uint16_t seq = eng.comm(kCid)->next_send_seq(d);
        ASSERT_EQ(seq, static_cast<std::uint16_t>(m.id));
        const auto payload = pattern(m.size, static_cast<std::uint32_t>(s), m.id);
        auto bytes =
            match_frame(kJob, static_cast<std::uint32_t>(s), kCid, s, m.tag, seq, payload, m.csum);
        const auto link = static_cast<sim::LinkIndex>(rng_.below(2));
        if (credit_limited_) {
            nodes_[static_cast<std::size_t>(s)].credit_wait[static_cast<std::size_t>(d)].push_back(
                m.id);
            send_held(s, static_cast<PeerId>(d));
            return;
        }
        if (lossy_) {
            Node& node = nodes_[static_cast<std::size_t>(s)];
            const FrameToken token = next_token_++;
            node.store.emplace(token, std::move(bytes));
            node.backlog[static_cast<std::size_t>(d)].push_back(token);
            pump(s, static_cast<PeerId>(d));
            return;
        }
        const auto st = net_.send(sim::Frame{s, d, link, std::move(bytes)});
        ASSERT_EQ(st, sim::SendStatus::Ok) << sim::send_status_name(st);
    }

    // The credit-limited sender: its held messages to `peer`, in order, as
    // far as its eager credit lets them go (the glue's deferred sends).
    void send_held(int s, PeerId peer) {
        Node& node = nodes_[static_cast<std::size_t>(s)];
        auto& q = node.credit_wait[peer];
        while (!q.empty()) {
            const Msg& m = msg(s, static_cast<int>(peer), q.front());
            const EagerGrant g = node.rel->grant_eager(peer, m.size);
            if (g == EagerGrant::Wait) {
                ++stats_.waited;
                return;
            }
            q.pop_front();
            std::vector<std::uint8_t> bytes;
            const auto seq = static_cast<std::uint16_t>(m.id);
            if (g == EagerGrant::NoRoom) {
                RndvHdr h;
                h.common.type = FrameType::Rndv;
                h.common.flags = kFlagCreditStarved;
                h.common.src_jobid = kJob;
                h.common.src_vpid = static_cast<std::uint32_t>(s);
                h.match = MatchFields{kCid, s, m.tag, seq, 0, 0};
                h.msg_len = m.size;
                h.send_req = m.id + 1u;
                bytes = frame_of(h);
                ++stats_.rendezvous;
            } else {
                const auto payload = pattern(m.size, static_cast<std::uint32_t>(s), m.id);
                MatchHdr h = match_hdr(kJob, static_cast<std::uint32_t>(s), kCid, s, m.tag, seq,
                                       payload, m.csum);
                if (g == EagerGrant::SendAndAsk) {
                    h.common.flags =
                        static_cast<std::uint16_t>(h.common.flags | kFlagCreditStarved);
                    ++stats_.asked;
                }
                bytes = frame_of(h, payload);
            }
            const FrameToken token = next_token_++;
            node.store.emplace(token, std::move(bytes));
            node.backlog[peer].push_back(token);
            pump(s, peer);
        }
    }

    void post(int d, std::size_t i) {
        Node& node = nodes_[static_cast<std::size_t>(d)];
        Recv& r = node.recvs[i];
        auto want = node.oracle->post(r.handle, r.src, r.tag);
        UnexpectedPtr got = node.engine().post_recv(kCid, r.handle, r.src, r.tag, node.sink);
        ASSERT_EQ(got != nullptr, want.has_value()) << "post of receive " << i << " at node " << d;
        if (!got)
            return;
        EXPECT_EQ((MsgKey{got->info.src, got->info.seq}), *want);
        r.done = true;
        ++stats_.matched_on_post;
        check_match(d, r.src, r.tag, got->info, got->data);
    }

    void on_frame(int dst, int src, sim::LinkIndex link, std::span<const std::uint8_t> bytes) {
        Node& node = nodes_[static_cast<std::size_t>(dst)];
        ++node.frames_in;
        auto d = decode(bytes);
        if (lossy_) {
            // The engine sees everything (it counts damage and reports it);
            // the oracle only what the channel admitted as a first arrival.
            node.sink.events.clear();
            const bool first = node.rel->on_frame(bytes, node.sink, link, sim_.now());
            std::vector<Oracle::Event> want;
            if (first && d.has_value()) {
                if (const auto* h = std::get_if<MatchHdr>(&d->header))
                    want = node.oracle->arrive(src, h->match.tag, h->match.msg_seq);
                if (const auto* h = std::get_if<RndvHdr>(&d->header))
                    want = node.oracle->arrive(src, h->match.tag, h->match.msg_seq);
            }
            ASSERT_EQ(node.sink.events, want)
                << "engine and reference matcher disagree at node " << dst;
            // As progress would: what waited for credit may go now.
            for (int peer = 0; peer < n_ && credit_limited_; ++peer)
                send_held(dst, static_cast<PeerId>(peer));
            return;
        }
        ASSERT_TRUE(d.has_value()) << "network corrupted a frame";
        const auto& h = std::get<MatchHdr>(d->header);
        ASSERT_EQ(h.match.src_rank, src);
        const auto want = node.oracle->arrive(src, h.match.tag, h.match.msg_seq);
        node.sink.events.clear();
        node.engine().on_frame(bytes, node.sink);
        ASSERT_EQ(node.sink.events, want)
            << "engine and reference matcher disagree at node " << dst << " on the arrival of ("
            << src << ", " << h.match.msg_seq << ")";
    }

    // Checks one match of message (info.src, info.seq) at dst by a receive
    // (or probe) that asked for (want_src, want_tag).
    void check_match(int dst, std::int32_t want_src, std::int32_t want_tag, const MessageInfo& info,
                     std::span<const std::uint8_t> data) {
        ASSERT_GE(info.src, 0);
        ASSERT_LT(info.src, n_);
        auto& str = stream(info.src, dst);
        ASSERT_LT(info.seq, str.size());
        Msg& m = str[info.seq];
        EXPECT_FALSE(m.matched) << "message (" << info.src << "->" << dst << " #" << m.id
                                << ") matched twice";
        m.matched = true;
        EXPECT_TRUE(want_src_ok(want_src, info.src));
        EXPECT_TRUE(want_tag_ok(want_tag, m.tag))
            << "receive tag " << want_tag << " took tag " << m.tag;
        EXPECT_EQ(info.tag, m.tag);
        EXPECT_EQ(info.peer, static_cast<PeerId>(info.src));
        EXPECT_EQ(info.msg_len, m.size);
        const auto want = pattern(m.size, static_cast<std::uint32_t>(info.src), m.id);
        if (info.send_req != 0)  // a data-less RNDV: its data would follow the CTS
            EXPECT_TRUE(data.empty());
        else
            EXPECT_TRUE(std::equal(data.begin(), data.end(), want.begin(), want.end()))
                << "payload of (" << info.src << "->" << dst << " #" << m.id << ") differs";
        // Non-overtaking: no earlier message from this source that this
        // receive could have taken is still unmatched.
        std::uint32_t& low = lowest_unmatched_[{info.src, dst}];
        while (low < str.size() && str[low].matched)
            ++low;
        for (std::uint32_t j = low; j < m.id; ++j) {
            if (!str[j].matched && want_tag_ok(want_tag, str[j].tag)) {
                ADD_FAILURE() << "message #" << m.id << " from " << info.src << " to " << dst
                              << " overtook #" << j << " (tag " << str[j].tag << ") for receive ("
                              << want_src << ", " << want_tag << ")";
                break;
            }
        }
        // The simple form: fully specific receives see increasing ids per (src, tag).
        if (want_src != kAnySource && want_tag != kAnyTag) {
            auto [it, fresh] = last_specific_.try_emplace({dst, info.src, m.tag}, m.id);
            if (!fresh) {
                EXPECT_GT(m.id, it->second) << "specific receive order broken";
                it->second = m.id;
            }
        }
    }

    void drain_and_check() {
        for (int d = 0; d < n_; ++d) {
            Node& node = nodes_[static_cast<std::size_t>(d)];
            CommMatcher& cm = *node.engine().comm(kCid);
            // Receives nobody could serve (an earlier wildcard took their
            // message): cancel them; their messages wait unexpected.
            std::uint64_t cancelled = 0;
            for (const Recv& r : node.recvs) {
                if (r.done)
                    continue;
                EXPECT_TRUE(cm.cancel(r.handle, r.src))
                    << "unmatched receive " << r.handle << " not queued";
                EXPECT_TRUE(node.oracle->cancel(r.handle));
                ++cancelled;
            }
            std::uint64_t drained = 0;
            for (int s = 0; s < n_; ++s) {
                for (const std::int32_t tag : kTags) {
                    while (UnexpectedPtr u =
                               node.engine().take_unexpected(kCid, s, tag, node.sink)) {
                        const auto want = node.oracle->take(s, tag);
                        EXPECT_EQ((std::optional<MsgKey>{MsgKey{u->info.src, u->info.seq}}), want);
                        check_match(d, s, tag, u->info, u->data);
                        ++drained;
                    }
                }
            }
            EXPECT_EQ(cancelled, drained) << "node " << d;
            stats_.drained += drained;
            EXPECT_TRUE(node.oracle->empty());
            EXPECT_TRUE(cm.idle());
            EXPECT_EQ(node.engine().held_bytes(), 0u);
            EXPECT_EQ(cm.held_bytes(), 0u);
            const RxCounters& rx = node.engine().rx();
            EXPECT_EQ(rx.frames, node.frames_in);
            // Damaged frames are expected on the lossy network; duplicates
            // must never get past the channel to the matcher.
            EXPECT_EQ((lossy_ ? 0 : rx.decode_errors + rx.checksum_errors) + rx.unknown_peer +
                          rx.bad_rank + rx.unknown_request + rx.duplicates +
                          rx.pending_unknown_comm + rx.dropped_unknown_comm,
                      0u);
            stats_.held_out_of_order += cm.stats().held_out_of_order;
        }
        std::uint64_t unmatched = 0;
        for (const auto& str : sent_)
            for (const Msg& m : str)
                unmatched += m.matched ? 0 : 1;
        EXPECT_EQ(unmatched, 0u) << "messages never matched";
        EXPECT_EQ(stats_.matched_posted + stats_.matched_on_post + stats_.drained, stats_.messages);
    }

    sim::Rng rng_;
    sim::Simulator sim_;
    sim::Network net_;
    int n_;
    std::vector<Node> nodes_;
    std::vector<std::vector<Msg>> sent_;  // [src * n + dst]
    std::map<std::pair<int, int>, std::uint32_t> next_send_;
    std::map<std::pair<int, int>, std::uint32_t> lowest_unmatched_;
    std::map<std::tuple<int, int, std::int32_t>, std::uint32_t> last_specific_;
    RunStats stats_;
    bool lossy_ = false;
    bool credit_limited_ = false;
    bool resting_ = false;
    static constexpr sim::Micros kBurst = 2'000;
    static constexpr sim::Micros kGap = 20'000;  // past the PTO cap: retransmits end
    static constexpr sim::Micros kIdle = 5'000;  // window_idle_release
    // Lossy runs of half the seeds make the channel's peers on first use
    // (offered both links), as the PML does; the others add them up front.
    bool lazy_ = false;
    FrameToken next_token_ = 1;
};

bool NodeTransport::transmit(PeerId peer, PathId path, FrameRef ref, bool retransmit) {
    run->transport_transmit(rank, peer, path, ref, retransmit);
    return false;  // the completion comes as its own event
}
void NodeTransport::send_ack(PeerId peer, PathId path, const AckInfo& ack) {
    AckHdr h;
    h.common.ack_seq = ack.cum_seq;
    h.sack_base = ack.sack_base;
    h.sack_mask = ack.sack_mask;
    h.ack_delay = static_cast<std::uint32_t>(ack.delay);
    h.max_ack_delay = static_cast<std::uint32_t>(ack.max_delay);
    h.released_total = ack.released_total;
    if (ack.credit_answer)
        h.common.flags = kFlagCreditAnswer;
    run->transport_control(rank, peer, path, h);
}
void NodeTransport::send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) {
    ProbeHdr h;
    h.common.type = reply ? FrameType::ProbeAck : FrameType::Probe;
    h.probe_id = id;
    h.reply = reply;
    run->transport_control(rank, peer, path, h);
}
void NodeTransport::send_bye(PeerId peer, PathId path) {
    ByeHdr h;
    h.common.type = FrameType::Bye;
    run->transport_control(rank, peer, path, h);
}
void NodeTransport::send_nack(PeerId peer, PathId path, std::uint32_t seq) {
    NackHdr h;
    h.seq = seq;
    run->transport_control(rank, peer, path, h);
}
void NodeTransport::offer_paths(PeerId, std::vector<PathOffer>& out) {
    if (run->lazy())
        out = {{0, false}, {1, false}};
}
void NodeTransport::peer_dead(PeerId peer) {
    run->transport_peer_dead(rank, peer);
}
void NodeTransport::acked(PeerId peer, FrameToken token) {
    run->transport_acked(rank, peer, token, true);
}
void NodeTransport::abandoned(PeerId peer, FrameToken token) {
    run->transport_acked(rank, peer, token, false);
}
void NodeSink::on_match(Handle recv, const MessageInfo& info, std::span<const std::uint8_t> eager) {
    run->engine_matched(rank, recv, info, eager);
}

// One run of `mode` per seed (2 to 4 nodes, 1200 messages each way per
// pair); `check` sees each run's figures (at least 2400 messages each, and a
// lossy run dropped frames); returns the figures summed over the seeds.
template <typename Check>
RunStats run_every_seed(SimRun::Mode mode, Check&& check) {
    RunStats total;
    sim::for_each_seed([&](std::uint64_t seed) {
        SimRun run(seed, 2 + static_cast<int>(seed % 3), 1200, mode);
        run.execute();
        const RunStats& s = run.stats();
        EXPECT_GE(s.messages, 2400u);
        if (mode != SimRun::Mode::Ordered) {
            EXPECT_GT(s.dropped, 0u);
        }
        check(s);
        total += s;
    });
    return total;
}

TEST(PmlDrSim, RandomizedMatchingOverTwoReorderingLinks) {
    const RunStats total = run_every_seed(SimRun::Mode::Ordered, [](const RunStats& s) {
        // The run must actually exercise what it claims to.
        EXPECT_GT(s.reordered, 0u);
        EXPECT_GT(s.held_out_of_order, 0u);
        EXPECT_GT(s.matched_posted, s.messages / 20);
        EXPECT_GT(s.matched_on_post, s.messages / 20);
    });
    std::printf(
        "messages %llu: matched on arrival %llu, on post %llu, drained %llu; held out of order "
        "%llu\n",
        static_cast<unsigned long long>(total.messages),
        static_cast<unsigned long long>(total.matched_posted),
        static_cast<unsigned long long>(total.matched_on_post),
        static_cast<unsigned long long>(total.drained),
        static_cast<unsigned long long>(total.held_out_of_order));
}

TEST(PmlDrSim, MpiOrderSurvivesLossCorruptionDuplicationAndALinkDying) {
    const RunStats total = run_every_seed(SimRun::Mode::Lossy, [](const RunStats& s) {
        EXPECT_GT(s.corrupted, 0u);
        EXPECT_GT(s.duplicated, 0u);
        EXPECT_GT(s.retransmits, 0u);
    });
    // Summed over seeds: payload damage was NACKed, link 1's death re-drove frames.
    EXPECT_GT(total.nacks, 0u);
    EXPECT_GT(total.failovers, 0u);
    // Traffic both ways: data frames carried acknowledgements, in place of ACK frames.
    EXPECT_GT(total.carried_acks, 0u);
    EXPECT_GT(total.acks_carried, 0u);
    std::printf(
        "lossy: messages %llu, retransmits %llu, nacks %llu, failovers %llu, "
        "carried acks applied %llu, ACK frames saved %llu\n",
        static_cast<unsigned long long>(total.messages),
        static_cast<unsigned long long>(total.retransmits),
        static_cast<unsigned long long>(total.nacks),
        static_cast<unsigned long long>(total.failovers),
        static_cast<unsigned long long>(total.carried_acks),
        static_cast<unsigned long long>(total.acks_carried));
}

// Eager windows of 3000 bytes on the same lossy network: senders ask, wait
// for answers that may be lost (ACKs drop too), and fall back to RNDVs; no
// message is held for good, none is lost or matched twice.
TEST(PmlDrSim, CreditLimitedSendersOverTheLossyNetwork) {
    const RunStats total = run_every_seed(SimRun::Mode::LossyCreditLimited, [](const RunStats&) {});
    // The run must exercise what it claims to: questions, waits, no-room RNDVs.
    EXPECT_GT(total.asked, 0u);
    EXPECT_GT(total.waited, 0u);
    EXPECT_GT(total.rendezvous, 0u);
    std::printf(
        "credit-limited: messages %llu, asked %llu, waits %llu, rndv %llu, retransmits %llu\n",
        static_cast<unsigned long long>(total.messages),
        static_cast<unsigned long long>(total.asked), static_cast<unsigned long long>(total.waited),
        static_cast<unsigned long long>(total.rendezvous),
        static_cast<unsigned long long>(total.retransmits));
}

// Bursts of traffic with quiet gaps on a lossy network: between bursts the
// peers rest (their channel state reduced to its sequence numbers) and the
// next burst wakes them; every message still arrives once, in MPI order.
TEST(PmlDrSim, PeersRestBetweenBurstsAndWakeWhereTheyLeftOff) {
    const RunStats total = run_every_seed(SimRun::Mode::LossyResting, [](const RunStats&) {});
    EXPECT_GT(total.rests, 0u);
    EXPECT_GT(total.wakes, 0u);
    std::printf("resting: messages %llu, rests %llu, wakes %llu, retransmits %llu\n",
                static_cast<unsigned long long>(total.messages),
                static_cast<unsigned long long>(total.rests),
                static_cast<unsigned long long>(total.wakes),
                static_cast<unsigned long long>(total.retransmits));
}

}  // namespace
