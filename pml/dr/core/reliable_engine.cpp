#include "reliable_engine.hpp"

namespace pml::dr::core {

ReliableEngine::ReliableEngine(const Config& config, ChannelOutput& transport,
                               plugin::common::LogSink& log)
    : ReliableEngine(config, channel_params(config), transport, log) {}

ReliableEngine::ReliableEngine(const Config& config, const ChannelParams& params,
                               ChannelOutput& transport, plugin::common::LogSink& log)
    : engine_(config, log), channel_(params, transport, log), gate_(channel_, now_) {
    engine_.set_gate(&gate_);
    channel_.set_ack_credit(this);
}

ReliableEngine::~ReliableEngine() {
    channel_.set_ack_credit(nullptr);
    engine_.set_gate(nullptr);
}

EagerGrant ReliableEngine::end_stale_wait(PeerId peer, std::uint64_t bytes) noexcept {
    if (channel_.unacked(peer) != 0)
        return EagerGrant::Wait;
    engine_.end_wait(peer);
    return engine_.grant_eager(peer, bytes);
}

bool ReliableEngine::on_frame(std::span<const std::uint8_t> frame, EngineSink& sink, PathId path,
                              Micros now) {
    now_ = now;
    const std::uint64_t before = gate_.admitted();
    engine_.on_frame(frame, sink, path);
    return gate_.admitted() != before;
}

std::optional<Micros> ReliableEngine::deadline_change(bool always) noexcept {
    if (!channel_.take_timers_changed() && !always)
        return std::nullopt;
    return channel_.next_deadline();
}

void ReliableEngine::path_lost_to_all(PathId path, Micros now) {
    channel_.remove_path_everywhere(path, now);
}

void ReliableEngine::remove_all_peers() {
    for (PeerId peer = 0; peer < engine_.peer_count(); ++peer)
        if (channel_.has_peer(peer) || channel_.resting(peer))
            channel_.remove_peer(peer);
}

}  // namespace pml::dr::core
