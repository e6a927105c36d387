// drtcp transport over real loopback sockets (no MPI): two transports in one
// process play two ranks. Frames arrive whole, in order and byte-exact in
// both directions, simultaneous connects settle on one connection, a peer
// that vanishes is reported, a peer that says BYE is not, strangers and
// garbage on the listening port are refused without disturbing the job,
// and the fault injection does what its parameters say.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "transport.hpp"

namespace {

using namespace btl::drtcp;
using adapter::SendResult;
using adapter::Transport;

struct Rec final : adapter::TransportEvents {
    std::vector<std::vector<std::uint8_t>> frames;
    std::vector<std::uint8_t> tags;
    std::vector<void*> sent_ok;
    std::vector<void*> sent_err;
    int failures = 0;
    void on_frame(void*, std::uint8_t tag, std::span<std::uint8_t> p) override {
        tags.push_back(tag);
        frames.emplace_back(p.begin(), p.end());
    }
    void on_sent(void* cookie, bool ok) override { (ok ? sent_ok : sent_err).push_back(cookie); }
    void on_endpoint_failed(void*, void*) override { ++failures; }
};

// A frame as the glue builds it: drtcp header + payload in one buffer.
struct OwnedFrame {
    std::vector<std::uint8_t> bytes;
    plugin::common::SendQueue::Frame view() const {
        plugin::common::SendQueue::Frame f;
        f.pieces[0] = {bytes.data(), bytes.size()};
        f.count = 1;
        f.cookie = const_cast<OwnedFrame*>(this);
        return f;
    }
};

std::unique_ptr<OwnedFrame> make_frame(std::uint8_t tag, std::size_t len, std::uint64_t seed) {
    auto f = std::make_unique<OwnedFrame>();
    f->bytes.resize(core::kFrameHeaderSize + len);
    EXPECT_TRUE(core::encode(core::FrameHeader{tag, 0, static_cast<std::uint32_t>(len)}, f->bytes)
                    .has_value());
    std::mt19937_64 rng(seed);
    for (std::size_t i = core::kFrameHeaderSize; i < f->bytes.size(); ++i)
        f->bytes[i] = static_cast<std::uint8_t>(rng());
    return f;
}

core::Config loopback_config() {
    core::Config c;
    c.connect.connect_timeout = 2 * plugin::common::kSeconds;
    c.connect.retry_delay = 20 * plugin::common::kMillis;
    c.user_timeout_ms = 2000;
    return c;
}

const core::LocalIf kLo{"lo", *core::parse_ip("127.0.0.1"), 8};
constexpr std::uint32_t kMaxFrame = 1 << 20;

struct Rank {
    explicit Rank(core::ProcName n, const core::Config& c = loopback_config())
        : name(n),
          key(*plugin::common::auth::random_key()),
          t(std::make_unique<Transport>(c, n, key, kMaxFrame,
                                        plugin::common::NullLogSink::instance())) {
        auto m = t->add_module(kLo, 0, this);
        EXPECT_TRUE(m.has_value());
    }
    core::PublishedAddr addr() const { return t->published().at(0); }
    core::ProcName name;
    plugin::common::auth::Key key;
    std::unique_ptr<Transport> t;
    Rec rec;
};

// Progresses both until `done` or 10 s of real time (a hang is a failure).
bool pump(Rank& a, Rank& b, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > until)
            return false;
        a.t->progress(a.rec);
        b.t->progress(b.rec);
    }
    return true;
}

void complete(Rank& r, SendResult res, void* cookie) {
    ASSERT_NE(res, SendResult::Unreachable);
    if (res == SendResult::Done)
        r.rec.sent_ok.push_back(cookie);
}

TEST(DrtcpTransport, BothWaysInOrderByteExactWithSimultaneousConnect) {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        Rank a({7, 0}), b({7, 1});
        adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
        adapter::Endpoint* ba = b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
        std::mt19937_64 rng(seed);
        std::vector<std::unique_ptr<OwnedFrame>> to_b, to_a;
        constexpr int kFrames = 300;
        for (int i = 0; i < kFrames; ++i) {
            const std::size_t len = (i % 17 == 0) ? rng() % (kMaxFrame - 64) : rng() % 2000;
            to_b.push_back(make_frame(static_cast<std::uint8_t>(65 + i % 3), len, rng()));
            to_a.push_back(make_frame(66, rng() % 3000, rng()));
            // Both sides send before either has a connection: both connect.
            complete(a, a.t->send(ab, to_b.back()->view()), to_b.back().get());
            complete(b, b.t->send(ba, to_a.back()->view()), to_a.back().get());
            if (i % 50 == 0) {
                a.t->progress(a.rec);
                b.t->progress(b.rec);
            }
        }
        ASSERT_TRUE(pump(a, b,
                         [&] {
                             return b.rec.frames.size() == kFrames &&
                                    a.rec.frames.size() == kFrames &&
                                    a.rec.sent_ok.size() == kFrames &&
                                    b.rec.sent_ok.size() == kFrames;
                         }))
            << "seed " << seed << ": b got " << b.rec.frames.size() << ", a got "
            << a.rec.frames.size();
        for (int i = 0; i < kFrames; ++i) {
            const auto& f = *to_b[static_cast<std::size_t>(i)];
            ASSERT_EQ(
                b.rec.frames[static_cast<std::size_t>(i)],
                std::vector<std::uint8_t>(f.bytes.begin() + core::kFrameHeaderSize, f.bytes.end()))
                << "seed " << seed << " frame " << i;
            EXPECT_EQ(b.rec.tags[static_cast<std::size_t>(i)], f.bytes[1]);
        }
        EXPECT_EQ(a.rec.failures + b.rec.failures, 0);
        EXPECT_TRUE(a.rec.sent_err.empty());
        EXPECT_EQ(Transport::state_of(ab), core::ConnState::Connected);
        EXPECT_EQ(Transport::state_of(ba), core::ConnState::Connected);
    }
}

TEST(DrtcpTransport, APeerBusyLongerThanTheConnectTimeoutIsNoFailure) {
    // B computes (no progress) for longer than connect_timeout while A's
    // first frame waits for B's HELLO: once B progresses the frame arrives,
    // and neither side reports a failure.
    core::Config c = loopback_config();
    c.connect.connect_timeout = 300 * plugin::common::kMillis;
    Rank a({7, 0}, c), b({7, 1}, c);
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    auto f = make_frame(65, 100, 1);
    complete(a, a.t->send(ab, f->view()), f.get());
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
    while (std::chrono::steady_clock::now() < until)
        a.t->progress(a.rec);  // only A runs
    Rank idle({9, 9});
    ASSERT_TRUE(pump(a, b, [&] { return b.rec.frames.size() == 1; }));
    EXPECT_EQ(a.rec.failures + b.rec.failures, 0);
    EXPECT_EQ(Transport::state_of(ab), core::ConnState::Connected);
}

TEST(DrtcpTransport, VanishedPeerIsReportedAndQueuedFramesFail) {
    Rank a({7, 0});
    auto b = std::make_unique<Rank>(core::ProcName{7, 1});
    adapter::Endpoint* ab = a.t->add_endpoint(0, b->name, b->addr(), b->key, nullptr);
    b->t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    auto first = make_frame(65, 100, 1);
    complete(a, a.t->send(ab, first->view()), first.get());
    ASSERT_TRUE(pump(a, *b, [&] { return b->rec.frames.size() == 1; }));
    b.reset();  // closes its sockets without BYE: a crash, as far as a can tell
    Rank idle({9, 9});
    ASSERT_TRUE(pump(a, idle, [&] {
        auto f = make_frame(65, 100, 2);
        if (a.t->send(ab, f->view()) == SendResult::Unreachable)
            return a.rec.failures == 1;
        static std::vector<std::unique_ptr<OwnedFrame>> keep;
        keep.push_back(std::move(f));
        return false;
    }));
    EXPECT_EQ(Transport::state_of(ab), core::ConnState::Failed);
    EXPECT_EQ(a.rec.failures, 1);
    EXPECT_EQ(a.t->counters().endpoint_failures, 1u);
}

TEST(DrtcpTransport, ByeIsNotAFailure) {
    Rank a({7, 0}), b({7, 1});
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    adapter::Endpoint* ba = b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    auto f = make_frame(65, 10, 1);
    complete(a, a.t->send(ab, f->view()), f.get());
    ASSERT_TRUE(pump(a, b, [&] { return b.rec.frames.size() == 1; }));
    b.t->remove_endpoint(ba, b.rec);
    ASSERT_TRUE(pump(a, b, [&] { return Transport::state_of(ab) == core::ConnState::Gone; }));
    EXPECT_EQ(a.rec.failures, 0);
    EXPECT_EQ(a.t->send(ab, f->view()), SendResult::Unreachable);
}

int raw_connect(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    return fd;
}

TEST(DrtcpTransport, StrangersAndGarbageAreRefusedWhileTheJobGoesOn) {
    Rank a({7, 0}), b({7, 1});
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    std::vector<std::unique_ptr<OwnedFrame>> keep;
    auto send_one = [&](std::uint64_t seed) {
        keep.push_back(make_frame(65, 1000, seed));
        complete(a, a.t->send(ab, keep.back()->view()), keep.back().get());
    };
    send_one(1);
    ASSERT_TRUE(pump(a, b, [&] { return b.rec.frames.size() == 1; }));

    const std::uint16_t port = b.addr().port;
    std::mt19937_64 rng(5);
    std::vector<std::vector<std::uint8_t>> attacks;
    attacks.emplace_back(64);  // zeros: wrong magic
    for (auto& x : attacks.back())
        x = static_cast<std::uint8_t>(rng());
    core::Hello forged;  // names a real rank, signed with no key
    forged.from = {7, 0};
    forged.to = {7, 1};
    forged.nonce[0] = 0x7F;
    std::vector<std::uint8_t> hello(core::kHelloSize);
    ASSERT_TRUE(core::encode(forged, hello).has_value());
    auto bad_version = hello;
    bad_version[4] = 1;
    attacks.push_back(bad_version);
    attacks.push_back(std::vector<std::uint8_t>(hello.begin(), hello.begin() + 10));  // truncated
    core::Hello stranger_hello = forged;
    stranger_hello.from = {99, 3};
    std::vector<std::uint8_t> stranger(core::kHelloSize);
    ASSERT_TRUE(core::encode(stranger_hello, stranger).has_value());
    attacks.push_back(stranger);
    attacks.push_back(hello);
    // A frame header with an absurd length as the first bytes.
    std::vector<std::uint8_t> absurd(core::kFrameHeaderSize);
    ASSERT_TRUE(core::encode(core::FrameHeader{65, 0, 0xFFFFFFF0u}, absurd).has_value());
    attacks.push_back(absurd);
    for (const auto& bytes : attacks) {
        const int fd = raw_connect(port);
        ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
        if (bytes.size() == 10)
            ::shutdown(fd, SHUT_WR);  // truncated: the peer sees EOF mid-HELLO
        const std::uint64_t refused = b.t->counters().refused + b.t->counters().duplicates;
        ASSERT_TRUE(pump(
            a, b, [&] { return b.t->counters().refused + b.t->counters().duplicates > refused; }));
        ::close(fd);
        send_one(rng());
    }
    ASSERT_TRUE(pump(a, b, [&] { return b.rec.frames.size() == keep.size(); }));
    EXPECT_EQ(a.rec.failures + b.rec.failures, 0);
    EXPECT_EQ(Transport::state_of(ab), core::ConnState::Connected);
}

TEST(DrtcpTransport, KilledModuleFailsBothSides) {
    core::Config c = loopback_config();
    c.faults.fail_after = 5;
    Rank a({7, 0}, c), b({7, 1});
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    std::vector<std::unique_ptr<OwnedFrame>> keep;
    int accepted = 0;
    for (int i = 0; i < 8; ++i) {
        keep.push_back(make_frame(65, 100, static_cast<std::uint64_t>(i)));
        const SendResult r = a.t->send(ab, keep.back()->view());
        if (r == SendResult::Unreachable)
            break;
        ++accepted;
        if (r == SendResult::Done)
            a.rec.sent_ok.push_back(keep.back().get());
        a.t->progress(a.rec);
        b.t->progress(b.rec);
    }
    EXPECT_EQ(accepted, 5);
    ASSERT_TRUE(pump(a, b, [&] { return a.rec.failures == 1 && b.rec.failures == 1; }));
    EXPECT_TRUE(a.t->module_dead(0));
    EXPECT_EQ(a.rec.sent_ok.size() + a.rec.sent_err.size(), 5u);
}

std::unique_ptr<OwnedFrame> make_put(std::uint64_t key, const void* addr,
                                     const std::vector<std::uint8_t>& bytes) {
    auto f = std::make_unique<OwnedFrame>();
    f->bytes.resize(core::kFrameHeaderSize + core::kPutHeaderSize);
    EXPECT_TRUE(core::encode(core::FrameHeader{0, core::kFrameFlagPut,
                                               static_cast<std::uint32_t>(bytes.size())},
                             f->bytes)
                    .has_value());
    EXPECT_TRUE(core::encode(core::PutHeader{key, reinterpret_cast<std::uintptr_t>(addr)},
                             std::span(f->bytes).subspan(core::kFrameHeaderSize))
                    .has_value());
    f->bytes.insert(f->bytes.end(), bytes.begin(), bytes.end());
    return f;
}

TEST(DrtcpTransport, PutLandsInRegisteredMemoryAndAForgedOneClosesTheConnection) {
    Rank a({7, 0}), b({7, 1});
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    std::vector<std::uint8_t> target(1 << 20, 0);
    const std::uint64_t key = b.t->register_region(target.data(), target.size());
    std::vector<std::uint8_t> data(700000);
    std::mt19937_64 rng(9);
    for (auto& x : data)
        x = static_cast<std::uint8_t>(rng());
    auto put = make_put(key, target.data() + 1000, data);
    complete(a, a.t->send(ab, put->view()), put.get());
    ASSERT_TRUE(
        pump(a, b, [&] { return b.t->counters().puts_received == 1 && !a.rec.sent_ok.empty(); }));
    ASSERT_TRUE(
        pump(a, b, [&] { return std::equal(data.begin(), data.end(), target.begin() + 1000); }));
    EXPECT_TRUE(b.rec.frames.empty());  // a PUT is not a frame for the PML
    // The same key after deregistration: a forged write, the connection dies.
    b.t->deregister_region(key);
    auto forged = make_put(key, target.data(), {1, 2, 3});
    complete(a, a.t->send(ab, forged->view()), forged.get());
    ASSERT_TRUE(
        pump(a, b, [&] { return b.t->counters().protocol_errors == 1 && a.rec.failures == 1; }));
    EXPECT_EQ(target[0], 0);
}

TEST(DrtcpTransport, InjectedDropAndCorruptionHitTheConfiguredShare) {
    core::Config c = loopback_config();
    c.faults.drop = 0.2;
    c.faults.corrupt = 0.2;
    c.faults.seed = 11;
    Rank a({7, 0}), b({7, 1}, c);
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    std::vector<std::unique_ptr<OwnedFrame>> keep;
    constexpr int kFrames = 1000;
    for (int i = 0; i < kFrames; ++i) {
        keep.push_back(make_frame(65, 64, static_cast<std::uint64_t>(i)));
        complete(a, a.t->send(ab, keep.back()->view()), keep.back().get());
        a.t->progress(a.rec);
        b.t->progress(b.rec);
    }
    const auto& k = b.t->counters();
    ASSERT_TRUE(pump(a, b, [&] { return k.frames_received == kFrames; }));
    EXPECT_EQ(b.rec.frames.size(), kFrames - k.fault_dropped);
    EXPECT_NEAR(static_cast<double>(k.fault_dropped) / kFrames, 0.2, 0.05);
    EXPECT_GT(k.fault_corrupted, 100u);
    std::size_t damaged = 0;
    std::size_t next = 0;
    for (const auto& got : b.rec.frames) {
        // Find the frame this is (drops leave gaps); it differs in at most one bit.
        while (next < keep.size()) {
            const auto& f = keep[next++]->bytes;
            const std::vector<std::uint8_t> want(f.begin() + core::kFrameHeaderSize, f.end());
            int bits = 0;
            for (std::size_t i = 0; i < want.size(); ++i)
                bits += __builtin_popcount(static_cast<unsigned>(want[i] ^ got[i]));
            if (bits <= 1) {
                damaged += static_cast<std::size_t>(bits);
                break;
            }
        }
    }
    EXPECT_EQ(damaged, k.fault_corrupted);
}

}  // namespace
