// End to end: a toy stop-and-wait protocol written the way the real engines
// are (sans-I/O, `now` passed in, one deadline exposed) delivers every
// message exactly once and in order over a hostile simulated link. If this
// passes, the simulator can carry the real engines.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string_view>

#include "network.hpp"
#include "seeds.hpp"

namespace sim {
namespace {

using plugin::common::kSeconds;

constexpr std::uint8_t kData = 1;
constexpr std::uint8_t kAck = 2;
constexpr std::uint32_t kMessages = 1000;
constexpr Micros kRetransmitTimeout = 400;

// Wire: kind u8 | seq u32 | payload... | check u64, integers little-endian;
// `check` is std::hash over everything before it.
std::uint64_t checksum(std::span<const std::uint8_t> bytes) {
    const std::string_view view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return static_cast<std::uint64_t>(std::hash<std::string_view>{}(view));
}

std::vector<std::uint8_t> encode(std::uint8_t kind, std::uint32_t seq,
                                 std::span<const std::uint8_t> payload = {}) {
    std::vector<std::uint8_t> out{kind};
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<std::uint8_t>(seq >> (8 * i)));
    out.insert(out.end(), payload.begin(), payload.end());
    const std::uint64_t check = checksum(out);
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<std::uint8_t>(check >> (8 * i)));
    return out;
}

struct Decoded {
    std::uint8_t kind;
    std::uint32_t seq;
    std::span<const std::uint8_t> payload;
};

// Corrupted input is rejected, never trusted.
std::optional<Decoded> decode(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < 13)
        return std::nullopt;
    const auto body = bytes.first(bytes.size() - 8);
    std::uint64_t check = 0;
    for (int i = 0; i < 8; ++i)
        check |= std::uint64_t{bytes[body.size() + i]} << (8 * i);
    if (check != checksum(body))
        return std::nullopt;
    std::uint32_t seq = 0;
    for (int i = 0; i < 4; ++i)
        seq |= std::uint32_t{body[1 + i]} << (8 * i);
    return Decoded{body[0], seq, body.subspan(5)};
}

std::vector<std::uint8_t> message_payload(std::uint32_t seq) {
    std::vector<std::uint8_t> p(1 + (seq * 37) % 200);
    for (std::size_t i = 0; i < p.size(); ++i)
        p[i] = static_cast<std::uint8_t>(seq * 131 + i);
    return p;
}

class Sender {
  public:
    Sender(Network& net, Rank self, Rank peer) : net_(net), self_(self), peer_(peer) {}

    void start(Micros now) { transmit(now); }
    bool done() const { return next_ == kMessages; }
    Micros next_deadline() const { return done() ? kNever : deadline_; }
    void on_timer(Micros now) {
        ++retransmits_;
        transmit(now);
    }
    void on_frame(Micros now, std::span<const std::uint8_t> bytes) {
        const auto ack = decode(bytes);
        if (!ack || ack->kind != kAck || ack->seq != next_)
            return;  // corrupt or stale
        ++next_;
        if (!done())
            transmit(now);
    }
    int retransmits() const { return retransmits_; }

  private:
    void transmit(Micros now) {
        net_.send(Frame{self_, peer_, 0, encode(kData, next_, message_payload(next_))});
        deadline_ = now + kRetransmitTimeout;
    }

    Network& net_;
    Rank self_;
    Rank peer_;
    std::uint32_t next_ = 0;
    Micros deadline_ = kNever;
    int retransmits_ = 0;
};

class Receiver {
  public:
    Receiver(Network& net, Rank self) : net_(net), self_(self) {}

    void on_frame(Rank src, std::span<const std::uint8_t> bytes) {
        const auto data = decode(bytes);
        if (!data || data->kind != kData) {
            ++rejected_;
            return;
        }
        if (data->seq == expected_) {
            delivered_.emplace_back(
                data->seq, std::vector<std::uint8_t>(data->payload.begin(), data->payload.end()));
            ++expected_;
        } else if (data->seq < expected_) {
            ++duplicates_;  // our ACK was lost or the data was doubled: ACK again
        } else {
            ++impossible_;  // stop-and-wait never runs ahead
            return;
        }
        net_.send(Frame{self_, src, 0, encode(kAck, data->seq)});
    }

    const auto& delivered() const { return delivered_; }
    int rejected() const { return rejected_; }
    int duplicates() const { return duplicates_; }
    int impossible() const { return impossible_; }

  private:
    Network& net_;
    Rank self_;
    std::uint32_t expected_ = 0;
    std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> delivered_;
    int rejected_ = 0;
    int duplicates_ = 0;
    int impossible_ = 0;
};

TEST(StopAndWait, DeliversExactlyOnceInOrderOverAHostileLink) {
    for_each_seed([](std::uint64_t seed) {
        Simulator sim;
        Network net(sim, 2, 1, LinkParams{.latency = 50, .bandwidth = 100.0, .jitter = 10});
        net.set_fault_plan(FaultPlan(seed).set_all(FaultRates{
            .drop = 0.10, .duplicate = 0.05, .reorder = 0.05, .corrupt = 0.05, .delay = 0.05}));
        Sender sender(net, 0, 1);
        Receiver receiver(net, 1);
        net.attach(0, Endpoint{[&](Rank, LinkIndex, std::span<const std::uint8_t> b) {
                                   sender.on_frame(sim.now(), b);
                               },
                               nullptr, nullptr});
        net.attach(1, Endpoint{[&](Rank src, LinkIndex, std::span<const std::uint8_t> b) {
                                   receiver.on_frame(src, b);
                               },
                               nullptr, nullptr});
        sim.add_engine(sender);
        sender.start(sim.now());

        const RunResult run = sim.run_while([&] { return !sender.done(); }, 60 * kSeconds);
        ASSERT_EQ(run.reason, StopReason::PredicateFalse) << stop_reason_name(run.reason);
        // Drain stragglers (late duplicates, held-back frames): none may be
        // delivered a second time.
        EXPECT_EQ(sim.run_until_idle(sim.now() + 10 * kSeconds).reason, StopReason::Idle);

        ASSERT_EQ(receiver.delivered().size(), kMessages);
        for (std::uint32_t i = 0; i < kMessages; ++i) {
            ASSERT_EQ(receiver.delivered()[i].first, i);
            ASSERT_EQ(receiver.delivered()[i].second, message_payload(i)) << "message " << i;
        }
        EXPECT_EQ(receiver.impossible(), 0);
        // The run was actually hostile.
        const NetworkStats& s = net.stats();
        EXPECT_GT(s.dropped, 0u);
        EXPECT_GT(s.corrupted, 0u);
        EXPECT_GT(s.duplicated, 0u);
        EXPECT_GT(s.reordered, 0u);
        EXPECT_GT(receiver.rejected(), 0);
        EXPECT_GT(receiver.duplicates(), 0);
        EXPECT_GT(sender.retransmits(), 0);
        EXPECT_EQ(net.frames_pending(), 0u);
    });
}

}  // namespace
}  // namespace sim
