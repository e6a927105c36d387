// Mutual authentication of a connection by a shared secret, sans I/O.
//
// Two processes that share a key prove it to each other over fresh nonces
// from both sides, in three messages, before either accepts anything else:
//
//   initiator                                            acceptor
//   HELLO   {names, nonce_i, mac(HELLO)}        ──▶  checks the names (is
//                                                     this a process of the
//                                                     job?) and the MAC; on
//                                                     failure closes with no
//                                                     reply
//           ◀──  REPLY {names, nonce_a, mac(REPLY)}   (covers nonce_i)
//   checks the MAC
//   CONFIRM {mac(CONFIRM)}                      ──▶  checks the MAC (covers
//                                                     nonce_a: a replayed
//                                                     HELLO cannot get past it)
//
// mac(step) = HMAC-SHA256(key, protocol label | step | initiator name |
// acceptor name | context | nonce_i [| nonce_a]), so a MAC from one
// protocol, step, pair of names, context (e.g. a link index) or handshake is
// worthless in any other. A HELLO without the key gets no reply at all; a
// replayed HELLO gets a REPLY its sender cannot answer. The key never
// crosses the wire. HMAC and the random source are OpenSSL's libcrypto and
// the kernel's getrandom(2); the MAC comparison is constant time.
//
// Each protocol (btl drtcp, oob drtcp) carries nonce and MAC in its own
// wire messages and asks Handshake what to send and whether to go on.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proc_name.hpp"
#include "result.hpp"

namespace plugin::common::auth {

inline constexpr std::size_t kKeySize = 32;

// The environment variable that carries a job's key (to_hex) from mpirun to
// its daemons and their processes: set by mpirun before it launches anything,
// inherited through the launch environment (never a command line or a file).
inline constexpr const char* kJobKeyEnv = "DR_JOB_KEY";
inline constexpr std::size_t kNonceSize = 16;
inline constexpr std::size_t kMacSize = 32;

using Key = std::array<std::uint8_t, kKeySize>;
using Nonce = std::array<std::uint8_t, kNonceSize>;
using Mac = std::array<std::uint8_t, kMacSize>;

// Fills `out` from the kernel's random source. False only if the kernel
// refuses (no entropy source at all); callers treat that as fatal.
[[nodiscard]] bool random_fill(std::span<std::uint8_t> out) noexcept;
[[nodiscard]] Result<Key> random_key() noexcept;

// A key as 64 lower-case hex characters, and back (exactly 64 hex
// characters, either case; anything else is an error).
std::string to_hex(const Key& key);
Result<Key> parse_hex_key(std::string_view text) noexcept;

// HMAC-SHA256 of `data` under `key`.
Mac hmac(const Key& key, std::span<const std::uint8_t> data) noexcept;

// HMAC-SHA256 under one key with OpenSSL's context kept between MACs: a
// MAC costs about a quarter of hmac()'s (which sets up a context each
// time). For a key used for many handshakes (btl drtcp keeps one per peer).
// Not thread-safe: one user at a time.
class KeyedMac {
  public:
    explicit KeyedMac(const Key& key) noexcept;
    ~KeyedMac();
    KeyedMac(const KeyedMac&) = delete;
    KeyedMac& operator=(const KeyedMac&) = delete;
    [[nodiscard]] const Key& key() const noexcept { return key_; }
    // Same result as hmac(key(), data).
    Mac mac(std::span<const std::uint8_t> data) const noexcept;

  private:
    Key key_;
    void* ctx_ = nullptr;  // EVP_MAC_CTX with the key set; null: fall back to hmac()
};
// Constant-time equality.
bool equal(const Mac& a, const Mac& b) noexcept;

// A key both processes of a pair can derive from their own published keys
// (key_lo belongs to the smaller name): HMAC(key_lo, label | key_hi | names).
Key pair_key(std::string_view label, ProcName lo, const Key& key_lo, ProcName hi,
             const Key& key_hi) noexcept;

enum class Step : std::uint8_t { Hello = 1, Reply = 2, Confirm = 3 };

// What a handshake is about: who initiated, who accepted, and a context
// word of the protocol's (btl drtcp: the link index; 0 when unused).
struct Binding {
    std::string_view protocol;  // a fixed label, e.g. "drtcp-btl-v2"
    ProcName initiator;
    ProcName acceptor;
    std::uint32_t context = 0;
};

Mac step_mac(const Key& key, const Binding& b, Step step, const Nonce& nonce_i,
             const Nonce* nonce_a) noexcept;
Mac step_mac(const KeyedMac& key, const Binding& b, Step step, const Nonce& nonce_i,
             const Nonce* nonce_a) noexcept;

enum class HsState : std::uint8_t {
    Start,          // nothing sent or received yet
    AwaitReply,     // initiator: HELLO sent
    AwaitConfirm,   // acceptor: HELLO checked, REPLY sent
    Authenticated,  // both ends proved the key
    Refused,        // a check failed: close the connection, send nothing more
};
std::string_view to_string(HsState s) noexcept;
bool transition_allowed(HsState from, HsState to) noexcept;

// One side of one handshake. With `enabled` false (authentication turned
// off for debugging on both ends) MACs are sent as zeros and not checked;
// nonces are still fresh. Every method is valid in one state only; a call in
// any other refuses the handshake.
class Handshake {
  public:
    Handshake(const Key& key, bool enabled) noexcept : key_(key), enabled_(enabled) {}
    // The same with a kept context (which must outlive the handshake).
    Handshake(const KeyedMac& keyed, bool enabled) noexcept
        : key_(keyed.key()), keyed_(&keyed), enabled_(enabled) {}

    [[nodiscard]] HsState state() const noexcept { return state_; }
    [[nodiscard]] bool authenticated() const noexcept { return state_ == HsState::Authenticated; }

    struct Offer {
        Nonce nonce{};
        Mac mac{};
    };

    // Initiator, Start -> AwaitReply: the HELLO's nonce and MAC.
    Result<Offer> hello(const Binding& b) noexcept;
    // The same with a nonce the protocol chose (it must never repeat; btl
    // drtcp puts a per-process increasing counter in front of random bytes,
    // so that an acceptor can refuse an old HELLO before replying).
    Result<Offer> hello(const Binding& b, const Nonce& nonce_i) noexcept;
    // Acceptor, Start -> AwaitConfirm: checks a HELLO, returns the REPLY's
    // nonce and MAC; an error means Refused (send nothing).
    Result<Offer> on_hello(const Binding& b, const Nonce& nonce_i, const Mac& mac) noexcept;
    // Initiator, AwaitReply -> Authenticated: checks the REPLY, returns the
    // CONFIRM's MAC.
    Result<Mac> on_reply(const Nonce& nonce_a, const Mac& mac) noexcept;
    // Acceptor, AwaitConfirm -> Authenticated.
    Result<void> on_confirm(const Mac& mac) noexcept;

  private:
    bool move(HsState to) noexcept;
    Mac make(Step step) const noexcept;
    bool check(Step step, const Mac& got) const noexcept;

    Key key_;
    const KeyedMac* keyed_ = nullptr;
    bool enabled_;
    HsState state_ = HsState::Start;
    // Copied: the protocol label is a literal, the rest are values.
    Binding binding_{};
    Nonce nonce_i_{};
    Nonce nonce_a_{};
};

}  // namespace plugin::common::auth
