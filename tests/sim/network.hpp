// Simulated network: N endpoints (ranks 0..N-1), every ordered pair joined
// by L links ("paths"/rails, e.g. two NICs). A frame sent at time t on link l
// arrives at
//     max(t, sender side free) + ceil(size / bandwidth) + latency + U[0, jitter]
// plus whatever the FaultPlan adds. Each direction of each link serializes
// its own frames (bandwidth is per direction, not shared per NIC) and, when
// `ordered`, never delivers a frame before an earlier one (TCP-like);
// reorder faults and unordered links let later frames pass.
//
// All callbacks run from simulator events, never from inside send(), so an
// engine may send from any callback without re-entering itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "fault_plan.hpp"
#include "simulator.hpp"
#include "time.hpp"

namespace sim {

struct LinkParams {
    Micros latency = 10;
    double bandwidth = 1000.0;      // bytes per microsecond (1000 = 1 GB/s); <= 0: unlimited
    Micros jitter = 0;              // each frame gets U[0, jitter] extra
    bool ordered = true;            // per-direction in-order delivery, like TCP
    std::size_t max_in_flight = 0;  // per direction and link; 0: unlimited
};

struct Frame {
    Rank src = 0;
    Rank dst = 0;
    LinkIndex link = 0;
    std::vector<std::uint8_t> bytes;
};

enum class SendStatus {
    Ok,        // accepted (which does not mean it will arrive)
    Busy,      // max_in_flight reached: wait for on_writable(dst, link)
    LinkDown,  // link is down and the plan reports link errors
    Invalid,   // rank or link index out of range, or src == dst
};

const char* send_status_name(SendStatus status) noexcept;

// Callbacks of one endpoint; unset members are ignored (frames to an endpoint
// without on_frame are counted as delivered and discarded). The span passed
// to on_frame is valid only during the call. Do not re-attach an endpoint
// from inside one of its own callbacks.
struct Endpoint {
    std::function<void(Rank src, LinkIndex link, std::span<const std::uint8_t> bytes)> on_frame;
    std::function<void(Rank dst, LinkIndex link)> on_writable;
    std::function<void(Rank peer, LinkIndex link)> on_link_error;
};

// Invariant: sent + duplicated == delivered + dropped + frames_pending().
struct NetworkStats {
    std::uint64_t sent = 0;               // accepted by send()
    std::uint64_t delivered = 0;          // copies handed to a receiver
    std::uint64_t dropped = 0;            // copies lost, for any reason
    std::uint64_t dropped_link_down = 0;  // ... of which because a link was or went down
    std::uint64_t duplicated = 0;         // extra copies created
    std::uint64_t corrupted = 0;          // frames with flipped bits
    std::uint64_t reordered = 0;          // originals delivered after a later-sent frame
    std::uint64_t delayed = 0;            // frames hit by the delay fault
    std::uint64_t busy = 0;               // send() calls answered Busy
    std::uint64_t rejected = 0;           // send() calls answered LinkDown or Invalid
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_delivered = 0;
};

enum class TraceKind { Send, Deliver, Drop, Busy, Reject, LinkDown, LinkUp };

const char* trace_kind_name(TraceKind kind) noexcept;

struct TraceRecord {
    Micros at;
    TraceKind kind;
    Rank src;
    Rank dst;
    LinkIndex link;
    std::uint64_t seq;  // per-direction send order; 0 for link events
    std::size_t size;

    bool operator==(const TraceRecord&) const = default;
};

class Network {
  public:
    Network(Simulator& sim, int ranks, int links, const LinkParams& params = {});
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;

    int ranks() const noexcept { return ranks_; }
    int links() const noexcept { return links_; }
    Simulator& simulator() noexcept { return sim_; }

    void set_link_params(LinkIndex link, const LinkParams& params);
    const LinkParams& link_params(LinkIndex link) const { return params_.at(link); }

    // Installs the plan and schedules its outages (absolute times). Call once,
    // before the run: outages of an earlier plan stay scheduled.
    void set_fault_plan(FaultPlan plan);
    FaultPlan& fault_plan() noexcept { return plan_; }

    void attach(Rank rank, Endpoint endpoint);
    SendStatus send(Frame frame);

    // Immediate outage control (the plan's outages call these). Outages nest:
    // a link is up again once every outage covering it has ended.
    void link_down(const LinkSelector& where);
    void link_up(const LinkSelector& where);
    bool is_link_up(Rank src, Rank dst, LinkIndex link) const;

    // Originals in flight on one direction: what max_in_flight limits.
    std::size_t in_flight(Rank src, Rank dst, LinkIndex link) const;
    // Every scheduled copy, duplicates included.
    std::size_t frames_pending() const noexcept { return pending_; }

    const NetworkStats& stats() const noexcept { return total_; }
    const NetworkStats& link_stats(LinkIndex link) const { return per_link_.at(link); }

    void set_tracer(std::function<void(const TraceRecord&)> tracer) { tracer_ = std::move(tracer); }

  private:
    struct Channel {
        Micros tx_free_at = 0;    // serialization: the sender side is busy until then
        Micros last_arrival = 0;  // ordered links: nothing later arrives before this
        std::uint64_t next_seq = 0;
        std::uint64_t delivered_up_to = 0;  // 1 + highest seq delivered so far
        std::size_t in_flight = 0;
        bool wants_writable = false;  // a send was refused Busy
        int down_count = 0;           // active outages covering this direction
        std::uint64_t epoch = 0;      // bumped per outage: frames sent before are lost
    };
    struct Copy {
        Rank src;
        Rank dst;
        LinkIndex link;
        std::uint64_t seq;
        std::uint64_t epoch;
        bool original;  // duplicates do not hold a back-pressure slot
        bool fault_drop;
        std::vector<std::uint8_t> bytes;
    };

    bool valid(Rank src, Rank dst, LinkIndex link) const noexcept;
    std::size_t index(Rank src, Rank dst, LinkIndex link) const noexcept;
    Channel& channel(Rank src, Rank dst, LinkIndex link) {
        return channels_[index(src, dst, link)];
    }
    void bump(LinkIndex link, std::uint64_t NetworkStats::*field, std::uint64_t by = 1);
    std::uint64_t record_send(Channel& ch, Rank src, Rank dst, LinkIndex link, std::size_t size);
    void trace(TraceKind kind, Rank src, Rank dst, LinkIndex link, std::uint64_t seq,
               std::size_t size);
    void schedule_copy(Micros at, Copy copy);
    void arrive(Copy& copy);

    Simulator& sim_;
    int ranks_;
    int links_;
    std::vector<LinkParams> params_;
    std::vector<Channel> channels_;
    std::vector<Endpoint> endpoints_;
    FaultPlan plan_;
    NetworkStats total_;
    std::vector<NetworkStats> per_link_;
    std::size_t pending_ = 0;
    std::function<void(const TraceRecord&)> tracer_;
};

}  // namespace sim
