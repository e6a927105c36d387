// pml dr glue: the module state and the request types Open MPI sees.
// Everything here is thin: decisions about matching and validation of wire
// input live in core::Engine; this layer moves bytes between convertors and
// BTL descriptors and completes requests.
#pragma once
#include "ompi_prelude.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "config.hpp"
#include "engine.hpp"
#include "reliable_engine.hpp"
#include "opal_log.hpp"
#include "scheduler.hpp"

namespace pml::dr::mca {

// What an operation naming a dead peer completes with (MPI 3.1 has no class
// for a failed process; ULFM's MPI_ERR_PROC_FAILED is not in Open MPI 4.1).
inline constexpr int kPeerDeadError = MPI_ERR_OTHER;

// The one BTL tag pml dr registers; the frame type travels in our header.
inline constexpr mca_btl_base_tag_t kBtlTag = MCA_BTL_TAG_PML + 1;

// Flags of every frame descriptor. No MCA_BTL_DES_SEND_ALWAYS_CALLBACK: a BTL
// that sends a frame whole inside its send (tcp, self) then returns 1 and
// calls nothing back, which the reliability glue's post() relies on (with
// the flag, tcp would call back and return 1 as well).
inline constexpr std::uint32_t kFrameDesFlags =
    MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;

// A BTL module is a channel path (core::PathId) to each peer it reaches; its
// name for logs.
inline std::uint64_t path_of(const mca_btl_base_module_t* btl) noexcept {
    return reinterpret_cast<std::uint64_t>(btl);
}
// Core handles and frame tokens are the addresses of our own objects
// (requests, stored frames), opaque to the core; this is the way back.
template <typename T>
T* from_handle(std::uint64_t h) noexcept {
    return reinterpret_cast<T*>(h);  // NOLINT(performance-no-int-to-ptr)
}

// The one way back from a path id to its module.
inline mca_btl_base_module_t* btl_of(std::uint64_t path) noexcept {
    return reinterpret_cast<mca_btl_base_module_t*>(path);  // NOLINT(performance-no-int-to-ptr)
}
inline const char* btl_name(const mca_btl_base_module_t* btl) noexcept {
    return btl->btl_component->btl_version.mca_component_name;
}

// Send request: Open MPI's base send request first (the MPI layer and the
// request framework look at it), then our state. POD only: requests live in
// an opal_free_list and are reused without C++ construction.
struct SendRequest {
    mca_pml_base_send_request_t base;
    core::PeerId peer;
    mca_bml_base_endpoint_t* endpoint;
    std::uint64_t wire_id;          // id given to the peer in RNDV (0: none)
    std::uint64_t peer_recv_id;     // receiver's id from CTS
    std::uint64_t bytes_scheduled;  // handed to BTLs (rendezvous frags)
    std::uint64_t bytes_target;     // want_len from CTS
    std::uint32_t frames_inflight;  // frames the reliability layer still holds
    bool rndv;
    bool cts_received;
    bool failed;
    bool scheduling;      // inside schedule_frags: completions only note progress
    bool frags_deferred;  // a schedule_frags retry is queued
    std::uint64_t path_bytes[core::kMaxSchedPaths];  // frag bytes per send BTL, for weighting
    // RGET: the BTL and registration the receiver reads our buffer through.
    // RPUT: the BTL we write the receiver's buffer through (no registration).
    mca_bml_base_btl_t* rdma_btl;
    mca_btl_base_registration_handle_t* rdma_handle;
    // RPUT: puts not yet completed (plus the issuing hold), whether one
    // failed, and where they started, stand and go (the receiver's address).
    std::uint32_t puts_outstanding;
    bool put_started;
    bool put_failed;
    std::uint64_t put_from;
    std::uint64_t put_next;
    std::uint64_t put_remote;
    // RPUT with checksums: the CRC32C of the bytes put goes in the PUT-done,
    // and the send waits for the receiver's verdict (a CTS) before it completes.
    bool put_verify;
    bool put_verdict_wait;
    std::uint32_t put_crc;
    // The communicator's context id and our rank in it, taken when the send
    // starts: a request the application freed before its peer acknowledged
    // everything lets go of its communicator (release_send_comm), which
    // Open MPI may then destroy while frames are still being sent or resent.
    std::uint32_t cid;
    std::int32_t my_rank;
};

struct RecvRequest {
    mca_pml_base_recv_request_t base;
    core::PeerId peer;
    std::uint64_t wire_id;         // id given to the sender in CTS (0: none)
    std::uint64_t bytes_expected;  // accepted length (min of message and buffer)
    std::uint64_t bytes_received;
    std::uint64_t msg_len;
    bool matched;
    // RGET in progress: gets not yet completed, the sender's handle (malloc'd
    // copy), our local registration, the BTL used.
    std::uint32_t gets_outstanding;
    bool get_failed;
    bool get_verify;  // the sender sent the data's CRC32C: get_crc
    std::uint32_t get_crc;
    std::uint64_t send_req;  // sender's id, for the final CTS
    void* remote_handle;
    mca_btl_base_registration_handle_t* local_handle;
    mca_bml_base_btl_t* rdma_btl;
    bool put_wait;           // RPUT: the sender writes our buffer; a PUT-done frame ends it
    std::uint64_t put_from;  // RPUT: where the puts start (the RNDV carried what is before)
    bool matched_at_post;    // matched an unexpected message while being posted
};

// A retry of work that ran out of BTL resources. `retry` returns true when
// the work is done (or has failed for good), false to be tried again later.
// `owner` is the request it belongs to (nullptr: none), so a request that
// completes can drop its entries.
struct Deferred {
    const void* owner;
    std::function<bool()> retry;
};

// Global module state (one PML per process).
struct State {
    mca_pml_base_module_t module;  // must be first: Open MPI holds a pointer to it
    core::Config config;
    plugin::common::OpalLogSink* log = nullptr;
    // The protocol: engine + reliability channel (reliability.cpp makes it).
    std::unique_ptr<core::ReliableEngine> reliable;
    opal_recursive_mutex_t lock;
    opal_free_list_t send_requests;
    opal_free_list_t recv_requests;
    // The request of the last blocking MPI_Recv, kept for the next one when
    // no two threads may call MPI at once (as ob1): a free-list round trip
    // and a free callback less on the way from a message to the caller.
    RecvRequest* blocking_recv = nullptr;
    std::vector<ompi_proc_t*> proc_of_peer;
    // Work that could not start for lack of BTL resources; retried in progress.
    std::deque<Deferred> pending;
    std::atomic<std::size_t> pending_count{0};  // read by progress() without the lock
    bool callbacks_registered = false;
    bool progress_registered = false;  // progress() as a low-priority callback
};

extern State g_state;  // module.cpp
inline State& state() noexcept {
    return g_state;
}
inline core::Engine& engine() noexcept {
    return g_state.reliable->engine();
}
// The process a peer id stands for, and its BML endpoint (nullptr: none, or
// no longer: del_procs forgets them).
inline ompi_proc_t* proc_of(core::PeerId peer) noexcept {
    const State& s = state();
    return peer < s.proc_of_peer.size() ? s.proc_of_peer[peer] : nullptr;
}
inline mca_bml_base_endpoint_t* endpoint_of(core::PeerId peer) noexcept {
    ompi_proc_t* proc = proc_of(peer);
    return proc != nullptr ? mca_bml_base_get_endpoint(proc) : nullptr;
}
core::EngineSink& engine_sink() noexcept;

// RAII lock over the module mutex (a no-op unless threads are in use).
class Guard {
  public:
    Guard() noexcept { OPAL_THREAD_LOCK(&state().lock); }
    ~Guard() { OPAL_THREAD_UNLOCK(&state().lock); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
};

// A request's convertor positioned at `offset`. Frags arrive (and are
// resent) out of order, but moving a convertor of a non-contiguous datatype
// that stopped inside an element loses its state: such jumps use a fresh
// clone positioned from the start; in-order and contiguous data use the
// request's own convertor.
class ConvertorAt {
  public:
    ConvertorAt(opal_convertor_t* conv, std::uint64_t offset) noexcept;
    ~ConvertorAt();
    ConvertorAt(const ConvertorAt&) = delete;
    ConvertorAt& operator=(const ConvertorAt&) = delete;
    [[nodiscard]] opal_convertor_t* get() noexcept { return use_; }

  private:
    opal_convertor_t clone_;
    opal_convertor_t* use_;
    bool cloned_ = false;
};

// The first byte of a contiguous buffer described by `conv` (moves the
// convertor to position 0).
inline void* buffer_start(opal_convertor_t* conv) noexcept {
    void* start = nullptr;
    size_t zero = 0;
    opal_convertor_set_position(conv, &zero);
    opal_convertor_get_current_pointer(conv, &start);
    return start;
}

// module.cpp: the deferred-work queue (call with the module lock held).
void defer(const void* owner, std::function<bool()> retry);
void cancel_deferred(const void* owner) noexcept;

// requests.cpp
int requests_init() noexcept;
void requests_fini() noexcept;
SendRequest* alloc_send() noexcept;
RecvRequest* alloc_recv() noexcept;
// Our per-request state back to "nothing started" (allocation, MPI_Start).
void reset_send_state(SendRequest* r) noexcept;
void reset_recv_state(RecvRequest* r) noexcept;
// MCA_PML_BASE_SEND_START without its RESET part, which names a variable
// that only exists inside ob1.
void mark_send_started(SendRequest* r) noexcept;
void send_mpi_complete(SendRequest* r, int error) noexcept;
void send_pml_complete(SendRequest* r) noexcept;
// Wire id, RGET registration, Bsend buffer space, queued retries.
void release_send_resources(SendRequest* r) noexcept;
void recv_complete(RecvRequest* r, int error) noexcept;
core::PeerId peer_for(ompi_proc_t* proc);
// The peer id of a proc we already know (false: none yet).
bool known_peer(const ompi_proc_t* proc, core::PeerId& out) noexcept;

// send.cpp (protocols) and send_api.cpp (the MPI entry points)
int start_send(SendRequest* r) noexcept;
void handle_cts(SendRequest* r, const core::CtsHdr& cts) noexcept;
// The reliability layer is done with one of r's frames (acked: the peer has it).
void frame_released(SendRequest* r, bool acked) noexcept;
// r cannot finish (its peer died): complete it in error once no frame is held.
void fail_send(SendRequest* r) noexcept;
// Completes r once nothing refers to it any more and it sent everything.
void check_send_done(SendRequest* r) noexcept;
// The FRAG with kFlagPutDone that ends an RPUT, on r->rdma_btl (rput.cpp).
int send_put_done_frame(SendRequest* r) noexcept;
// Sends [bytes_scheduled, bytes_target) as FRAGs (the receiver refused put data).
void resend_as_frags(SendRequest* r) noexcept;
int isend(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
          mca_pml_base_send_mode_t mode, ompi_communicator_t* comm, ompi_request_t** req) noexcept;
int send(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
         mca_pml_base_send_mode_t mode, ompi_communicator_t* comm) noexcept;
int isend_init(const void* buf, size_t count, ompi_datatype_t* dt, int dst, int tag,
               mca_pml_base_send_mode_t mode, ompi_communicator_t* comm,
               ompi_request_t** req) noexcept;
// Sends a small control frame (CTS) to a peer; retried from progress on busy.
void send_control(core::PeerId peer, std::span<const std::uint8_t> frame) noexcept;
// The common header of a frame to `peer` (its ack_seq the channel's current one).
core::Common make_common(core::PeerId peer, std::uint16_t flags) noexcept;
// make_common() with the ack_seq already known (SubmitCheck::ack).
core::Common common_acking(std::uint32_t ack_seq, std::uint16_t flags) noexcept;
inline std::uint16_t csum_flag(bool csum) noexcept {
    return csum ? core::kFlagPayloadCsum : 0;
}
// Whether frames on this BTL carry payload checksums (pml_dr_csum, auto: the BTL asks).
bool csum_wanted(const mca_btl_base_module_t* btl) noexcept;

// rdma.cpp: the RGET protocol (receiver reads a contiguous send buffer).
// Sender side: picks a BTL and registers the buffer; false: use RNDV/FRAGs.
bool rget_prepare(SendRequest* r) noexcept;
void rget_release_send(SendRequest* r) noexcept;
// Receiver side: starts the gets; false: the caller falls back to CTS/FRAGs.
bool rget_start(RecvRequest* r, const core::MessageInfo& info,
                std::span<const std::uint8_t> handle) noexcept;
void rget_release_recv(RecvRequest* r) noexcept;
// Sends a CTS for a matched RNDV.
void send_cts(RecvRequest* r, std::uint64_t send_req, std::uint64_t offset) noexcept;

// rput.cpp: the RPUT protocol (sender writes into a contiguous receive buffer).
// Receiver: asks for [offset, bytes_expected) by puts instead of a CTS;
// false: not possible here, send a CTS.
bool rput_request(RecvRequest* r, const core::MessageInfo& info, std::uint64_t offset) noexcept;
// Receiver: the sender's puts are complete; `data_crc`, when the sender
// sent one, is checked against the bytes in our buffer.
void rput_done(RecvRequest* r, std::optional<std::uint32_t> data_crc) noexcept;
// Sender: a CTS arrived while the send waits for the receiver's verdict on
// its put data: completes the send, or resends the bytes the CTS names as
// FRAGs. False: the send was not waiting for a verdict.
bool rput_verdict(SendRequest* r, const core::CtsHdr& cts) noexcept;
// Sender: whether a message longer than an RNDV frame will likely go by
// puts on `bb` (as far as the sender can tell: the receiver decides), so its
// RNDV should carry no data, which the receiver would copy out of the BTL's
// buffer. A receiver asks for puts after an RNDV without data.
bool rput_expected(const SendRequest* r, const mca_bml_base_btl_t* bb) noexcept;
// Sender: a PUT arrived on `path` (falls back to FRAGs when it cannot put).
void handle_put(SendRequest* r, const core::PutHdr& put, std::uint64_t path) noexcept;
struct RputStats {
    std::uint64_t requests = 0;     // receives that asked their sender to put
    std::uint64_t sends = 0;        // sends whose data went by puts
    std::uint64_t bytes = 0;        // bytes those puts wrote
    std::uint64_t fallbacks = 0;    // sends whose puts failed: FRAGs instead
    std::uint64_t verified = 0;     // receives whose put data matched the sender's CRC
    std::uint64_t csum_errors = 0;  // ... did not (the bytes came again as FRAGs)
    std::uint64_t resent = 0;       // sends that resent put data the receiver refused
    std::uint64_t injected = 0;     // put data corrupted on purpose (pml_dr_fault_corrupt)
};
RputStats rput_stats() noexcept;

struct RgetStats {
    std::uint64_t receives = 0;     // receives whose data came by gets
    std::uint64_t fallbacks = 0;    // ... whose gets failed or data was refused: FRAGs instead
    std::uint64_t verified = 0;     // receives whose get data matched the sender's CRC
    std::uint64_t csum_errors = 0;  // ... did not (then a fallback)
    std::uint64_t injected = 0;     // get data corrupted on purpose (pml_dr_fault_corrupt)
};
RgetStats rget_stats() noexcept;

// recv.cpp
// Posts a receive whose state is reset (alloc_recv(), reset_recv_state()).
int start_recv(RecvRequest* r) noexcept;
void handle_match(RecvRequest* r, const core::MessageInfo& info,
                  std::span<const std::uint8_t> eager) noexcept;
void handle_frag(RecvRequest* r, std::uint64_t offset,
                 std::span<const std::uint8_t> payload) noexcept;
// One pass for a checksummed FRAG into a contiguous receive buffer: copies it
// in place computing its CRC (false: not that kind of buffer); frag_placed
// then accounts it once the engine found the CRC right.
bool place_frag(RecvRequest* r, std::uint64_t offset, std::span<const std::uint8_t> payload,
                std::uint32_t& crc) noexcept;
void frag_placed(RecvRequest* r, std::uint64_t offset, std::size_t len) noexcept;
int irecv(void* buf, size_t count, ompi_datatype_t* dt, int src, int tag, ompi_communicator_t* comm,
          ompi_request_t** req) noexcept;
int recv(void* buf, size_t count, ompi_datatype_t* dt, int src, int tag, ompi_communicator_t* comm,
         ompi_status_public_t* status) noexcept;
int irecv_init(void* buf, size_t count, ompi_datatype_t* dt, int src, int tag,
               ompi_communicator_t* comm, ompi_request_t** req) noexcept;
int iprobe(int src, int tag, ompi_communicator_t* comm, int* matched,
           ompi_status_public_t* status) noexcept;
int probe(int src, int tag, ompi_communicator_t* comm, ompi_status_public_t* status) noexcept;
int improbe(int src, int tag, ompi_communicator_t* comm, int* matched, ompi_message_t** message,
            ompi_status_public_t* status) noexcept;
int mprobe(int src, int tag, ompi_communicator_t* comm, ompi_message_t** message,
           ompi_status_public_t* status) noexcept;
int imrecv(void* buf, size_t count, ompi_datatype_t* dt, ompi_message_t** message,
           ompi_request_t** req) noexcept;
int mrecv(void* buf, size_t count, ompi_datatype_t* dt, ompi_message_t** message,
          ompi_status_public_t* status) noexcept;

// runtime_events.cpp: the runtime's process-death events (registered once
// the PML is enabled, until module_fini).
void runtime_events_init() noexcept;
void runtime_events_fini() noexcept;

// stats.cpp: pml_dr_stats lines at finalize.
void print_stats() noexcept;

// module.cpp
mca_pml_base_module_t* module_init(const core::Config& config,
                                   plugin::common::OpalLogSink& log) noexcept;
int module_fini() noexcept;
int progress() noexcept;
int start(size_t count, ompi_request_t** requests) noexcept;

}  // namespace pml::dr::mca
