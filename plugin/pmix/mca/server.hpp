// The server half's internals: connections on the launcher's event base,
// the registry and trackers, and the launcher's callback table.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "fence.hpp"
#include "half_open.hpp"
#include "peer.hpp"
#include "pending.hpp"
#include "pmix.hpp"
#include "registry.hpp"
#include "wire.hpp"

namespace plugin::pmix::mca::server {

struct Conn {
    std::uint64_t id = 0;
    int fd = -1;
    opal_event_t read_ev{};
    opal_event_t write_ev{};
    bool write_armed = false;
    core::FrameReader in;
    std::deque<std::vector<std::uint8_t>> out;
    std::size_t out_offset = 0;
    bool identified = false;  // Hello accepted (then `in` takes max_msg_size)
    bool finalized = false;
    ProcName proc{};
    core::PeerCred peer{};  // as the kernel reported it at accept
    Conn() : in(core::kMaxHelloPayload) {}
};

// A launcher request (server_dmodex_request) parked on a local commit.
struct HostWait {
    opal_pmix_modex_cbfunc_t cb = nullptr;
    void* cbdata = nullptr;
};

struct Counters {
    std::uint64_t accepted = 0;
    std::uint64_t refused = 0;       // failed the handshake (the two below included)
    std::uint64_t foreign = 0;       // peer credentials refused (core/peer.hpp)
    std::uint64_t hello_late = 0;    // no Hello within hello_timeout
    std::uint64_t bad_messages = 0;  // failed decoding: connection closed
    std::uint64_t fences = 0;
    std::uint64_t failed_fences = 0;
    std::uint64_t dmodex = 0;  // direct-modex requests to the launcher
    std::uint64_t timeouts = 0;
};

struct Server {
    bool running = false;
    opal_pmix_server_module_t host{};
    std::string path;
    std::string dir;  // the private directory holding `path`
    int listen_fd = -1;
    opal_event_t listen_ev{};
    opal_event_t tick_ev{};
    std::map<std::uint64_t, std::unique_ptr<Conn>> conns;
    // Connections that have not said Hello yet (bounded, each with
    // pmix_dr_hello_timeout to say it).
    plugin::common::net::HalfOpenSet<std::uint64_t> half_open{0};
    std::uint64_t next_conn = 1;
    // The registry is also read by setup_fork, which may run on the
    // launcher's worker threads.
    std::mutex reg_mu;
    core::Registry reg;
    core::FenceTable fences;
    core::PendingTable commit_waits{4096};  // gets and host requests for a local commit
    core::PendingTable dmodex_waits{4096};  // gets for a remote process
    std::map<std::uint64_t, HostWait> host_waits;
    std::uint64_t next_host_token = std::uint64_t{1} << 63;
    Counters counters;
};
Server& srv() noexcept;

// A reply's address: connection and request id.
inline std::uint64_t token_of(std::uint64_t conn, std::uint32_t req) noexcept {
    return (conn << 32) | req;
}
inline bool is_host_token(std::uint64_t token) noexcept {
    return (token >> 63) != 0;
}

// server_io.cpp
int start_listener(const std::string& tmpdir);
void stop_all();
void send_to(Conn& c, core::MsgType type, std::uint32_t req, std::span<const std::uint8_t> payload);
void reply(std::uint64_t token, int status, std::span<const std::uint8_t> body = {});
Conn* conn(std::uint64_t id);
std::uint64_t now_seconds();

// server_requests.cpp: one client message; false = close the connection.
bool handle(Conn& c, const core::FrameReader::Message& m);
// A client went away without finalizing: fail what waits on it.
void client_lost(ProcName proc);
// Answers parked waiters whose deadline passed.
void expire_waits();
// Answers waiters parked on `proc`'s commit.
void release_commit_waiters(const core::Client& c);
// Fails every waiter of a finished fence.
void fail_fence(const core::Fence& f, int status);
// The launcher wants a local client's data (now or once it commits).
int park_host_request(const core::Client& c, opal_pmix_modex_cbfunc_t cb, void* cbdata);

}  // namespace plugin::pmix::mca::server
