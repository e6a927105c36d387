// oob drtcp glue: the state shared by the component's files. Everything
// here runs on the ORTE event base thread (orte_event_base), where the OOB
// base calls the component and where every socket event is registered.
#pragma once
#include "orte_prelude.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "auth.hpp"
#include "config.hpp"
#include "half_open.hpp"
#include "handshake.hpp"
#include "deadline_timer.hpp"
#include "netaddr.hpp"
#include "opal_log.hpp"
#include "peer.hpp"
#include "send_queue.hpp"
#include "stream.hpp"

extern "C" mca_oob_base_component_t mca_oob_drtcp_component;

namespace oob::drtcp::mca {

using core::ProcName;

inline ProcName name_of(const orte_process_name_t& n) noexcept {
    return {n.jobid, n.vpid};
}
inline orte_process_name_t orte_name(const ProcName& n) noexcept {
    orte_process_name_t o;
    o.jobid = n.jobid;
    o.vpid = n.vpid;
    return o;
}
inline std::uint64_t key_of(const ProcName& n) noexcept {
    return (static_cast<std::uint64_t>(n.jobid) << 32) | n.vpid;
}

// One message on its way to the next hop: the encoded header, then the
// payload (the RML's buffer, or our copy of iovecs / a relayed message).
struct OutMsg {
    std::uint8_t header[core::kHeaderSize];
    std::vector<std::uint8_t> owned;  // our copy, when the payload is not the RML's
    const std::uint8_t* payload = nullptr;
    std::size_t len = 0;
    orte_rml_send_t* msg = nullptr;
};

struct Peer;

// One TCP connection, outgoing or accepted. An accepted one belongs to no
// peer until its handshake is complete (the HELLO's claim is not enough).
struct Connection {
    int fd = -1;
    bool outgoing = false;
    bool tcp_up = false;   // outgoing: the connect completed
    Peer* peer = nullptr;  // set once the peer is known
    opal_event_t read_ev{};
    opal_event_t write_ev{};
    bool writing = false;  // write_ev is armed
    core::StreamDecoder decoder;
    plugin::common::SendQueue queue;
    core::LinkHandshake hs;
    // Our handshake frames while they are queued (HELLO then CONFIRM, or REPLY).
    std::uint8_t hs_frames[2][core::kHandshakeSize] = {};

    Connection(std::uint32_t max_msg, const core::LinkHandshake::Setup& s,
               plugin::common::LogSink& log)
        : decoder(max_msg), hs(s, log) {}
};

struct Peer {
    ProcName name;
    core::ConnectionFsm fsm;
    std::vector<plugin::common::IpAddr> addrs;  // from its URI
    std::vector<std::uint16_t> ports;
    Connection* conn = nullptr;     // the connection in use (or being made)
    Connection* pending = nullptr;  // accepted from it, our REPLY out, its CONFIRM due
    std::deque<OutMsg*> waiting;    // until connected
    bool ever_connected = false;    // a later connection of ours claims a reconnect
    Peer(ProcName n, const core::ConnectPolicy& p, plugin::common::LogSink& log, ProcName me)
        : name(n), fsm(me, n, core::peer_rules(p), log, "peer") {}
};

struct Listener {
    int fd = -1;
    std::uint8_t family = 4;
    std::uint16_t port = 0;
    opal_event_t ev{};
};

struct Counters {
    std::uint64_t sent = 0, received = 0, relayed = 0;
    std::uint64_t refused = 0;  // connections from strangers: unknown or forged identity
    std::uint64_t races = 0;    // simultaneous connects: the peer's lost (not counted as refused)
    std::uint64_t refused_identity = 0;  // of `refused`: not a daemon of the job, or a duplicate
    std::uint64_t refused_key = 0;       // of `refused`: a MAC that does not prove the job's key
    std::uint64_t late = 0;  // of `refused`: no complete handshake in time, or too many waiting
    std::uint64_t decode_errors = 0;  // connections closed for a protocol error
};

struct State {
    core::RawParams raw;
    plugin::common::auth::Key key{};  // the job's key (mpirun draws it)
    core::Config config;
    plugin::common::OpalLogSink log;
    std::vector<plugin::common::LocalIf> ifs;  // addresses we publish
    std::vector<Listener> listeners;
    std::unordered_map<std::uint64_t, std::unique_ptr<Peer>> peers;
    std::vector<std::unique_ptr<Connection>> conns;
    // Accepted connections whose handshake is not complete (bounded, each
    // with oob_drtcp_connect_timeout to complete it).
    plugin::common::net::HalfOpenSet<Connection*> half_open{0};
    plugin::common::DeadlineTimer timer;
    Counters counters;
    bool started = false;
};
State& state() noexcept;

// component.cpp
int register_params() noexcept;

// connection.cpp
int open_listeners() noexcept;
void close_all() noexcept;
Peer& peer_for(const ProcName& name);
// Queue `m` to the hop `p` (connecting if needed).
void enqueue(Peer& p, OutMsg* m);
void arm_timer() noexcept;

// messages.cpp
OutMsg* make_out(orte_rml_send_t* msg);
// The message left (ok) or will never leave (!ok): complete it for the RML.
void finish(OutMsg* m, bool ok) noexcept;
// Finalizing: frees `m` and its RML message without calling anybody back.
void discard(OutMsg* m) noexcept;
void deliver(const core::Header& h, std::span<const std::uint8_t> payload) noexcept;
// ORTE's bookkeeping when a connection to `peer` comes up or goes away.
void mark_connected(const ProcName& peer) noexcept;
void report_lost(const ProcName& peer) noexcept;
void report_unreachable(Peer& p) noexcept;

}  // namespace oob::drtcp::mca
