// Private state of the drtcp transport, shared by its two source files.
#pragma once
#include <cstdint>
#include <optional>

#include "transport.hpp"

namespace btl::drtcp::adapter {

struct Conn {
    enum class Kind : std::uint8_t { Listener, Outgoing, Incoming };
    Conn(Kind k, int f, std::uint32_t max_frame)
        : kind(k),
          fd(f),
          decoder(max_frame, k == Kind::Outgoing   ? core::StreamDecoder::Role::Initiator
                             : k == Kind::Incoming ? core::StreamDecoder::Role::Acceptor
                                                   : core::StreamDecoder::Role::None) {}
    Kind kind;
    int fd;
    core::StreamDecoder decoder;
    Endpoint* ep = nullptr;   // outgoing: from the start; incoming: once adopted
    bool connecting = false;  // outgoing, TCP handshake not finished
    bool identified = false;  // handshake complete: carries frames of `ep`
    bool adopted = false;     // incoming: authentic HELLO, REPLY sent, CONFIRM due
    bool counted = false;     // its refusal is counted already
    std::optional<plugin::common::auth::Handshake> hs;
    // Handshake bytes that go out ahead of the first frames (our CONFIRM).
    std::uint8_t prefix[core::kConfirmSize] = {};
    std::size_t prefix_len = 0;
    std::size_t prefix_sent = 0;
    bool closed = false;  // in the graveyard; ignore further events
    bool refused_duplicate = false;
    std::uint64_t frames_written = 0;  // completed on this connection
    core::IpAddr local;                // incoming: the address it arrived on
    core::IpAddr peer;                 // incoming: the address it came from
    std::uint32_t interest = 0;
};

struct Endpoint {
    Endpoint(int m, core::ProcName r, const SockAddr& a, void* u, core::ConnectPolicy policy,
             core::ProcName self, const plugin::common::auth::KeyedMac& k,
             plugin::common::LogSink& log)
        : module(m),
          remote(r),
          raddr(a),
          user(u),
          fsm(self, r, core::endpoint_rules(policy), log, "endpoint"),
          pair_key(&k) {}
    int module;
    core::ProcName remote;
    SockAddr raddr;
    void* user;
    core::ConnectionFsm fsm;
    plugin::common::SendQueue queue;
    Conn* active = nullptr;                          // the connection frames travel on
    Conn* outgoing = nullptr;                        // our connect attempt in progress
    bool write_armed = false;                        // EPOLLOUT requested on `active`
    bool reported = false;                           // its failure went to the PML already
    std::uint64_t sent = 0;                          // frames accepted by send()
    const plugin::common::auth::KeyedMac* pair_key;  // Transport::pair_keys_
    std::uint64_t last_hello_seq = 0;  // highest authentic HELLO sequence from the peer
    bool reconnect = false;            // a connection of ours closed before carrying a frame
};

inline std::uint64_t key_of(core::ProcName n) noexcept {
    return (std::uint64_t{n.jobid} << 32) | n.vpid;
}

plugin::common::Micros monotonic_micros() noexcept;

// Bytes of the scratch read buffer, and the smallest payload remainder read
// straight into the decoder's frame buffer.
inline constexpr std::size_t kScratchBytes = 64 * 1024;
inline constexpr std::size_t kDirectMin = 16 * 1024;

}  // namespace btl::drtcp::adapter
