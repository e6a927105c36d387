// oob drtcp: the handshake of one connection (sans I/O). The side that
// connected sends HELLO; the side that accepted checks who it claims to be
// (admission.hpp: a known daemon of the job, addressed to us) and the MAC
// of the job's key over its nonce, and only then answers REPLY (its own
// nonce, a MAC over both); the connector checks that and sends CONFIRM (a MAC
// the acceptor's fresh nonce makes unique to this connection, so a replayed
// HELLO goes no further). Anything else refuses the connection: nothing
// more is sent, nothing reaches ORTE, the glue closes it and counts why.
//
//   Initiator: Start ──hello()──▶ HelloSent ──REPLY ok──▶ Open (CONFIRM sent)
//   Acceptor:  Start ──HELLO admitted, MAC ok──▶ ReplySent ──CONFIRM ok──▶ Open
//   any state but Open ──a check fails──▶ Refused
//
// The MAC work is auth::Handshake's (plugin/common/core/auth.hpp), bound to
// the label "drtcp-oob-v2", both names and the HELLO's flags.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "admission.hpp"
#include "auth.hpp"
#include "log.hpp"
#include "wire.hpp"

namespace oob::drtcp::core {

inline constexpr std::string_view kAuthLabel = "drtcp-oob-v2";

enum class LinkRole : std::uint8_t { Initiator, Acceptor };

enum class LinkState : std::uint8_t { Start, HelloSent, ReplySent, Open, Refused };
std::string_view to_string(LinkState s) noexcept;
bool transition_allowed(LinkState from, LinkState to) noexcept;

// Why a connection was refused, for the counters.
enum class Refusal : std::uint8_t {
    None,
    Protocol,  // a frame out of turn, or naming the wrong processes
    Identity,  // admission said no (a stranger, or a duplicate)
    Race,      // admission said our simultaneous connection wins
    Key,       // a MAC that does not prove the job's key
};
std::string_view to_string(Refusal r) noexcept;

// The glue's view of the job, asked on HELLO before anything is answered.
class Admitter {
  public:
    virtual ~Admitter() = default;
    virtual Admission admit(const ProcName& from, const ProcName& to, bool reconnect) = 0;
};

class LinkHandshake {
  public:
    struct Setup {
        LinkRole role = LinkRole::Acceptor;
        ProcName me;
        ProcName peer;  // initiator: the process it dialed
        const plugin::common::auth::Key* key = nullptr;
        bool auth = true;        // false: MACs zero and unchecked (debugging)
        bool reconnect = false;  // initiator: we lost a previous connection to `peer`
    };
    struct Step {
        bool send = false;  // `out` holds a frame to send
        bool open = false;  // the handshake is complete: messages may flow
    };

    LinkHandshake(const Setup& s, plugin::common::LogSink& log) noexcept;

    [[nodiscard]] LinkState state() const noexcept { return state_; }
    [[nodiscard]] bool open() const noexcept { return state_ == LinkState::Open; }
    [[nodiscard]] LinkRole role() const noexcept { return role_; }
    // The peer: the dialed process, or (acceptor) who the HELLO claimed.
    [[nodiscard]] const ProcName& peer() const noexcept { return peer_; }
    [[nodiscard]] bool peer_claimed() const noexcept {
        return role_ == LinkRole::Initiator || state_ != LinkState::Start;
    }
    [[nodiscard]] Refusal refusal() const noexcept { return refusal_; }
    [[nodiscard]] Admission admission() const noexcept { return admission_; }

    // Initiator, Start -> HelloSent: the HELLO, into `out` (kHandshakeSize).
    Result<void> hello(std::span<std::uint8_t> out) noexcept;
    // A handshake frame from the peer; a frame to send goes into `out`.
    // An error means Refused (refusal() says why): send nothing, close.
    Result<Step> on_frame(const HandshakeFrame& f, Admitter& admitter,
                          std::span<std::uint8_t> out) noexcept;

  private:
    void transition(LinkState to, const char* reason) noexcept;
    plugin::common::Error refuse(Refusal why, plugin::common::Error e) noexcept;
    plugin::common::auth::Binding binding() const noexcept;
    Result<Step> on_hello(const HandshakeFrame& f, Admitter& a,
                          std::span<std::uint8_t> out) noexcept;
    Result<Step> on_reply(const HandshakeFrame& f, std::span<std::uint8_t> out) noexcept;
    Result<Step> on_confirm(const HandshakeFrame& f) noexcept;

    LinkRole role_;
    ProcName me_;
    ProcName peer_;
    std::uint8_t flags_ = 0;
    plugin::common::auth::Handshake hs_;
    plugin::common::LogSink* log_;
    LinkState state_ = LinkState::Start;
    Refusal refusal_ = Refusal::None;
    Admission admission_ = Admission::Admit;
};

}  // namespace oob::drtcp::core
