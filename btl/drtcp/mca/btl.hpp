// btl drtcp glue: the state shared by the component and module files.
// Only this ring includes Open MPI (through opal_prelude.hpp: a BTL is an
// OPAL component).
#pragma once
#include "opal_prelude.hpp"
#include "series.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config.hpp"
#include "opal_log.hpp"
#include "transport.hpp"

namespace btl::drtcp::mca {

struct Module {
    mca_btl_base_module_t super;  // first: Open MPI casts between the two
    int index = -1;               // the transport's module
    int interface = -1;           // index into State::interfaces
    mca_btl_base_module_error_cb_fn_t error_cb = nullptr;
};

}  // namespace btl::drtcp::mca

// Open MPI declares this type and leaves it to each BTL.
struct mca_btl_base_endpoint_t {
    btl::drtcp::adapter::Endpoint* ep = nullptr;
    opal_proc_t* proc = nullptr;
    btl::drtcp::mca::Module* module = nullptr;
};

// A registration as the PML sees it (copied to the peer for its PUTs).
struct mca_btl_base_registration_handle_t {
    std::uint64_t key;
};

namespace btl::drtcp::mca {

// A PUT in flight: what its completion callback needs.
struct PutInfo {
    mca_btl_base_rdma_completion_fn_t cbfunc = nullptr;
    void* local_address = nullptr;
    mca_btl_base_registration_handle_t* local_handle = nullptr;
    void* context = nullptr;
    void* cbdata = nullptr;
};

// A send descriptor: the drtcp frame header, then up to two segments (the
// PML's header with copied data, and optionally the user's buffer in place).
struct Frag {
    mca_btl_base_descriptor_t base;  // first: the PML sees only this
    mca_btl_base_segment_t segments[2];
    mca_btl_base_endpoint_t* endpoint = nullptr;
    Module* module = nullptr;
    std::size_t capacity = 0;  // bytes of `data`
    bool is_put = false;       // a PUT: completes through `put`, not des_cbfunc
    PutInfo put;
    std::uint8_t header[core::kFrameHeaderSize];
    std::uint8_t* data = nullptr;  // follows the struct in the same allocation
};

class FragPool {
  public:
    // Frags of up to `small` bytes come from one free list, larger up to
    // `large` from another; at most `cache` of each stay cached when freed.
    void init(std::size_t small, std::size_t large, std::size_t cache);
    Frag* get(std::size_t bytes);
    void put(Frag* f);
    void clear();
    [[nodiscard]] std::size_t large() const noexcept { return large_; }

  private:
    std::mutex lock_;
    std::size_t small_ = 0;
    std::size_t large_ = 0;
    std::size_t cache_ = 0;
    std::vector<Frag*> free_small_;
    std::vector<Frag*> free_large_;
};

struct State {
    core::Config config;
    plugin::common::OpalLogSink log;
    std::unique_ptr<adapter::Transport> transport;
    std::vector<core::LocalIf> interfaces;  // one per usable address
    std::vector<Module*> modules;
    FragPool frags;
    std::mutex done_lock;
    std::vector<Frag*> done;  // sends completed inline, called back from progress
    int finalized = 0;
    bool put = false;                 // the modules offer put (published in the modex)
    plugin::common::auth::Key key{};  // this process's drtcp key (published in the modex)
    std::uint32_t job_size = 0;       // ranks of this job (PMIx job data); 0: unknown
};

State& state() noexcept;
core::RawParams& raw_params() noexcept;
int register_params(const mca_base_component_t* component) noexcept;

// The module every module is copied from (its generic BTL parameters are
// registered through Open MPI's BTL base).
Module& template_module() noexcept;
void fill_module_functions(mca_btl_base_module_t& m) noexcept;
// A process connected before this one added it (lazy add_procs): added when
// it is a rank of this job that drtcp reaches; otherwise why not.
adapter::PeerVerdict add_unknown_peer(core::ProcName name) noexcept;
// The transport's counters as one line (finalize at info level, btl_dump).
std::string counters_line();

// Transport events -> Open MPI: frames to the tag's callback, send
// completions to descriptors, endpoint failures to the error callback.
adapter::TransportEvents& events() noexcept;
// Frees descriptors without calling anybody (after the PML is closed).
adapter::TransportEvents& discard_events() noexcept;
// Completions of inline sends still waiting for progress: those of one
// endpoint (or all when null), called back (call) or silently freed.
void complete_done(const mca_btl_base_endpoint_t* only, bool call) noexcept;
int progress() noexcept;

// Topology-aware weights (topology.cpp): the numa_weights parameters, and
// each module's latency/bandwidth set from its interface's NUMA distance.
int register_topology_params(const mca_base_component_t* component) noexcept;
void apply_topology_weights() noexcept;

}  // namespace btl::drtcp::mca
