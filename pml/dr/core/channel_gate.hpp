// The reliability channel as the engine's FrameGate: what the engine
// decodes of the channel's business (a sequenced frame's seq and carried
// ack, ACK, NACK, PROBE, PROBE_ACK, BYE, a damaged payload) goes to the
// channel, stamped with the owner's clock. The one wiring of Engine and
// ReliableChannel, inside ReliableEngine.
#pragma once
#include <cstddef>
#include <cstdint>

#include "channel.hpp"
#include "engine.hpp"
#include "frame_gate.hpp"

namespace pml::dr::core {

class ChannelGate : public FrameGate {
  public:
    // `now`: the owner's clock, read at every call (the glue updates it
    // before handing a frame to the engine; the simulator before each event).
    ChannelGate(ReliableChannel& channel, const Micros& now) noexcept : ch_(channel), now_(now) {}

    bool admit(PeerId peer, std::uint64_t path, const Common& c, std::size_t frame_bytes) override;
    [[nodiscard]] bool fresh(PeerId peer, std::uint32_t seq) const override;
    void on_ack(PeerId peer, std::uint64_t path, const AckHdr& ack) override;
    void on_carried_ack(PeerId peer, std::uint64_t path, std::uint32_t ack_seq) override;
    void on_nack(PeerId peer, std::uint64_t path, std::uint32_t seq) override;
    void on_probe(PeerId peer, std::uint64_t path, std::uint32_t id, bool reply) override;
    void on_bye(PeerId peer, std::uint64_t path) override;
    void on_damaged(PeerId peer, std::uint64_t path, std::uint32_t seq) override;
    void answer_credit(PeerId peer) override;

    // Sequenced frames admitted as first arrivals, ever.
    [[nodiscard]] std::uint64_t admitted() const noexcept { return admitted_; }

  private:
    ReliableChannel& ch_;
    const Micros& now_;
    std::uint64_t admitted_ = 0;
};

}  // namespace pml::dr::core
