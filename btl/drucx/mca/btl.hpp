// btl drucx glue: the state shared by the component and module files.
// Only this ring includes Open MPI (through opal_prelude.hpp: a BTL is an
// OPAL component).
#pragma once
#include "opal_prelude.hpp"
#include "series.hpp"
#include "btl_medium.hpp"

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "config.hpp"
#include "fault.hpp"
#include "opal_log.hpp"
#include "pending.hpp"
#include "uct_iface.hpp"
#include "wire.hpp"

namespace btl::drucx::mca {

struct Module {
    mca_btl_base_module_t super;  // first: Open MPI casts between the two
    // What carries our frames, for pml dr (set at init: memory over sysv or
    // posix without injected faults, else network).
    plugin::common::BtlMediumReport medium;
    mca_btl_base_module_error_cb_fn_t error_cb = nullptr;
};
static_assert(offsetof(Module, medium) == offsetof(plugin::common::BtlModuleHead, medium),
              "pml dr reads the medium report where BtlModuleHead has it");

struct Frag;

}  // namespace btl::drucx::mca

// Open MPI declares this type and leaves it to each BTL.
struct mca_btl_base_endpoint_t {
    void* uct_ep = nullptr;
    void* rma_ep = nullptr;  // on the RMA iface (cma), when both sides have one
    opal_proc_t* proc = nullptr;
    std::uint32_t id = 0;  // names the peer in the table of operations in flight
    bool failed = false;
    bool leaving = false;                        // the peer said BYE: its going away is no failure
    std::deque<btl::drucx::mca::Frag*> waiting;  // sends UCT had no resources for yet
};

// A registration as the PML sees it: our memory handle (local use only),
// then the packed remote key the peer's get needs.
struct mca_btl_base_registration_handle_t {
    void* memh;
    std::uint8_t rkey[1];  // really rkey_size bytes (btl_registration_handle_size)
};

namespace btl::drucx::mca {

// A get in flight: what its completion callback needs.
struct RdmaOp {
    mca_btl_base_rdma_completion_fn_t cbfunc;
    mca_btl_base_endpoint_t* endpoint;
    void* local_address;
    mca_btl_base_registration_handle_t* local_handle;
    void* context;
    void* cbdata;
    bool ok;
};

// A send descriptor: the drucx AM header, then the PML's bytes: segment 0
// in `data`, and for a send from the user's buffer in place (prepare_src of
// contiguous data) segment 1 pointing there.
struct Frag {
    mca_btl_base_descriptor_t base;  // first: the PML sees only this
    mca_btl_base_segment_t segment[2];
    mca_btl_base_endpoint_t* endpoint = nullptr;
    std::uint8_t header[core::kAmHeaderSize];
    std::size_t capacity = 0;
    std::uint8_t* data = nullptr;  // follows the struct in the same allocation
};

// Messages that arrived while progress ran with the lock held (several
// threads): copied here, handed to the PML once the lock is released.
struct Inbox {
    struct Entry {
        mca_btl_base_tag_t tag;
        std::size_t offset;
        std::size_t len;
    };
    std::vector<std::uint8_t> bytes;
    std::vector<Entry> entries;
};

// Calls into the PML owed by the module, made with no lock of ours held:
// the PML calls us under its own lock, so calling it under ours could
// deadlock two threads.
struct Upcalls {
    Inbox inbox;
    std::vector<std::pair<Frag*, int>> completions;  // send callbacks (status)
    std::vector<RdmaOp*> rdma;                       // put/get callbacks
    std::vector<mca_btl_base_endpoint_t*> failed;    // error callbacks
    [[nodiscard]] bool empty() const noexcept {
        return inbox.entries.empty() && completions.empty() && rdma.empty() && failed.empty();
    }
};

struct State {
    core::Config config;
    plugin::common::OpalLogSink log;
    std::unique_ptr<adapter::Iface> iface;
    std::unique_ptr<adapter::Iface> rma;  // cma beside shared memory: single-copy put/get
    std::size_t rdma_inflight = 0;        // RMA that UCT completes later (rma progress needed)
    // AM zcopy sends UCT completes later (tcp), by ticket: a completion that
    // comes after its peer was failed finds its ticket stale.
    std::optional<core::PendingTable> in_flight;
    std::uint32_t next_ep_id = 0;
    Module* module = nullptr;
    std::vector<mca_btl_base_endpoint_t*> endpoints;
    std::vector<Frag*> free_frags;
    Upcalls owed;  // run by progress
    std::vector<mca_btl_base_endpoint_t*> newly_failed;
    plugin::common::FaultInjector faults;
    std::size_t waiting_total = 0;  // sends waiting for UCX resources, all peers
    std::uint64_t sent = 0;         // messages handed to UCT or queued
    std::uint64_t zcopy = 0;        // of them, sent by AM zcopy
    std::uint64_t gets = 0;         // RMA operations started
    std::uint64_t puts = 0;
    bool dead = false;  // fault_fail_after reached: as if the transport were gone
    std::uint64_t last_check = 0;
    unsigned turn = 0;         // progress calls, to look at the clock only now and then
    bool in_progress = false;  // UCT must not be progressed from its own callbacks
    bool defer_rx = false;     // arriving messages go to owed.inbox (lock held)
    bool delivering = false;   // a thread is running upcalls: others only queue
    std::recursive_mutex lock;
};

extern State g_state;
inline State& state() noexcept {
    return g_state;
}

// The lock over the UCT worker and everything drucx keeps, taken only when
// several threads may call MPI (opal_using_threads()). Never held while
// calling the PML (see Upcalls); recursive for del_procs, which progresses.
class Guard {
  public:
    Guard() noexcept : held_(opal_using_threads()) {
        if (held_)
            g_state.lock.lock();
    }
    ~Guard() {
        if (held_)
            g_state.lock.unlock();
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

  private:
    bool held_;
};

core::RawParams& raw_params() noexcept;
int register_params(const mca_base_component_t* component) noexcept;
Module& template_module() noexcept;
void fill_module_functions(mca_btl_base_module_t& m) noexcept;
adapter::IfaceEvents& events() noexcept;
int progress() noexcept;
Frag* new_frag(mca_btl_base_endpoint_t* ep, std::size_t bytes, uint32_t flags) noexcept;
void free_frag(Frag* f) noexcept;
// One attempt to hand a frag (AM header + segments) to UCT: gone (done with
// the frag), in flight (UCT completes it later: an owed completion), no
// resources now, or failed.
enum class SendOutcome : std::uint8_t { Sent, InFlight, WouldBlock, Failed };
SendOutcome send_now(mca_btl_base_endpoint_t* ep, Frag* f) noexcept;
// Back-pressure: room for one more waiting send to `ep` (per peer and in all).
inline bool has_room(const mca_btl_base_endpoint_t* ep) noexcept {
    const State& s = state();
    return ep->waiting.size() < s.config.max_pending_peer && s.waiting_total < s.config.max_pending;
}
// Completes a descriptor: its callback (if any), then freed when the BTL owns it.
void complete(Frag* f, int status) noexcept;
// Marks an endpoint failed: its waiting sends complete in error, the PML is
// told (both from progress, as upcalls).
void fail_endpoint(mca_btl_base_endpoint_t* ep) noexcept;

// Topology-aware weights (topology.cpp): the numa_weights parameters, and
// the module's latency/bandwidth set from its UCX device's NUMA distance.
int register_topology_params(const mca_base_component_t* component) noexcept;
void apply_topology_weights(Module& m, const adapter::TlResource& res) noexcept;

}  // namespace btl::drucx::mca
