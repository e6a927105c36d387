// drtcp authenticated wire-up over real loopback sockets (no MPI): a raw
// client plays the stranger (or, holding the pair's key, a real rank) against
// a transport. Whatever fails a check gets no reply byte at all, is counted
// under its reason, and the ranks' own traffic goes on.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "transport.hpp"

namespace {

using namespace btl::drtcp;
using adapter::Refusal;
using adapter::SendResult;
using adapter::Transport;
namespace auth = plugin::common::auth;

struct Rec final : adapter::TransportEvents {
    std::vector<std::vector<std::uint8_t>> frames;
    int failures = 0;
    void on_frame(void*, std::uint8_t, std::span<std::uint8_t> p) override {
        frames.emplace_back(p.begin(), p.end());
    }
    void on_sent(void*, bool) override {}
    void on_endpoint_failed(void*, void*) override { ++failures; }
};

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

std::vector<std::uint8_t> frame_bytes(std::uint8_t tag, std::size_t len, std::uint8_t fill) {
    std::vector<std::uint8_t> b(core::kFrameHeaderSize + len, fill);
    EXPECT_TRUE(core::encode(core::FrameHeader{tag, 0, static_cast<std::uint32_t>(len)}, b));
    return b;
}

core::Config config(bool auth_on = true) {
    core::Config c;
    c.connect.connect_timeout = 2 * plugin::common::kSeconds;
    c.connect.retry_delay = 20 * plugin::common::kMillis;
    c.user_timeout_ms = 2000;
    c.auth = auth_on;
    return c;
}

const core::LocalIf kLo{"lo", *core::parse_ip("127.0.0.1"), 8};
constexpr std::uint32_t kMaxFrame = 1 << 20;

struct Rank {
    explicit Rank(core::ProcName n, const core::Config& c = config())
        : name(n),
          key(*auth::random_key()),
          t(std::make_unique<Transport>(c, n, key, kMaxFrame,
                                        plugin::common::NullLogSink::instance())) {
        EXPECT_TRUE(t->add_module(kLo, 0, this).has_value());
    }
    core::PublishedAddr addr() const { return t->published().at(0); }
    std::uint64_t refused(Refusal r) const {
        return t->counters().refusals[static_cast<std::size_t>(r)];
    }
    core::ProcName name;
    auth::Key key;
    std::unique_ptr<Transport> t;
    Rec rec;
};

auth::Key pair_key_of(const Rank& a, const Rank& b) {
    const bool a_low = a.name < b.name;
    const Rank& lo = a_low ? a : b;
    const Rank& hi = a_low ? b : a;
    return auth::pair_key(core::kAuthLabel, lo.name, lo.key, hi.name, hi.key);
}

bool pump(std::initializer_list<Rank*> ranks, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > until)
            return false;
        for (Rank* r : ranks)
            r->t->progress(r->rec);
    }
    return true;
}

// A client speaking raw bytes to a listening port.
struct Raw {
    explicit Raw(std::uint16_t port) : fd(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    ~Raw() { ::close(fd); }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;
    void send(const std::vector<std::uint8_t>& b) const {
        ASSERT_EQ(::send(fd, b.data(), b.size(), MSG_NOSIGNAL), static_cast<ssize_t>(b.size()));
    }
    // Reads what is there; true once the peer closed (EOF or reset).
    bool drain() {
        std::uint8_t buf[4096];
        for (;;) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n > 0) {
                got.insert(got.end(), buf, buf + n);
                continue;
            }
            if (n == 0)
                return true;
            return errno != EAGAIN && errno != EWOULDBLOCK;
        }
    }
    int fd;
    std::vector<std::uint8_t> got;
};

// A HELLO from `from` to `to` signed with `key` (zeros when !enabled).
struct Forged {
    std::vector<std::uint8_t> bytes;
    std::unique_ptr<auth::Handshake> hs;
};
Forged forge_hello(core::ProcName from, core::ProcName to, const auth::Key& key, std::uint64_t seq,
                   bool enabled = true, std::uint16_t link = 0) {
    Forged f;
    f.hs = std::make_unique<auth::Handshake>(key, enabled);
    std::array<std::uint8_t, 8> random{};
    EXPECT_TRUE(auth::random_fill(random));
    auto offer = f.hs->hello(auth::Binding{core::kAuthLabel, from, to, link},
                             core::make_hello_nonce(seq, random));
    core::Hello h;
    h.from = from;
    h.to = to;
    h.link = link;
    h.nonce = offer->nonce;
    h.mac = offer->mac;
    f.bytes.resize(core::kHelloSize);
    EXPECT_TRUE(core::encode(h, f.bytes));
    return f;
}

// Sends `bytes` as the first thing on a new connection to `target` and
// pumps until the connection is refused under `why`: no reply byte came.
void expect_refused(std::initializer_list<Rank*> ranks, Rank& target,
                    const std::vector<std::uint8_t>& bytes, Refusal why) {
    const std::uint64_t before = target.refused(why);
    Raw raw(target.addr().port);
    raw.send(bytes);
    ASSERT_TRUE(pump(ranks, [&] { return target.refused(why) > before; }))
        << "not refused as " << adapter::to_string(why);
    ASSERT_TRUE(pump(ranks, [&] { return raw.drain(); })) << "connection left open";
    EXPECT_TRUE(raw.got.empty()) << raw.got.size() << " reply bytes to a refused HELLO";
}

// Two ranks connected and exchanging frames, the shape every test attacks.
struct Job {
    Job() : a({7, 0}), b({7, 1}) {
        ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
        ba = b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
        send_one();
        EXPECT_TRUE(pump({&a, &b}, [&] { return b.rec.frames.size() == 1; }));
    }
    void send_one() {
        keep.push_back(std::make_unique<OwnedFrame>(
            OwnedFrame{frame_bytes(65, 500, static_cast<std::uint8_t>(keep.size()))}));
        ASSERT_NE(a.t->send(ab, keep.back()->view()), SendResult::Unreachable);
    }
    void still_works() {
        send_one();
        ASSERT_TRUE(pump({&a, &b}, [&] { return b.rec.frames.size() == keep.size(); }));
        for (std::size_t i = 0; i < keep.size(); ++i)
            EXPECT_EQ(b.rec.frames[i],
                      std::vector<std::uint8_t>(keep[i]->bytes.begin() + core::kFrameHeaderSize,
                                                keep[i]->bytes.end()));
        EXPECT_EQ(a.rec.failures + b.rec.failures, 0);
        EXPECT_EQ(Transport::state_of(ab), core::ConnState::Connected);
        EXPECT_EQ(Transport::state_of(ba), core::ConnState::Connected);
    }
    Rank a, b;
    adapter::Endpoint* ab = nullptr;
    adapter::Endpoint* ba = nullptr;
    std::vector<std::unique_ptr<OwnedFrame>> keep;
};

TEST(DrtcpAuth, RanksAuthenticateBothWays) {
    Job job;
    EXPECT_EQ(job.a.t->counters().handshakes, 1u);
    EXPECT_EQ(job.b.t->counters().handshakes, 1u);
    EXPECT_EQ(job.b.t->counters().refused, 0u);
    job.still_works();
}

TEST(DrtcpAuth, AClientWithThePairKeyCompletesTheHandshakeByHand) {
    // The key is all it takes: a raw client holding a's pair key with b
    // completes the three messages and b delivers its frame. (Two ranks, and
    // nothing else yet: b has no connection to a.)
    Rank a({7, 0}), b({7, 1});
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    Forged f = forge_hello(a.name, b.name, pair_key_of(a, b), 1000);
    Raw raw(b.addr().port);
    raw.send(f.bytes);
    ASSERT_TRUE(pump({&b}, [&] {
        raw.drain();
        return raw.got.size() >= core::kReplySize;
    }));
    ASSERT_EQ(raw.got.size(), core::kReplySize);
    auto reply = core::decode_reply(raw.got);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->from, b.name);
    auto confirm = f.hs->on_reply(reply->nonce, reply->mac);
    ASSERT_TRUE(confirm.has_value());
    std::vector<std::uint8_t> c(core::kConfirmSize);
    ASSERT_TRUE(core::encode(core::Confirm{*confirm}, c));
    raw.send(c);
    raw.send(frame_bytes(66, 10, 0xEE));
    ASSERT_TRUE(pump({&b}, [&] { return b.rec.frames.size() == 1; }));
    EXPECT_EQ(b.rec.frames[0], std::vector<std::uint8_t>(10, 0xEE));
    EXPECT_EQ(b.t->counters().handshakes, 1u);
}

TEST(DrtcpAuth, AForgedHelloForARealRankGetsNoReplyAtAll) {
    Job job;
    // Rank 2 is part of the job and known to b, not connected yet: a HELLO
    // in its name, well-formed, gets past every identity check.
    Rank c({7, 2});
    job.b.t->add_endpoint(0, c.name, c.addr(), c.key, nullptr);
    // Signed with another key.
    const Forged wrong = forge_hello(c.name, job.b.name, *auth::random_key(), 1ull << 62);
    expect_refused({&job.a, &job.b}, job.b, wrong.bytes, Refusal::BadMac);
    // Or with no key at all (zero MAC).
    const Forged zero = forge_hello(c.name, job.b.name, auth::Key{}, 1ull << 62, false);
    expect_refused({&job.a, &job.b}, job.b, zero.bytes, Refusal::BadMac);
    // Rank 2's own published key is not the pair's key either.
    const Forged own = forge_hello(c.name, job.b.name, c.key, 1ull << 62);
    expect_refused({&job.a, &job.b}, job.b, own.bytes, Refusal::BadMac);
    EXPECT_EQ(job.b.t->counters().handshakes, 1u);
    job.still_works();
    // The real rank 2 still connects afterwards: a refused HELLO moved no
    // replay bar.
    adapter::Endpoint* cb = c.t->add_endpoint(0, job.b.name, job.b.addr(), job.b.key, nullptr);
    OwnedFrame f{frame_bytes(67, 30, 9)};
    ASSERT_NE(c.t->send(cb, f.view()), SendResult::Unreachable);
    ASSERT_TRUE(
        pump({&job.a, &job.b, &c}, [&] { return job.b.rec.frames.size() == job.keep.size() + 1; }));
}

TEST(DrtcpAuth, AReplayedHelloIsRefusedBeforeAnyReply) {
    // A HELLO captured from a completed handshake (here: made with the real
    // pair key), sent again: its sequence is old, nothing is answered. Fresh
    // nonces on both sides mean it could not complete anyway (test_auth).
    Rank a({7, 0}), b({7, 1});
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    Forged f = forge_hello(a.name, b.name, pair_key_of(a, b), 5000);
    {
        Raw first(b.addr().port);
        first.send(f.bytes);
        ASSERT_TRUE(pump({&b}, [&] {
            first.drain();
            return first.got.size() >= core::kReplySize;
        }));
    }  // the first one goes away unconfirmed
    for (int i = 0; i < 3; ++i)
        expect_refused({&b}, b, f.bytes, Refusal::Replay);
    // An older sequence from that peer is no better.
    Forged older = forge_hello(a.name, b.name, pair_key_of(a, b), 4999);
    expect_refused({&b}, b, older.bytes, Refusal::Replay);
    EXPECT_EQ(b.t->counters().handshakes, 0u);
    EXPECT_TRUE(b.rec.frames.empty());
}

TEST(DrtcpAuth, UnknownNamesAndRanksBeyondTheJobAreRefusedBeforeAnyReply) {
    Job job;
    // The glue's verdict for names it was not told about (as in an MPI job
    // of two ranks, jobid 7).
    std::vector<core::ProcName> asked;
    job.b.t->set_unknown_peer_hook([&](core::ProcName n) {
        asked.push_back(n);
        if (n.jobid != 7)
            return adapter::PeerVerdict::WrongJob;
        return n.vpid >= 2 ? adapter::PeerVerdict::BeyondJob : adapter::PeerVerdict::Unknown;
    });
    const auth::Key k = *auth::random_key();
    expect_refused({&job.a, &job.b}, job.b, forge_hello({7, 3}, job.b.name, k, 1).bytes,
                   Refusal::BeyondJob);
    expect_refused({&job.a, &job.b}, job.b, forge_hello({7, 0xFFFFFFFFu}, job.b.name, k, 1).bytes,
                   Refusal::BeyondJob);
    expect_refused({&job.a, &job.b}, job.b, forge_hello({99, 0}, job.b.name, k, 1).bytes,
                   Refusal::WrongJob);
    // Addressed to somebody else (another rank, another job).
    expect_refused({&job.a, &job.b}, job.b, forge_hello(job.a.name, {7, 5}, k, 1).bytes,
                   Refusal::NotForUs);
    expect_refused({&job.a, &job.b}, job.b, forge_hello(job.a.name, {8, 1}, k, 1).bytes,
                   Refusal::NotForUs);
    // A link index b has no module for.
    expect_refused(
        {&job.a, &job.b}, job.b,
        forge_hello(job.a.name, job.b.name, pair_key_of(job.a, job.b), 1ull << 62, true, 7).bytes,
        Refusal::BadLink);
    // Without a hook, an unknown name is simply unknown.
    job.b.t->set_unknown_peer_hook(nullptr);
    expect_refused({&job.a, &job.b}, job.b, forge_hello({7, 3}, job.b.name, k, 1).bytes,
                   Refusal::Unknown);
    EXPECT_EQ(asked.size(), 3u);  // known names never reach the glue
    job.still_works();
}

TEST(DrtcpAuth, ADuplicateOfAnEstablishedConnectionIsRefused) {
    Job job;
    // Even with the pair's key (a rank's twin): one connection per pair and link.
    const Forged dup = forge_hello(job.a.name, job.b.name, pair_key_of(job.a, job.b), 1ull << 62);
    expect_refused({&job.a, &job.b}, job.b, dup.bytes, Refusal::Duplicate);
    job.still_works();
}

TEST(DrtcpAuth, HostileFirstBytesAreRefusedAsMalformed) {
    Job job;
    std::mt19937_64 rng(24);
    const Forged good = forge_hello(job.a.name, job.b.name, auth::Key{}, 1);
    std::vector<std::vector<std::uint8_t>> attacks;
    attacks.push_back(frame_bytes(65, 0, 0));  // a frame before any handshake
    std::vector<std::uint8_t> huge(core::kFrameHeaderSize);
    ASSERT_TRUE(core::encode(core::FrameHeader{65, 0, 0xFFFFFFF0u}, huge));
    attacks.push_back(huge);
    auto long_hello = good.bytes;
    long_hello[6] = 0xFF;  // a HELLO claiming 65 KB
    long_hello[7] = 0xFF;
    attacks.push_back(long_hello);
    auto v1 = good.bytes;
    v1[4] = 1;
    attacks.push_back(v1);
    auto confirm_first = good.bytes;
    confirm_first[5] = 3;
    attacks.push_back(confirm_first);
    std::vector<std::uint8_t> noise(300);
    for (auto& x : noise)
        x = static_cast<std::uint8_t>(rng());
    attacks.push_back(noise);
    for (const auto& bytes : attacks)
        expect_refused({&job.a, &job.b}, job.b, bytes, Refusal::Malformed);
    // Truncated, then the caller hangs up: silent.
    {
        const std::uint64_t before = job.b.refused(Refusal::Silent);
        Raw raw(job.b.addr().port);
        raw.send(std::vector<std::uint8_t>(good.bytes.begin(), good.bytes.begin() + 20));
        ::shutdown(raw.fd, SHUT_WR);
        ASSERT_TRUE(
            pump({&job.a, &job.b}, [&] { return job.b.refused(Refusal::Silent) > before; }));
        ASSERT_TRUE(pump({&job.a, &job.b}, [&] { return raw.drain(); }));
        EXPECT_TRUE(raw.got.empty());
    }
    job.still_works();
}

TEST(DrtcpAuth, SilentConnectionsAreBoundedAndTimedOut) {
    core::Config c = config();
    c.connect.connect_timeout = 300 * plugin::common::kMillis;
    Rank a({7, 0}, c), b({7, 1}, c);
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    std::vector<std::unique_ptr<Raw>> silent;
    for (int i = 0; i < 100; ++i)  // more than the bound of unidentified connections
        silent.push_back(std::make_unique<Raw>(b.addr().port));
    ASSERT_TRUE(pump({&a, &b}, [&] { return b.t->counters().accepts >= 100; }));
    EXPECT_GE(b.refused(Refusal::Flood), 100u - 64u);
    // The real rank still gets in while they hang around.
    OwnedFrame f{frame_bytes(65, 100, 1)};
    ASSERT_NE(a.t->send(ab, f.view()), SendResult::Unreachable);
    ASSERT_TRUE(pump({&a, &b}, [&] { return b.rec.frames.size() == 1; }));
    ASSERT_TRUE(pump(
        {&a, &b}, [&] { return b.refused(Refusal::Silent) + b.refused(Refusal::Flood) >= 100; }));
    for (auto& r : silent) {
        EXPECT_TRUE(r->drain());
        EXPECT_TRUE(r->got.empty());
    }
}

TEST(DrtcpAuth, AuthOffConnectsWithoutMacsAndStillChecksIdentity) {
    Rank a({7, 0}, config(false)), b({7, 1}, config(false));
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    OwnedFrame f{frame_bytes(65, 100, 2)};
    ASSERT_NE(a.t->send(ab, f.view()), SendResult::Unreachable);
    ASSERT_TRUE(pump({&a, &b}, [&] { return b.rec.frames.size() == 1; }));
    EXPECT_EQ(b.t->counters().handshakes, 1u);
    // Identity checks stay: a stranger's name is refused with no reply.
    expect_refused({&a, &b}, b, forge_hello({7, 9}, b.name, auth::Key{}, 1, false).bytes,
                   Refusal::Unknown);
    // Without MACs a forged HELLO for a real rank gets in: what "off" means.
    Rank c({7, 2}, config(false));
    c.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    Raw raw(c.addr().port);
    raw.send(forge_hello(a.name, c.name, auth::Key{}, 1, false).bytes);
    ASSERT_TRUE(pump({&c}, [&] {
        raw.drain();
        return raw.got.size() >= core::kReplySize;
    }));
}

TEST(DrtcpAuth, OneSideWithAuthOffCannotConnectToOneWithAuthOn) {
    Rank a({7, 0}, config(false)), b({7, 1}, config(true));
    adapter::Endpoint* ab = a.t->add_endpoint(0, b.name, b.addr(), b.key, nullptr);
    b.t->add_endpoint(0, a.name, a.addr(), a.key, nullptr);
    OwnedFrame f{frame_bytes(65, 100, 3)};
    ASSERT_NE(a.t->send(ab, f.view()), SendResult::Unreachable);
    ASSERT_TRUE(pump({&a, &b}, [&] { return b.refused(Refusal::BadMac) >= 1; }));
    EXPECT_TRUE(b.rec.frames.empty());
    EXPECT_EQ(b.t->counters().handshakes, 0u);
}

}  // namespace
