// Test fixtures for the reliability channel: a recording ChannelOutput, a
// sender towards one peer over two paths, and a sender/receiver pair joined
// by a scripted wire. Time is virtual: every call gets `now` from the test.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <vector>

#include "channel.hpp"

namespace channel_fixture {

using namespace pml::dr::core;
using plugin::common::kNever;

constexpr PeerId kPeer = 0;
constexpr PathId kP1 = 10;
constexpr PathId kP2 = 20;

// Records every output. With auto_complete the BTL "finishes" each
// transmission at once, from inside transmit(): a nested channel call.
struct Rec : ChannelOutput {
    struct Tx {
        PeerId peer;
        PathId path;
        FrameRef ref;
        bool retx;
        Micros at;
    };
    struct Ack {
        PeerId peer;
        PathId path;
        AckInfo ack;  // cumulative and selective part (timing in delay/max_delay)
        Micros delay;
        Micros max_delay;
    };
    ReliableChannel* ch = nullptr;
    bool auto_complete = true;
    bool inline_complete = false;  // transmit() answers "done" (like sendi)
    Micros now = 0;
    std::vector<Tx> tx;
    std::vector<Ack> acks;
    struct Nack {
        PeerId peer;
        PathId path;
        std::uint32_t seq;
    };
    std::vector<Nack> nacks;
    struct Probe {
        PeerId peer;
        PathId path;
        std::uint32_t id;
        bool reply;
        Micros at;
    };
    std::vector<Probe> probes;
    struct Bye {
        PeerId peer;
        PathId path;
        Micros at;
    };
    std::vector<Bye> byes;
    std::vector<PathId> failed;
    std::vector<Micros> failed_at;
    std::vector<PeerId> dead;
    std::vector<Micros> dead_at;
    std::vector<FrameToken> acked_tokens;
    std::vector<FrameToken> abandoned_tokens;
    std::function<void(FrameToken)> on_acked;

    bool transmit(PeerId peer, PathId path, FrameRef ref, bool retransmit) override {
        tx.push_back(Tx{peer, path, ref, retransmit, now});
        if (auto_complete && ch != nullptr)
            ch->on_local_complete(peer, path, ref, true, now);
        return inline_complete;
    }
    void send_ack(PeerId peer, PathId path, const AckInfo& ack) override {
        AckInfo sack = ack;
        sack.delay = sack.max_delay = 0;
        acks.push_back(Ack{peer, path, sack, ack.delay, ack.max_delay});
    }
    void send_nack(PeerId peer, PathId path, std::uint32_t seq) override {
        nacks.push_back(Nack{peer, path, seq});
    }
    void send_probe(PeerId peer, PathId path, std::uint32_t id, bool reply) override {
        probes.push_back(Probe{peer, path, id, reply, now});
    }
    void send_bye(PeerId peer, PathId path) override { byes.push_back(Bye{peer, path, now}); }
    void path_failed(PeerId, PathId path) override {
        failed.push_back(path);
        failed_at.push_back(now);
    }
    void peer_dead(PeerId peer) override {
        dead.push_back(peer);
        dead_at.push_back(now);
    }
    void acked(PeerId, FrameToken token) override {
        acked_tokens.push_back(token);
        if (on_acked)
            on_acked(token);
    }
    void abandoned(PeerId, FrameToken token) override { abandoned_tokens.push_back(token); }

    [[nodiscard]] std::vector<std::uint32_t> retransmitted_seqs(std::size_t from = 0) const {
        std::vector<std::uint32_t> out;
        for (std::size_t i = from; i < tx.size(); ++i)
            if (tx[i].retx)
                out.push_back(tx[i].ref.seq);
        std::sort(out.begin(), out.end());
        return out;
    }
};

// A SACK mask with bits at these offsets from its base.
inline std::uint64_t bits(std::initializer_list<unsigned> seqs) {
    std::uint64_t m = 0;
    for (unsigned s : seqs)
        m |= std::uint64_t{1} << s;
    return m;
}

inline ChannelParams test_params() {
    ChannelParams p;
    p.window = 64;
    p.ack_every = 4;
    p.settle_every = 4;
    p.ack_delay = 100;
    // PTO before any sample: 100 + 4 x 50 + 100 (ack_delay) = 400, then
    // 800, then capped at ack_timeout.
    p.initial_rtt = 100;
    p.granularity = 10;
    p.ack_timeout = 1000;
    p.ack_retries = 2;
    p.watchdog_timeout = 500;
    p.watchdog_retries = 1;
    p.peer_dead_timeout = 1'000'000'000;
    return p;
}

// Fires ch's timers up to `until` (inclusive) in deadline order, moving
// `now` along; `now` ends at `until` at least.
inline void run_timers(ReliableChannel& ch, Micros& now, Micros until) {
    for (int guard = 0; guard < 100000; ++guard) {
        const Micros d = ch.next_deadline();
        if (d == kNever || d > until)
            break;
        now = std::max(now, d);
        ch.on_timer(now);
    }
    now = std::max(now, until);
}

// One sender channel towards kPeer with paths kP1 and kP2.
struct Sender {
    Rec out;
    ReliableChannel ch;
    explicit Sender(const ChannelParams& p = test_params(), bool two_paths = true) : ch(p, out) {
        out.ch = &ch;
        ch.add_peer(kPeer);
        EXPECT_TRUE(ch.add_path(kPeer, kP1));
        if (two_paths) {
            EXPECT_TRUE(ch.add_path(kPeer, kP2));
        }
    }
    std::uint32_t submit(FrameToken token, PathId hint = kAnyPath) {
        const SubmitResult r = ch.submit(kPeer, token, out.now, 100, hint);
        EXPECT_TRUE(r.ok()) << to_string(r.status);
        return r.seq;
    }
    void run_timers(Micros until) { channel_fixture::run_timers(ch, out.now, until); }
    void ack(std::uint32_t cum, std::uint32_t base = 0, std::uint64_t mask = 0, PathId path = kP1) {
        ch.on_ack(kPeer, path, AckInfo{cum, base, mask}, out.now);
    }
};

// Sender A and receiver B joined by a loss-free or scripted "wire".
struct Pair {
    Rec a_out;
    Rec b_out;
    ReliableChannel a;
    ReliableChannel b;
    Micros now = 0;
    std::size_t tx_done = 0;
    std::size_t ack_done = 0;
    std::map<std::uint32_t, int> deliveries;  // seq -> times Deliver
    std::uint64_t delivered = 0;

    explicit Pair(const ChannelParams& p) : a(p, a_out), b(p, b_out) {
        a_out.ch = &a;
        b_out.ch = &b;
        a.add_peer(kPeer);
        b.add_peer(kPeer);
        a.add_path(kPeer, kP1);
        b.add_path(kPeer, kP1);
    }
    // Moves frames A->B (dropping those `drop` selects) and ACKs B->A until quiet.
    void pump(const std::function<bool(const Rec::Tx&)>& drop = {}) {
        bool moved = true;
        while (moved) {
            moved = false;
            a_out.now = b_out.now = now;
            while (tx_done < a_out.tx.size()) {
                const Rec::Tx t = a_out.tx[tx_done++];
                moved = true;
                if (drop && drop(t))
                    continue;
                if (b.on_data(kPeer, t.path, t.ref.seq, now) == Verdict::Deliver) {
                    ++deliveries[t.ref.seq];
                    ++delivered;
                }
            }
            while (ack_done < b_out.acks.size()) {
                const Rec::Ack k = b_out.acks[ack_done++];
                moved = true;
                a.on_ack(kPeer, k.path, k.ack, now);
            }
        }
    }
    // Advances virtual time to the next timer of either side and fires it.
    bool step_timer() {
        const Micros d = std::min(a.next_deadline(), b.next_deadline());
        if (d == kNever)
            return false;
        now = std::max(now, d);
        a_out.now = b_out.now = now;
        a.on_timer(now);
        b.on_timer(now);
        return true;
    }
};

}  // namespace channel_fixture
