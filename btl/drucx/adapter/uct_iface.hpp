// btl drucx adapter: one UCT interface — its memory domain, worker and
// iface — opened by transport and device name (no Open MPI). It packs the
// address peers connect to, creates endpoints to peers' addresses, sends
// active messages (short when they fit, bcopy otherwise), progresses, and
// routes AM arrivals and peer failures to an injected handler.
//
// UCT is used, not UCP: see ../README.md for the measurements that decided it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "result.hpp"

namespace btl::drucx::adapter {

using plugin::common::Result;

struct TlResource {
    std::string component;  // e.g. "posix", "cma", "tcp"
    std::string md;         // memory domain name
    std::string tl;         // transport name
    std::string device;     // device name ("memory", "eth0", ...)
};

// Every transport/device pair the UCX library offers on this machine.
std::vector<TlResource> list_resources();

// UCT has no ABI promise across minor versions: whether the library loaded
// at run time (its version in `runtime`, "major.minor") is the one built
// against (kBuiltUcx).
bool runtime_version_matches(std::string& runtime);
extern const char* const kBuiltUcx;

struct IfaceCaps {
    std::size_t am_short = 0;  // 0: no AM short
    std::size_t am_bcopy = 0;  // 0: no AM bcopy
    // AM zcopy on any memory (no registration needed): total bytes and
    // header bytes at most; 0: none.
    std::size_t am_zcopy = 0;
    std::size_t am_zcopy_header = 0;
    bool connect_to_iface = false;
    bool peer_failure = false;  // reports dead peers by itself
    bool ep_check = false;      // can be asked to check a peer (uct_ep_check)
    bool cb_sync = false;       // AM handlers may run synchronously from progress
    bool get_zcopy = false;     // one-sided get from registered user memory
    bool put_zcopy = false;
    std::size_t rkey_size = 0;  // bytes of a packed remote key
};

// An operation UCT may finish later (RMA, AM zcopy): `done(arg, ok)` is
// called once, from progress, when the call that started it returned
// InProgress (and never otherwise).
using OpDone = void (*)(void* arg, bool ok);
enum class OpStart : std::uint8_t { Done, InProgress, WouldBlock, Failed };

class IfaceEvents {
  public:
    virtual ~IfaceEvents() = default;
    // One active message (our AM id); `bytes` valid during the call only.
    virtual void on_am(std::span<const std::uint8_t> bytes) = 0;
    // UCT reported this endpoint's peer failed (from progress).
    virtual void on_ep_error(void* ep_user) = 0;
};

// Messages up to this size (and the transport's own short limit) go by
// uct_ep_am_short, gathered on the stack first.
inline constexpr std::size_t kAmShortMax = 256;

class Iface {
  public:
    ~Iface();
    Iface(const Iface&) = delete;
    Iface& operator=(const Iface&) = delete;

    static Result<std::unique_ptr<Iface>> open(const TlResource& res, IfaceEvents& events);

    [[nodiscard]] const IfaceCaps& caps() const noexcept { return caps_; }
    [[nodiscard]] const TlResource& resource() const noexcept { return res_; }
    // Device address followed by iface address: what a peer connects to.
    [[nodiscard]] std::vector<std::uint8_t> address() const;
    [[nodiscard]] bool reachable(std::span<const std::uint8_t> peer_address) const;

    // An endpoint to a peer's address; `user` comes back with its errors.
    Result<void*> connect(std::span<const std::uint8_t> peer_address, void* user);
    void destroy_ep(void* ep) noexcept;

    // Sends one AM made of `header`, `first` and `second`: gathered on the
    // stack for AM short (up to kAmShortMax bytes), straight into UCT's
    // buffer for bcopy. Ok, or WouldBlock when UCT has no resources now (try again
    // after progress).
    Result<void> send_am(void* ep, std::span<const std::uint8_t> header,
                         std::span<const std::uint8_t> first,
                         std::span<const std::uint8_t> second = {});
    // An AM of `header` (at most caps().am_zcopy_header bytes) then `first`
    // and `second` read in place by UCT, which may go on reading them after
    // the call (until `done`, see OpDone).
    OpStart send_am_zcopy(void* ep, std::span<const std::uint8_t> header,
                          std::span<const std::uint8_t> first, std::span<const std::uint8_t> second,
                          OpDone done, void* arg);
    // The same as send_am for a message already whole in `msg` (at least 8 bytes and
    // at most caps().am_short): the hot path of small sends.
    Result<void> send_am_short(void* ep, const std::uint8_t* msg, std::size_t len) noexcept;
    // Memory registration on this iface's memory domain (for RMA): a handle,
    // the key a peer needs (packed into `rkey`, caps().rkey_size bytes).
    Result<void*> register_memory(void* base, std::size_t len);
    void deregister_memory(void* memh) noexcept;
    bool pack_rkey(void* memh, std::span<std::uint8_t> rkey) const;
    // One-sided copy between local registered memory and a peer's.
    OpStart rma(bool get, void* ep, void* local, std::size_t len, void* local_memh,
                std::uint64_t remote, std::span<const std::uint8_t> rkey, OpDone done, void* arg);

    // Asks UCT to check the peer (posix/sysv report death only this way).
    void check_ep(void* ep) noexcept;

    unsigned progress() noexcept;

  private:
    struct Handles;
    Iface(TlResource res, IfaceEvents& events);

    TlResource res_;
    IfaceEvents* events_;
    IfaceCaps caps_;
    std::unique_ptr<Handles> h_;
};

}  // namespace btl::drucx::adapter
