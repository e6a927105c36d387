// pml dr's protocol in one object, sans I/O: the engine (matching, request
// ids, validation and dispatch of arriving frames), the reliability channel
// (sequence numbers, ACK/NACK, retransmission, failover, peer death) and
// their one wiring (ChannelGate), under one clock. The PML's glue and the
// simulator drive this same class; neither wires engine and channel itself.
//
// In: a frame arrived (bytes, path, time), a timer fired, a BTL completion
// or error (through channel()). Out: the transport (ChannelOutput: put a
// frame or an ACK/NACK/PROBE/BYE on a path, a frame was acknowledged or
// abandoned, a path failed, a peer died) and the EngineSink of each
// arrival (matches, CTSs, FRAGs, credits).
#pragma once
#include <cstdint>
#include <optional>
#include <span>

#include "channel.hpp"
#include "channel_gate.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "log.hpp"

namespace pml::dr::core {

class ReliableEngine : private AckCredit {
  public:
    // The channel's parameters from `config` (channel_params()), or given
    // whole (simulations that set what Config does not carry).
    ReliableEngine(const Config& config, ChannelOutput& transport, plugin::common::LogSink& log);
    ReliableEngine(const Config& config, const ChannelParams& params, ChannelOutput& transport,
                   plugin::common::LogSink& log);
    ~ReliableEngine() override;
    ReliableEngine(const ReliableEngine&) = delete;
    ReliableEngine& operator=(const ReliableEngine&) = delete;

    // The parts, for what the glue asks of them directly (matching and
    // request ids of the engine; submitting frames and path state of the
    // channel).
    [[nodiscard]] Engine& engine() noexcept { return engine_; }
    [[nodiscard]] const Engine& engine() const noexcept { return engine_; }
    [[nodiscard]] ReliableChannel& channel() noexcept { return channel_; }
    [[nodiscard]] const ReliableChannel& channel() const noexcept { return channel_; }

    // A frame arrived on `path` at `now`: decoded, passed through the
    // channel (its sequence and carried ack; ACK, NACK, PROBE, BYE end
    // there) and dispatched. True when it was a sequenced frame taken for
    // the first time (not a duplicate, not damaged, not refused).
    bool on_frame(std::span<const std::uint8_t> frame, EngineSink& sink, PathId path, Micros now);

    // --- eager flow control: Engine::grant_eager, except that a wait for an
    // answer ends when nothing is in flight to the peer any more (the
    // answering ACK was lost and what it acknowledged was acknowledged
    // otherwise: no ACK will answer again).
    EagerGrant grant_eager(PeerId peer, std::uint64_t bytes) noexcept {
        const EagerGrant g = engine_.grant_eager(peer, bytes);
        return g != EagerGrant::Wait ? g : end_stale_wait(peer, bytes);
    }

    // --- time
    // The timer the glue armed for next_deadline() fired (or progress saw
    // it pass).
    void on_timer(Micros now) { channel_.on_timer(now); }
    // The earliest deadline of the channel's timers (kNever: none).
    [[nodiscard]] Micros next_deadline() const noexcept { return channel_.next_deadline(); }
    // The same, when it may have moved since the last call (nullopt: it
    // did not; `always`: return it anyway).
    [[nodiscard]] std::optional<Micros> deadline_change(bool always = false) noexcept;
    // Carried acknowledgements are applied in batches: whether one is due,
    // and applying it (after a frame went to its BTL, or from progress, not
    // on the way from an arrival to its delivery).
    [[nodiscard]] bool batches_due() const noexcept { return channel_.batches_due(); }
    void settle_batches() { channel_.settle_batches(); }

    // --- the runtime's and the BTLs' news
    // A BTL reported `path` to `peer` broken (to every peer: the BTL is gone).
    void path_lost(PeerId peer, PathId path, Micros now) { channel_.remove_path(peer, path, now); }
    void path_lost_to_all(PathId path, Micros now);
    // The runtime reported the peer dead.
    void declare_dead(PeerId peer, const char* reason) { channel_.declare_dead(peer, reason); }

    // MPI_Finalize: every peer is forgotten, so that no frame is kept and
    // no timer stays armed (the engine's matching state stays for the
    // statistics printed after).
    void remove_all_peers();

  private:
    // A Wait from the engine: stands unless nothing is in flight to the peer.
    EagerGrant end_stale_wait(PeerId peer, std::uint64_t bytes) noexcept;
    std::uint64_t report_credit(PeerId peer) override { return engine_.report_credit(peer); }

    Micros now_ = 0;  // the time of the current entry, read by the gate
    Engine engine_;
    ReliableChannel channel_;
    ChannelGate gate_;
};

}  // namespace pml::dr::core
