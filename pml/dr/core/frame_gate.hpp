// The reliability layer's hook into the engine's receive path (sans I/O).
// Only the core sees it: ReliableEngine wires the channel in through it
// (channel_gate.hpp), and the glue talks to ReliableEngine, never to this.
#pragma once
#include <cstddef>
#include <cstdint>

#include "matching.hpp"
#include "wire.hpp"

namespace pml::dr::core {

// The reliability layer's hook into the receive path: every frame that
// decoded intact and comes from a known peer passes through it before the
// engine acts on it (a frame that fails its checksums never gets here, so
// it is not acknowledged and the sender resends it).
class FrameGate {
  public:
    virtual ~FrameGate() = default;
    // A sequenced frame (all but ACK and NACK): first takes the cumulative
    // ack_seq it carries (also from a frame it refuses: that acknowledgement
    // holds all the same), then returns true if the frame arrives for the
    // first time and must be processed; false drops it (duplicate, outside
    // the window).
    virtual bool admit(PeerId peer, std::uint64_t path, const Common& common,
                       std::size_t frame_bytes) = 0;
    // Whether a frame with `seq` would be a first arrival (admit() would take
    // it), without recording anything: a FRAG is copied to its place before
    // it is admitted, which must never happen for a copy of one delivered.
    [[nodiscard]] virtual bool fresh(PeerId peer, std::uint32_t seq) const = 0;
    virtual void on_ack(PeerId peer, std::uint64_t path, const AckHdr& ack) = 0;
    // The cumulative ack_seq a NACK carries (admit() takes that of the others).
    virtual void on_carried_ack(PeerId peer, std::uint64_t path, std::uint32_t ack_seq) = 0;
    // The peer reports our frame `seq` arrived damaged.
    virtual void on_nack(PeerId peer, std::uint64_t path, std::uint32_t seq) = 0;
    // A PROBE (reply: the PROBE_ACK answering ours) with `id` arrived on `path`.
    virtual void on_probe(PeerId peer, std::uint64_t path, std::uint32_t id, bool reply) = 0;
    // The peer's BYE (finalize: it is leaving, see ReliableChannel::leave).
    virtual void on_bye(PeerId peer, std::uint64_t path) = 0;
    // Frame `seq` from `peer` arrived with an intact header and a damaged
    // payload (it was counted and dropped).
    virtual void on_damaged(PeerId peer, std::uint64_t path, std::uint32_t seq) = 0;
    // The engine took an admitted frame flagged kFlagCreditStarved (its
    // release is counted): acknowledge it now, marked as the answer, with
    // the credit report.
    virtual void answer_credit(PeerId peer) = 0;
};

}  // namespace pml::dr::core
