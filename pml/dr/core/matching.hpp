// MPI message matching for one communicator, sans I/O.
//
// Per (communicator, source) messages must match in the order they were
// sent (non-overtaking): every MATCH/RNDV carries msg_seq, and a message that
// arrives ahead of its turn (other BTL, retransmission) waits in cant_match
// until the gap fills. Receives are matched in the order they were posted,
// whether for a specific source or MPI_ANY_SOURCE.
//
// Costs follow what is queued, not the communicator's size: the sources that
// hold unexpected messages are kept in a dense list (exact on every enqueue
// and dequeue), so an MPI_ANY_SOURCE receive or probe looks only at them, and
// a cancel looks only at the queue its receive was posted to.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "result.hpp"
#include "ring_queue.hpp"

namespace pml::dr::core {

using Handle = std::uint64_t;  // the glue's request, opaque to the core
using PeerId = std::uint32_t;  // index into the engine's peer table

inline constexpr std::int32_t kAnySource = -1;  // == MPI_ANY_SOURCE in Open MPI
inline constexpr std::int32_t kAnyTag = -1;     // == MPI_ANY_TAG in Open MPI

// What the matcher knows of an arrived MATCH or RNDV.
struct MessageInfo {
    PeerId peer = 0;
    std::int32_t src = 0;  // rank in the communicator's remote group
    std::int32_t tag = 0;
    std::uint16_t seq = 0;
    bool rndv = false;            // more bytes follow after a CTS
    bool sync = false;            // sender waits for the match (Ssend)
    std::uint64_t msg_len = 0;    // whole message, bytes
    std::uint64_t send_req = 0;   // sender's id for CTS
    bool rget = false;            // eager bytes are the sender's registration handle
    bool rget_data_csum = false;  // ... followed by the data's CRC32C (kFlagDataCsum)
    std::uint64_t remote_addr = 0;
    std::uint64_t path = 0;  // opaque id of the path (BTL) the message came on
};

// A message nobody has asked for yet, with its eager bytes copied out of the
// BTL's buffer.
struct Unexpected {
    MessageInfo info;
    std::vector<std::uint8_t> data;
    std::uint64_t arrival = 0;  // order of arrival, for MPI_ANY_SOURCE fairness
};
using UnexpectedPtr = std::unique_ptr<Unexpected>;

// Receives the matches the matcher makes when messages arrive.
class MatchSink {
  public:
    virtual ~MatchSink() = default;
    // A posted receive matched an arriving message; `eager` is valid only for
    // the duration of the call.
    virtual void on_match(Handle recv, const MessageInfo& info,
                          std::span<const std::uint8_t> eager) = 0;
    // The message went to the unexpected queue (for probes waiting on it).
    virtual void on_unexpected(const Unexpected&) {}
};

struct MatchStats {
    std::uint64_t matched_posted = 0;
    std::uint64_t queued_unexpected = 0;
    std::uint64_t held_out_of_order = 0;
    std::uint64_t stale_dropped = 0;  // msg_seq already delivered
    // Sources looked at by MPI_ANY_SOURCE searches (receive, probe): the
    // sources holding unexpected messages at the time, never the others.
    std::uint64_t any_source_visits = 0;
};

// Tag rule: MPI_ANY_TAG matches user tags (>= 0) only; negative tags belong to
// Open MPI's collectives and match exactly.
constexpr bool tag_matches(std::int32_t want, std::int32_t have) noexcept {
    return want == have || (want == kAnyTag && have >= 0);
}
constexpr bool src_matches(std::int32_t want, std::int32_t have) noexcept {
    return want == kAnySource || want == have;
}

class CommMatcher {
  public:
    // nsources: size of the remote group (ranks a message can come from).
    explicit CommMatcher(std::uint32_t nsources);

    [[nodiscard]] std::uint32_t sources() const noexcept {
        return static_cast<std::uint32_t>(in_.size());
    }

    // --- sending: the msg_seq to stamp on the next message to dst.
    std::uint16_t next_send_seq(std::int32_t dst) noexcept;
    // Gives back the seq just taken when the send could not start after all.
    void undo_send_seq(std::int32_t dst) noexcept;

    // --- receiving
    // Posts a receive. If an unexpected message matches, it is removed and
    // returned (the receive is not queued); otherwise the receive is queued.
    UnexpectedPtr post(Handle recv, std::int32_t src, std::int32_t tag);
    // Removes a queued receive posted with source `src` (a rank or
    // kAnySource, as given to post); false if it is not queued (already
    // matched). Only that source's queue is searched.
    bool cancel(Handle recv, std::int32_t src) noexcept;
    // Removes every queued receive naming `src` (not wildcards) into `out`:
    // that source is gone and they can never match.
    void take_posted_from(std::int32_t src, std::vector<Handle>& out);
    // Removes every queued MPI_ANY_SOURCE receive into `out`: no source that
    // could still send is left.
    void take_posted_any(std::vector<Handle>& out);
    // MPI_Iprobe: the first matching unexpected message, left in place.
    [[nodiscard]] const Unexpected* peek(std::int32_t src, std::int32_t tag) const noexcept;
    // MPI_Improbe: as peek, but removed from the queue.
    UnexpectedPtr take(std::int32_t src, std::int32_t tag);

    // A MATCH/RNDV arrived. Bad src is an error (counted by the caller).
    // held_bytes tracks eager bytes copied into the matcher (unexpected and
    // out-of-order) so the engine can bound them.
    plugin::common::Result<void> arrive(const MessageInfo& info,
                                        std::span<const std::uint8_t> eager, MatchSink& sink,
                                        std::size_t& held_bytes);

    // The direct paths' match (Engine::match_direct): the message from `src`
    // with msg_seq `seq` is next in its source's order, none of that source's
    // waits behind it, no MPI_ANY_SOURCE receive is posted and the oldest
    // receive naming `src` takes `tag`: that receive is unlinked into `out`
    // and the message counted as arrive() would. False: nothing changed.
    bool take_next_posted(std::int32_t src, std::int32_t tag, std::uint16_t seq,
                          Handle& out) noexcept {
        if (src < 0 || static_cast<std::size_t>(src) >= in_.size() || !wild_.empty())
            return false;
        const auto rank = static_cast<std::size_t>(src);
        Source* s = in_[rank].get();
        if (s == nullptr || s->posted.empty() || seq != seqs_[rank].expected ||
            !s->cant_match.empty() || !tag_matches(s->posted.front().tag, tag))
            return false;
        out = s->posted.front().recv;
        s->posted.pop_front();
        --posted_specific_;
        ++seqs_[rank].expected;
        ++stats_.matched_posted;
        return true;
    }

    [[nodiscard]] const MatchStats& stats() const noexcept { return stats_; }
    [[nodiscard]] std::size_t posted_count() const noexcept {
        return wild_.size() + posted_specific_;
    }
    // Unexpected and out-of-order messages.
    [[nodiscard]] std::size_t unexpected_count() const noexcept { return held_count_; }
    // Sources with unexpected messages (what an MPI_ANY_SOURCE search visits).
    [[nodiscard]] std::size_t busy_sources() const noexcept { return busy_.size(); }
    // Eager bytes copied into unexpected and out-of-order messages.
    [[nodiscard]] std::size_t held_bytes() const noexcept;
    // Visits every message held (unexpected and out of order).
    template <typename Fn>
    void for_each_held(Fn&& fn) const {
        for (const auto& s : in_) {
            if (!s)
                continue;
            for (const auto& u : s->unexpected)
                fn(*u);
            for (const auto& [seq, u] : s->cant_match)
                fn(*u);
        }
    }

    // Everything still queued, for del_comm / dump.
    [[nodiscard]] bool idle() const noexcept {
        return posted_count() == 0 && unexpected_count() == 0;
    }

  private:
    struct Posted {
        Handle recv;
        std::int32_t src;
        std::int32_t tag;
        std::uint64_t order;  // post order, to pick between specific and wildcard lists
    };
    static constexpr std::uint32_t kNotBusy = UINT32_MAX;
    // Every rank of the group has its two sequence numbers; its queues
    // (Source) are made the first time one is needed: a rank that never
    // sends to us, and that we never name in a receive, costs a pointer.
    struct Seqs {
        std::uint16_t send = 0;      // next msg_seq to send to this rank
        std::uint16_t expected = 0;  // next msg_seq to match from this rank
    };
    struct Source {
        std::uint32_t busy_at = kNotBusy;          // index in busy_ while unexpected is non-empty
        plugin::common::RingQueue<Posted> posted;  // receives naming this source
        std::list<UnexpectedPtr> unexpected;
        std::map<std::uint16_t, UnexpectedPtr> cant_match;  // arrived ahead of their turn
    };

    // Matches one in-order message: to a posted receive, or into unexpected.
    void deliver_in_order(const MessageInfo& info, std::span<const std::uint8_t> eager,
                          MatchSink& sink, std::size_t& held_bytes);
    void deliver_held(UnexpectedPtr msg, MatchSink& sink, std::size_t& held_bytes);
    // Finds (and unlinks) the earliest-posted receive matching (src, tag).
    bool pop_posted(std::int32_t src, std::int32_t tag, Handle& out);
    std::list<UnexpectedPtr>::iterator find_unexpected(std::int32_t src, std::int32_t tag,
                                                       Source*& where) const noexcept;
    // Appends to s.unexpected / erases from it, keeping busy_ exact.
    void push_unexpected(std::int32_t src, UnexpectedPtr msg);
    UnexpectedPtr erase_unexpected(Source& s, std::list<UnexpectedPtr>::iterator it) noexcept;

    // The rank's queues, made on first use.
    Source& source(std::size_t rank) {
        Source* s = in_[rank].get();
        return s != nullptr ? *s : make_source(rank);
    }
    Source& make_source(std::size_t rank);

    std::vector<Seqs> seqs_;
    std::vector<std::unique_ptr<Source>> in_;  // null: nothing ever queued for the rank
    plugin::common::RingQueue<Posted> wild_;   // MPI_ANY_SOURCE receives
    // Sources whose unexpected list is non-empty, in no particular order
    // (a wildcard search compares arrival stamps, not positions).
    std::vector<std::uint32_t> busy_;
    std::size_t posted_specific_ = 0;  // receives queued in the sources' lists
    std::size_t held_count_ = 0;       // unexpected plus out-of-order messages
    std::uint64_t post_order_ = 0;
    std::uint64_t arrival_order_ = 0;
    MatchStats stats_;
};

}  // namespace pml::dr::core
