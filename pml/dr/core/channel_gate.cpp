#include "channel_gate.hpp"

namespace pml::dr::core {

bool ChannelGate::admit(PeerId peer, std::uint64_t path, const Common& c, std::size_t frame_bytes) {
    // A credit-starved frame's ACK waits for the engine's answer (answer_credit).
    const AckTiming timing = (c.flags & kFlagCreditStarved) != 0 ? AckTiming::Held
                             : (c.flags & kFlagAckNow) != 0      ? AckTiming::Now
                                                                 : AckTiming::Delayed;
    if (ch_.on_sequenced(peer, path, c.frame_seq, c.ack_seq, now_, frame_bytes, timing) !=
        Verdict::Deliver)
        return false;
    ++admitted_;
    return true;
}

bool ChannelGate::fresh(PeerId peer, std::uint32_t seq) const {
    return ch_.is_fresh(peer, seq);
}

void ChannelGate::on_ack(PeerId peer, std::uint64_t path, const AckHdr& ack) {
    ch_.on_ack(
        peer, path,
        AckInfo{ack.common.ack_seq, ack.sack_base, ack.sack_mask, ack.ack_delay, ack.max_ack_delay},
        now_);
}

void ChannelGate::on_carried_ack(PeerId peer, std::uint64_t path, std::uint32_t ack_seq) {
    ch_.on_carried_ack(peer, path, ack_seq, now_);
}

void ChannelGate::on_nack(PeerId peer, std::uint64_t path, std::uint32_t seq) {
    ch_.on_nack(peer, path, seq, now_);
}

void ChannelGate::on_probe(PeerId peer, std::uint64_t path, std::uint32_t id, bool reply) {
    if (reply)
        ch_.on_probe_ack(peer, path, id, now_);
    else
        ch_.on_probe(peer, path, id, now_);
}

void ChannelGate::on_bye(PeerId peer, std::uint64_t path) {
    ch_.on_bye(peer, path, now_);
}

void ChannelGate::answer_credit(PeerId peer) {
    ch_.answer_credit(peer, now_);
}

void ChannelGate::on_damaged(PeerId peer, std::uint64_t path, std::uint32_t seq) {
    ch_.on_damaged(peer, path, seq, now_);
}

}  // namespace pml::dr::core
