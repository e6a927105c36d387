// plugin/common/net: the non-blocking stream I/O every component uses, and
// Unix-domain listeners with their credentials, on real sockets.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "stream_io.hpp"
#include "unix_socket.hpp"

namespace net = plugin::common::net;
using plugin::common::SendQueue;

namespace {

struct Pair {
    int a = -1;
    int b = -1;
    Pair() {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0) {
            a = fds[0];
            b = fds[1];
        }
    }
    ~Pair() {
        net::close_fd(a);
        net::close_fd(b);
    }
};

std::vector<std::uint8_t> pattern(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    std::iota(v.begin(), v.end(), std::uint8_t{1});
    return v;
}

// Everything the socket has, until it is empty.
std::vector<std::uint8_t> drain(int fd) {
    std::vector<std::uint8_t> out;
    std::uint8_t buf[4096];
    for (;;) {
        const net::IoResult r = net::read_some(fd, buf);
        if (r.status != net::IoStatus::Moved)
            return out;
        out.insert(out.end(), buf, buf + r.bytes);
    }
}

}  // namespace

TEST(StreamIo, ReadSaysAgainWhenEmptyAndClosedAtEof) {
    Pair p;
    ASSERT_GE(p.a, 0);
    std::uint8_t buf[16];
    EXPECT_EQ(net::read_some(p.a, buf).status, net::IoStatus::Again);
    const std::uint8_t hello[3] = {1, 2, 3};
    const net::IoResult w = net::send_some(p.b, hello);
    ASSERT_EQ(w.status, net::IoStatus::Moved);
    EXPECT_EQ(w.bytes, 3u);
    const net::IoResult r = net::read_some(p.a, buf);
    ASSERT_EQ(r.status, net::IoStatus::Moved);
    EXPECT_EQ(r.bytes, 3u);
    net::close_fd(p.b);
    EXPECT_EQ(p.b, -1);
    const net::IoResult eof = net::read_some(p.a, buf);
    EXPECT_EQ(eof.status, net::IoStatus::Closed);
    EXPECT_EQ(eof.error, 0);
}

TEST(StreamIo, ReadFillsTheFirstTargetThenTheSecond) {
    Pair p;
    const auto data = pattern(10);
    ASSERT_EQ(net::send_some(p.b, data).bytes, data.size());
    std::uint8_t first[4] = {};
    std::uint8_t second[16] = {};
    const net::IoResult r = net::read_some(p.a, first, second);
    ASSERT_EQ(r.bytes, 10u);
    EXPECT_EQ(std::vector<std::uint8_t>(first, first + 4),
              std::vector<std::uint8_t>(data.begin(), data.begin() + 4));
    EXPECT_EQ(std::vector<std::uint8_t>(second, second + 6),
              std::vector<std::uint8_t>(data.begin() + 4, data.end()));
}

TEST(StreamIo, AWriteToAClosedPeerFailsWithoutSigpipe) {
    Pair p;
    net::close_fd(p.a);
    const std::uint8_t b[1] = {7};
    const net::IoResult r = net::send_some(p.b, b);  // SIGPIPE would end the test
    EXPECT_EQ(r.status, net::IoStatus::Closed);
    EXPECT_EQ(r.error, EPIPE);
}

TEST(StreamIo, FlushWritesFramesInOrderAcrossAFullSocket) {
    Pair p;
    int small = 4096;
    ASSERT_EQ(::setsockopt(p.b, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    const auto payload = pattern(50'000);
    std::uint8_t heads[8][4];
    SendQueue q;
    for (int i = 0; i < 8; ++i) {
        std::fill(std::begin(heads[i]), std::end(heads[i]), static_cast<std::uint8_t>(0xA0 + i));
        SendQueue::Frame f;
        f.pieces[0] = {heads[i], sizeof heads[i]};
        f.pieces[1] = {payload.data(), payload.size()};
        f.count = 2;
        f.cookie = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i + 1));
        ASSERT_TRUE(q.push(f));
    }
    std::vector<void*> done;
    std::vector<std::uint8_t> got;
    int fulls = 0;
    for (int round = 0; round < 10'000 && !q.empty(); ++round) {
        const net::FlushStatus s = net::flush_queue(p.b, q, done);
        ASSERT_NE(s, net::FlushStatus::Failed);
        fulls += s == net::FlushStatus::Full ? 1 : 0;
        const auto more = drain(p.a);
        got.insert(got.end(), more.begin(), more.end());
    }
    const auto rest = drain(p.a);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_TRUE(q.empty());
    EXPECT_GT(fulls, 0);  // the socket filled up at least once: partial writes were resumed
    ASSERT_EQ(done.size(), 8u);
    for (std::size_t i = 0; i < done.size(); ++i)
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(done[i]), i + 1);
    ASSERT_EQ(got.size(), 8 * (4 + payload.size()));
    for (std::size_t i = 0; i < 8; ++i) {
        const std::uint8_t* frame = got.data() + i * (4 + payload.size());
        EXPECT_EQ(frame[0], 0xA0 + i);
        EXPECT_EQ(frame[3], 0xA0 + i);
        EXPECT_TRUE(std::equal(payload.begin(), payload.end(), frame + 4)) << "frame " << i;
    }
}

TEST(StreamIo, FlushToAClosedPeerFails) {
    Pair p;
    net::close_fd(p.a);
    const auto payload = pattern(100);
    SendQueue q;
    SendQueue::Frame f;
    f.pieces[0] = {payload.data(), payload.size()};
    f.count = 1;
    ASSERT_TRUE(q.push(f));
    std::vector<void*> done;
    EXPECT_EQ(net::flush_queue(p.b, q, done), net::FlushStatus::Failed);
    EXPECT_TRUE(done.empty());
}

TEST(StreamIo, WaitReadyWakesOnDataOrOnTheWakePipe) {
    Pair p;
    net::WakePipe wake;
    ASSERT_TRUE(wake.open());
    EXPECT_FALSE(net::wait_ready(p.a, false, wake.read_fd(), 0));
    wake.wake();
    EXPECT_FALSE(net::wait_ready(p.a, false, wake.read_fd(), 1000));  // woken, fd not ready
    const std::uint8_t b[1] = {1};
    ASSERT_EQ(net::send_some(p.b, b).bytes, 1u);
    EXPECT_TRUE(net::wait_ready(p.a, false, -1, 1000));
    EXPECT_TRUE(net::wait_ready(p.b, true, -1, 0));
}

TEST(UnixSocket, APrivateListenerIsOwnerOnlyAndKnowsItsPeer) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    std::string dir;
    std::string path;
    int listener =
        net::unix_listen_privately({"", std::string(200, 'x'), base}, "unit", "sock", dir, path);
    ASSERT_GE(listener, 0) << std::strerror(errno);
    EXPECT_EQ(dir.rfind(base + "/unit.", 0), 0u);  // the empty and too long bases were skipped
    EXPECT_EQ(path, dir + "/sock");
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    EXPECT_LT(net::accept_one(listener), 0);  // nobody waiting: no block
    int client = net::unix_connect(path);
    ASSERT_GE(client, 0);
    int server = net::accept_one(listener);
    ASSERT_GE(server, 0);
    const auto cred = net::unix_peer_cred(server);
    ASSERT_TRUE(cred.has_value());
    EXPECT_EQ(cred->uid, static_cast<std::uint32_t>(::geteuid()));
    EXPECT_EQ(cred->pid, static_cast<std::int32_t>(::getpid()));
    EXPECT_TRUE(net::send_all(client, pattern(100)));
    EXPECT_EQ(drain(server).size(), 100u);

    net::close_fd(client);
    net::close_fd(server);
    net::unix_unlisten(listener, path, dir);
    EXPECT_EQ(listener, -1);
    EXPECT_NE(::access(dir.c_str(), F_OK), 0);  // socket file and directory are gone
}

TEST(UnixSocket, APathTooLongForSunPathIsRefused) {
    EXPECT_FALSE(net::unix_path_fits(std::string(200, 'p')));
    EXPECT_LT(net::unix_listen(std::string(200, 'p')), 0);
    EXPECT_EQ(errno, ENAMETOOLONG);
    EXPECT_LT(net::unix_connect(std::string(200, 'p')), 0);
}
