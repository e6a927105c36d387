// Randomized matching over the simulated network: 2..4 endpoints, two links
// with reordering, each endpoint an Engine fed by a test sender (MATCH frames
// sprayed over both links) and a test receiver posting receives at random
// times. Every decision of the engine is compared with a naive reference
// matcher, and the MPI rules are checked on their own: every message matched
// exactly once, payload bytes exact, no message overtaken by a later one from
// the same source that the same receive could take.
//
// Replay a failure with DR_SIM_SEED=N (see tests/sim/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "engine.hpp"
#include "frame_util.hpp"
#include "network.hpp"
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

struct Msg {
    int src = 0;
    int dst = 0;
    std::int32_t tag = 0;
    std::uint32_t id = 0;  // index in (src, dst) send order == msg_seq here
    std::size_t size = 0;
    bool csum = false;
    bool matched = false;
};

struct Recv {
    Handle handle = 0;
    std::int32_t src = 0;
    std::int32_t tag = 0;
    bool done = false;
};

using MsgKey = std::pair<int, std::uint16_t>;  // (src, msg_seq)

// The MPI rules, restated here rather than taken from matching.hpp so a
// wrong rule there cannot hide behind the same wrong rule in the checker.
bool want_src_ok(std::int32_t want, std::int32_t have) {
    return want == -1 || want == have;
}
bool want_tag_ok(std::int32_t want, std::int32_t have) {
    return want == have || (want == -1 && have >= 0);
}

// The obvious matcher: one posted list in post order, one unexpected list in
// the order messages became matchable, per-source reorder buffers.
class Oracle {
  public:
    explicit Oracle(int n)
        : expected_(static_cast<std::size_t>(n), 0), held_(static_cast<std::size_t>(n)) {}

    struct Event {
        std::optional<Handle> recv;  // nullopt: went to the unexpected list
        MsgKey msg;
        bool operator==(const Event&) const = default;
    };

    std::vector<Event> arrive(int src, std::int32_t tag, std::uint16_t seq) {
        std::vector<Event> out;
        auto& held = held_[static_cast<std::size_t>(src)];
        held.emplace(seq, tag);
        auto& exp = expected_[static_cast<std::size_t>(src)];
        for (auto it = held.find(exp); it != held.end(); it = held.find(exp)) {
            const std::int32_t t = it->second;
            held.erase(it);
            out.push_back(release(src, t, exp));
            ++exp;
        }
        return out;
    }
    std::optional<MsgKey> post(Handle h, std::int32_t src, std::int32_t tag) {
        if (auto m = take(src, tag))
            return m;
        posted_.push_back(Recv{h, src, tag, false});
        return std::nullopt;
    }
    std::optional<MsgKey> take(std::int32_t src, std::int32_t tag) {
        for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
            if (want_src_ok(src, it->src) && want_tag_ok(tag, it->tag)) {
                MsgKey k{it->src, it->seq};
                unexpected_.erase(it);
                return k;
            }
        }
        return std::nullopt;
    }
    bool cancel(Handle h) {
        auto it = std::find_if(posted_.begin(), posted_.end(),
                               [h](const Recv& r) { return r.handle == h; });
        if (it == posted_.end())
            return false;
        posted_.erase(it);
        return true;
    }
    [[nodiscard]] bool empty() const {
        if (!posted_.empty() || !unexpected_.empty())
            return false;
        return std::all_of(held_.begin(), held_.end(), [](const auto& h) { return h.empty(); });
    }

  private:
    struct Unx {
        int src;
        std::int32_t tag;
        std::uint16_t seq;
    };
    Event release(int src, std::int32_t tag, std::uint16_t seq) {
        for (auto it = posted_.begin(); it != posted_.end(); ++it) {
            if (want_src_ok(it->src, src) && want_tag_ok(it->tag, tag)) {
                Event e{it->handle, {src, seq}};
                posted_.erase(it);
                return e;
            }
        }
        unexpected_.push_back(Unx{src, tag, seq});
        return Event{std::nullopt, {src, seq}};
    }

    std::vector<std::uint16_t> expected_;
    std::vector<std::map<std::uint16_t, std::int32_t>> held_;
    std::vector<Recv> posted_;
    std::vector<Unx> unexpected_;
};

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

struct Node {
    std::unique_ptr<Engine> engine;
    NodeSink sink;
    std::unique_ptr<Oracle> oracle;
    std::vector<Recv> recvs;  // index == handle
    std::uint64_t frames_in = 0;
};

struct RunStats {
    std::uint64_t messages = 0;
    std::uint64_t matched_posted = 0;  // matched on arrival
    std::uint64_t matched_on_post = 0;
    std::uint64_t drained = 0;  // left over after all receives: taken by probe at the end
    std::uint64_t held_out_of_order = 0;
    std::uint64_t reordered = 0;
};

class SimRun {
  public:
    SimRun(std::uint64_t seed, int nodes, std::uint32_t msgs_per_node)
        : rng_(seed * 0x9E3779B97F4A7C15ull + 1), net_(sim_, nodes, 2), n_(nodes) {
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
        plan.set_all(rates);
        net_.set_fault_plan(std::move(plan));

        Config cfg;
        nodes_.resize(static_cast<std::size_t>(n_));
        sent_.assign(static_cast<std::size_t>(n_ * n_), {});
        std::vector<PeerId> remote;
        for (int r = 0; r < n_; ++r) {
            Node& node = nodes_[static_cast<std::size_t>(r)];
            node.engine = std::make_unique<Engine>(cfg, plugin::common::NullLogSink::instance());
            for (int p = 0; p < n_; ++p)
                EXPECT_EQ(node.engine->add_peer({kJob, static_cast<std::uint32_t>(p)}),
                          static_cast<PeerId>(p));
            node.sink.run = this;
            node.sink.rank = r;
            node.oracle = std::make_unique<Oracle>(n_);
            remote.push_back(static_cast<PeerId>(r));
        }
        for (int r = 0; r < n_; ++r) {
            Node& node = nodes_[static_cast<std::size_t>(r)];
            node.engine->add_comm(kCid, remote, node.sink);
            net_.attach(r, sim::Endpoint{
                               [this, r](sim::Rank src, sim::LinkIndex,
                                         std::span<const std::uint8_t> b) { on_frame(r, src, b); },
                               {},
                               {}});
        }
        plan_traffic(msgs_per_node);
    }

    void execute() {
        const auto res = sim_.run_until_idle(kSpan * 100, 10'000'000);
        EXPECT_EQ(res.reason, sim::StopReason::Idle) << sim::stop_reason_name(res.reason);
        const auto& ns = net_.stats();
        EXPECT_EQ(ns.delivered, ns.sent);
        EXPECT_EQ(ns.dropped, 0u);
        stats_.reordered = ns.reordered;
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

  private:
    Msg& msg(int src, int dst, std::uint32_t id) {
        return sent_[static_cast<std::size_t>(src * n_ + dst)][id];
    }
    std::vector<Msg>& stream(int src, int dst) {
        return sent_[static_cast<std::size_t>(src * n_ + dst)];
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
                t = static_cast<sim::Micros>(rng_.below(kSpan));
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
                m.csum = rng_.below(4) != 0;
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
                sim_.schedule(static_cast<sim::Micros>(rng_.below(kSpan)),
                              [this, d, i] { post(d, i); });
            }
        }
    }

    void send_next(int s, int d) {
        std::uint32_t& next = next_send_[{s, d}];
        const Msg& m = msg(s, d, next++);
        Engine& eng = *nodes_[static_cast<std::size_t>(s)].engine;
        const std::uint16_t seq = eng.comm(kCid)->next_send_seq(d);
        ASSERT_EQ(seq, static_cast<std::uint16_t>(m.id));
        const auto payload = pattern(m.size, static_cast<std::uint32_t>(s), m.id);
        auto bytes =
            match_frame(kJob, static_cast<std::uint32_t>(s), kCid, s, m.tag, seq, payload, m.csum);
        const auto link = static_cast<sim::LinkIndex>(rng_.below(2));
        const auto st = net_.send(sim::Frame{s, d, link, std::move(bytes)});
        ASSERT_EQ(st, sim::SendStatus::Ok) << sim::send_status_name(st);
    }

    void post(int d, std::size_t i) {
        Node& node = nodes_[static_cast<std::size_t>(d)];
        Recv& r = node.recvs[i];
        auto want = node.oracle->post(r.handle, r.src, r.tag);
        UnexpectedPtr got = node.engine->post_recv(kCid, r.handle, r.src, r.tag, node.sink);
        ASSERT_EQ(got != nullptr, want.has_value()) << "post of receive " << i << " at node " << d;
        if (!got)
            return;
        EXPECT_EQ((MsgKey{got->info.src, got->info.seq}), *want);
        r.done = true;
        ++stats_.matched_on_post;
        check_match(d, r.src, r.tag, got->info, got->data);
    }

    void on_frame(int dst, int src, std::span<const std::uint8_t> bytes) {
        Node& node = nodes_[static_cast<std::size_t>(dst)];
        ++node.frames_in;
        auto d = decode(bytes);
        ASSERT_TRUE(d.has_value()) << "network corrupted a frame";
        const auto& h = std::get<MatchHdr>(d->header);
        ASSERT_EQ(h.match.src_rank, src);
        const auto want = node.oracle->arrive(src, h.match.tag, h.match.msg_seq);
        node.sink.events.clear();
        node.engine->on_frame(bytes, node.sink);
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
            CommMatcher& cm = *node.engine->comm(kCid);
            // Receives nobody could serve (an earlier wildcard took their
            // message): cancel them; their messages wait unexpected.
            std::uint64_t cancelled = 0;
            for (const Recv& r : node.recvs) {
                if (r.done)
                    continue;
                EXPECT_TRUE(cm.cancel(r.handle))
                    << "unmatched receive " << r.handle << " not queued";
                EXPECT_TRUE(node.oracle->cancel(r.handle));
                ++cancelled;
            }
            std::uint64_t drained = 0;
            for (int s = 0; s < n_; ++s) {
                for (const std::int32_t tag : kTags) {
                    while (UnexpectedPtr u =
                               node.engine->take_unexpected(kCid, s, tag, node.sink)) {
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
            EXPECT_EQ(node.engine->held_bytes(), 0u);
            EXPECT_EQ(cm.held_bytes(), 0u);
            const RxCounters& rx = node.engine->rx();
            EXPECT_EQ(rx.frames, node.frames_in);
            EXPECT_EQ(rx.decode_errors + rx.checksum_errors + rx.unknown_peer + rx.bad_rank +
                          rx.unknown_request + rx.duplicates + rx.pending_unknown_comm +
                          rx.dropped_unknown_comm,
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
};

void NodeSink::on_match(Handle recv, const MessageInfo& info, std::span<const std::uint8_t> eager) {
    run->engine_matched(rank, recv, info, eager);
}

TEST(PmlDrSim, RandomizedMatchingOverTwoReorderingLinks) {
    RunStats total;
    sim::for_each_seed([&](std::uint64_t seed) {
        const int nodes = 2 + static_cast<int>(seed % 3);
        SimRun run(seed, nodes, 1200);
        run.execute();
        const RunStats& s = run.stats();
        // The run must actually exercise what it claims to.
        EXPECT_GE(s.messages, 2400u);
        EXPECT_GT(s.reordered, 0u);
        EXPECT_GT(s.held_out_of_order, 0u);
        EXPECT_GT(s.matched_posted, s.messages / 20);
        EXPECT_GT(s.matched_on_post, s.messages / 20);
        total.messages += s.messages;
        total.matched_posted += s.matched_posted;
        total.matched_on_post += s.matched_on_post;
        total.drained += s.drained;
        total.held_out_of_order += s.held_out_of_order;
        total.reordered += s.reordered;
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

}  // namespace
