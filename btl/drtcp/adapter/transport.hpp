// btl drtcp transport: the sockets of one process (POSIX + epoll; no Open
// MPI). It owns the listeners, the connections and the endpoints, drives
// each endpoint's core::ConnectionFsm, writes the plugin::common::SendQueue with
// writev() and feeds reads to core::StreamDecoder. The MCA glue sees
// modules, endpoints, send() and progress(), and gets frames, send
// completions and endpoint failures back through TransportEvents.
//
// Threads: send() may run on any thread; progress() runs on one thread at a
// time (others return at once). Events are delivered from progress() with no
// transport lock held, so the PML may call send() from inside them.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "addr.hpp"
#include "auth.hpp"
#include "config.hpp"
#include "endpoint.hpp"
#include "half_open.hpp"
#include "fault.hpp"
#include "regions.hpp"
#include "log.hpp"
#include "send_queue.hpp"
#include "sockets.hpp"
#include "stream.hpp"
#include "stream_io.hpp"

namespace btl::drtcp::adapter {

// The socket helpers live in plugin/common/net (shared with oob drtcp).
using plugin::common::IpAddr;
using plugin::common::Result;
namespace net = plugin::common::net;
using plugin::common::net::apply_options;
using plugin::common::net::connect_result;
using plugin::common::net::from_sockaddr;
using plugin::common::net::list_interfaces;
using plugin::common::net::listen_on;
using plugin::common::net::port_of;
using plugin::common::net::SockAddr;
using plugin::common::net::SocketOptions;
using plugin::common::net::start_connect;
using plugin::common::net::to_sockaddr;

struct Conn;
struct Endpoint;

// Why an incoming connection was closed before it was adopted (one counter
// each; the first of each reason is logged at info level, the rest at debug).
enum class Refusal : std::uint8_t {
    Malformed,  // bad magic, version, type, length or reserved field
    Silent,     // closed or timed out before a whole HELLO
    Flood,      // over the bound of unidentified connections: the oldest went
    NotForUs,   // the HELLO names another process as its target
    WrongJob,   // names a process of another job this one does not know
    BeyondJob,  // names a rank beyond the job's size
    Unknown,    // names a process this one does not know (or cannot reach)
    BadLink,    // a link index with no module on the address it arrived at
    Address,    // from another address than the one the peer published
    Duplicate,  // the endpoint has an established connection (no reconnect reason)
    Replay,     // a HELLO sequence already seen from that peer
    BadMac,     // HELLO or CONFIRM not signed with the pair's key
};
inline constexpr std::size_t kRefusalCount = 12;
std::string_view to_string(Refusal r) noexcept;

// What the glue says of a process that connects before it was added.
enum class PeerVerdict : std::uint8_t { Known, WrongJob, BeyondJob, Unknown };

struct TransportCounters {
    std::uint64_t frames_sent = 0;
    std::uint64_t frames_received = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t connects = 0;  // outgoing connections attempted
    std::uint64_t accepts = 0;   // incoming connections accepted by the kernel
    std::uint64_t refused = 0;   // incoming closed before adoption (sum of refusals)
    std::array<std::uint64_t, kRefusalCount> refusals{};  // by Refusal
    std::uint64_t handshakes = 0;                         // connections authenticated (either side)
    std::uint64_t reply_refused = 0;                      // our HELLO answered with a bad REPLY
    std::uint64_t duplicates = 0;       // simultaneous connects resolved by closing one
    std::uint64_t protocol_errors = 0;  // malformed stream on an identified connection
    std::uint64_t endpoint_failures = 0;
    std::uint64_t fault_dropped = 0;
    std::uint64_t fault_corrupted = 0;
    std::uint64_t puts_received = 0;
};

class TransportEvents {
  public:
    virtual ~TransportEvents() = default;
    // A frame for the module registered with `module_user`; `payload` is
    // valid during the call only.
    virtual void on_frame(void* module_user, std::uint8_t tag, std::span<std::uint8_t> payload) = 0;
    // A frame queued by send() left (ok) or never will (the endpoint died).
    virtual void on_sent(void* cookie, bool ok) = 0;
    // The endpoint broke (not a graceful BYE): report it to the PML.
    virtual void on_endpoint_failed(void* endpoint_user, void* module_user) = 0;
};

enum class SendResult : std::uint8_t { Done, Queued, Unreachable };

class Transport {
  public:
    // `key`: this process's own key (published to its peers); a pair of
    // processes authenticates with the pair key derived from both.
    Transport(const core::Config& config, core::ProcName self, const plugin::common::auth::Key& key,
              std::uint32_t max_frame, plugin::common::LogSink& log);
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    // One module per (local address, link). Listeners open on first use.
    Result<int> add_module(const core::LocalIf& local, std::uint16_t link, void* user);
    [[nodiscard]] std::size_t modules() const noexcept { return modules_.size(); }
    // What this process publishes: one entry per local address (with the
    // number of links) and the listener's port of its family.
    [[nodiscard]] std::vector<core::PublishedAddr> published() const;

    // `peer_key`: the key the peer published; the pair key is derived once
    // per peer and cached.
    Endpoint* add_endpoint(int module, core::ProcName remote, const core::PublishedAddr& addr,
                           const plugin::common::auth::Key& peer_key, void* user);
    Endpoint* find_endpoint(int module, core::ProcName remote) const;
    // Called (with no transport lock held) when a HELLO names a process
    // this one has not added yet: the glue checks that it belongs to the job
    // and may add it (Open MPI adds procs lazily, on first use); the HELLO is
    // then checked like any other. Anything but Known refuses it.
    void set_unknown_peer_hook(std::function<PeerVerdict(core::ProcName)> hook) {
        unknown_peer_ = std::move(hook);
    }
    // Says BYE, flushes what is queued (bounded wait), closes. The endpoint
    // is freed; queued frames that could not leave complete in error.
    void remove_endpoint(Endpoint* ep, TransportEvents& events);

    // False when the endpoint is dead or its queue is at the limit (back-pressure).
    bool accepting(const Endpoint* ep) const;
    // False once the endpoint failed, the peer said BYE or its module died.
    bool reachable(const Endpoint* ep) const;
    // Queues one frame (cookie + ranges, the drtcp header first) and writes
    // at once when the connection is up and idle. Done: every byte is with
    // the kernel and no on_sent will follow.
    SendResult send(Endpoint* ep, const plugin::common::SendQueue::Frame& frame);

    int progress(TransportEvents& events);

    // Memory a peer's PUT may write (see core::RegionTable).
    std::uint64_t register_region(const void* base, std::size_t len);
    void deregister_region(std::uint64_t key);

    // Fault injection: the module dies as if its network were gone: every
    // connection closes without BYE, its endpoints fail, peers see a reset.
    void kill_module(int module);
    [[nodiscard]] bool module_dead(int module) const;

    // Finalize: BYE on every connection, then close everything.
    void shutdown(TransportEvents& events);

    [[nodiscard]] const TransportCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] static void* user_of(const Endpoint* ep) noexcept;
    [[nodiscard]] static core::ConnState state_of(const Endpoint* ep) noexcept;

  private:
    struct Module {
        core::LocalIf local;
        std::uint16_t link = 0;
        void* user = nullptr;
        bool dead = false;
        bool dying = false;      // kill_module() asked; progress() tears it down
        std::uint64_t sent = 0;  // frames accepted (fault_fail_after counts them)
        std::unordered_map<std::uint64_t, Endpoint*> peers;  // by ProcName
    };
    class ReadSink;

    Result<void> ensure_listener(std::uint8_t family);
    void watch(Conn* c, std::uint32_t events);
    void close_conn(Conn* c);  // deferred free
    void start_connect_locked(Endpoint* ep);
    bool write_hello(Conn* c);
    bool on_reply(Conn* c, const core::Reply& r);
    bool on_confirm(Conn* c, const core::Confirm& m);
    // Counts and logs a refused incoming connection (no reply is sent).
    void refuse(Conn* c, Refusal why, const char* detail);
    bool check_incoming_hello(Conn* c, const core::Hello& h);
    void flush_locked(Endpoint* ep, std::vector<void*>& done);
    void set_writable_interest(Endpoint* ep, bool want);
    // A write found the socket dead: progress() closes it and reports (io_ held).
    void mark_broken(Endpoint* ep);
    void fail_endpoint_locked(Endpoint* ep, core::ConnectionFsm::Action action,
                              std::vector<void*>& errored, std::vector<Endpoint*>& report);
    void handle_accept(Conn* listener);
    void handle_readable(Conn* c, TransportEvents& events);
    void handle_writable(Conn* c, TransportEvents& events);
    void handle_conn_down(Conn* c, TransportEvents& events, bool graceful);
    bool on_hello(Conn* c, const core::Hello& h);
    void run_timers(TransportEvents& events);
    // Delivers collected outcomes with no lock held, and clears the lists.
    void finish(TransportEvents& events, std::vector<void*>& done, std::vector<void*>& errored,
                std::vector<Endpoint*>& report);
    void say_bye_and_close(Endpoint* ep, std::vector<void*>& done, std::vector<void*>& errored);

    core::Config config_;
    core::ProcName self_;
    std::uint32_t max_frame_;
    plugin::common::LogSink* log_;
    SocketOptions sockopts_;
    int epfd_ = -1;
    std::vector<std::unique_ptr<Conn>> listeners_;
    std::uint16_t listen_port_[2] = {0, 0};  // v4, v6
    std::vector<Module> modules_;
    std::vector<std::unique_ptr<Endpoint>> endpoints_;
    std::vector<std::unique_ptr<Conn>> conns_;      // live connections (owned)
    std::vector<std::unique_ptr<Conn>> graveyard_;  // closed, freed after the event batch
    // Incoming connections that have not said HELLO yet (bounded, each with a deadline).
    plugin::common::net::HalfOpenSet<Conn*> half_open_;
    std::vector<Endpoint*> broken_;  // a send hit a dead socket: progress() handles it
    // Outcomes collected by the progress thread while reading (e.g. a HELLO
    // that let queued frames leave), delivered once the read is over.
    std::vector<void*> p_done_;
    std::vector<void*> p_errored_;
    std::vector<Endpoint*> p_report_;
    // Hints progress() reads without the lock (set under it): work waiting
    // for the timer pass.
    std::atomic<bool> timers_{false};       // some endpoint or connection has a deadline
    std::atomic<bool> dying_{false};        // some module was killed
    std::atomic<bool> broken_hint_{false};  // broken_ is not empty
    plugin::common::FaultInjector faults_;
    std::vector<std::uint8_t> scratch_;  // read buffer
    TransportCounters counters_;
    std::function<PeerVerdict(core::ProcName)> unknown_peer_;
    plugin::common::auth::Key key_;
    // By peer, for the transport's lifetime (endpoints and handshakes point here).
    std::unordered_map<std::uint64_t, std::unique_ptr<plugin::common::auth::KeyedMac>> pair_keys_;
    std::uint64_t hello_seq_ = 0;  // the last HELLO sequence sent
    std::array<bool, kRefusalCount> refusal_logged_{};
    core::RegionTable regions_;
    std::mutex regions_lock_;
    mutable std::mutex io_;  // endpoints, queues, connection table, epoll set
    std::mutex progress_;    // one progress() at a time
};

}  // namespace btl::drtcp::adapter
