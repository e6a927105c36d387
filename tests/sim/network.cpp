#include "network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace sim {
namespace {

Micros serialization_time(std::size_t size, double bandwidth) {
    if (bandwidth <= 0.0 || size == 0)
        return 0;
    return static_cast<Micros>(std::ceil(static_cast<double>(size) / bandwidth));
}

}  // namespace

const char* send_status_name(SendStatus status) noexcept {
    switch (status) {
        case SendStatus::Ok:
            return "Ok";
        case SendStatus::Busy:
            return "Busy";
        case SendStatus::LinkDown:
            return "LinkDown";
        case SendStatus::Invalid:
            return "Invalid";
    }
    return "?";
}

const char* trace_kind_name(TraceKind kind) noexcept {
    switch (kind) {
        case TraceKind::Send:
            return "Send";
        case TraceKind::Deliver:
            return "Deliver";
        case TraceKind::Drop:
            return "Drop";
        case TraceKind::Busy:
            return "Busy";
        case TraceKind::Reject:
            return "Reject";
        case TraceKind::LinkDown:
            return "LinkDown";
        case TraceKind::LinkUp:
            return "LinkUp";
    }
    return "?";
}

Network::Network(Simulator& sim, int ranks, int links, const LinkParams& params)
    : sim_(sim), ranks_(ranks), links_(links) {
    if (ranks < 1 || links < 1)
        throw std::invalid_argument("Network: need >= 1 rank and link");
    params_.assign(static_cast<std::size_t>(links), params);
    channels_.resize(static_cast<std::size_t>(ranks) * ranks * links);
    endpoints_.resize(static_cast<std::size_t>(ranks));
    per_link_.resize(static_cast<std::size_t>(links));
}

void Network::set_link_params(LinkIndex link, const LinkParams& params) {
    if (link < 0 || link >= links_)
        throw std::out_of_range("Network::set_link_params: link");
    params_[link] = params;
}

void Network::set_fault_plan(FaultPlan plan) {
    plan_ = std::move(plan);
    for (const LinkOutage& outage : plan_.outages()) {
        sim_.schedule(outage.down_at, [this, where = outage.where] { link_down(where); });
        if (outage.up_at != kNever) {
            sim_.schedule(outage.up_at, [this, where = outage.where] { link_up(where); });
        }
    }
}

void Network::attach(Rank rank, Endpoint endpoint) {
    if (rank < 0 || rank >= ranks_)
        throw std::out_of_range("Network::attach: rank");
    endpoints_[rank] = std::move(endpoint);
}

bool Network::valid(Rank src, Rank dst, LinkIndex link) const noexcept {
    // src == dst is refused: a rank reaches itself through the self BTL, never
    // through a network, and a loopback "peer" would only confuse link errors.
    return src >= 0 && src < ranks_ && dst >= 0 && dst < ranks_ && src != dst && link >= 0 &&
           link < links_;
}

std::size_t Network::index(Rank src, Rank dst, LinkIndex link) const noexcept {
    return (static_cast<std::size_t>(src) * ranks_ + dst) * links_ + link;
}

void Network::bump(LinkIndex link, std::uint64_t NetworkStats::*field, std::uint64_t by) {
    total_.*field += by;
    per_link_[link].*field += by;
}

void Network::trace(TraceKind kind, Rank src, Rank dst, LinkIndex link, std::uint64_t seq,
                    std::size_t size) {
    if (tracer_)
        tracer_(TraceRecord{sim_.now(), kind, src, dst, link, seq, size});
}

// A frame left the sender: number it, count it, trace it.
std::uint64_t Network::record_send(Channel& ch, Rank src, Rank dst, LinkIndex link,
                                   std::size_t size) {
    const std::uint64_t seq = ch.next_seq++;
    bump(link, &NetworkStats::sent);
    bump(link, &NetworkStats::bytes_sent, size);
    trace(TraceKind::Send, src, dst, link, seq, size);
    return seq;
}

SendStatus Network::send(Frame frame) {
    if (!valid(frame.src, frame.dst, frame.link)) {
        ++total_.rejected;  // no valid link to attribute it to
        return SendStatus::Invalid;
    }
    const Rank src = frame.src;
    const Rank dst = frame.dst;
    const LinkIndex link = frame.link;
    const std::size_t size = frame.bytes.size();
    Channel& ch = channel(src, dst, link);
    const LinkParams& params = params_[link];

    if (ch.down_count > 0) {
        if (plan_.reports_link_errors()) {
            bump(link, &NetworkStats::rejected);
            trace(TraceKind::Reject, src, dst, link, 0, size);
            return SendStatus::LinkDown;
        }
        // Silent black hole: the sender believes the frame left.
        const std::uint64_t seq = record_send(ch, src, dst, link, size);
        bump(link, &NetworkStats::dropped);
        bump(link, &NetworkStats::dropped_link_down);
        trace(TraceKind::Drop, src, dst, link, seq, size);
        return SendStatus::Ok;
    }
    if (params.max_in_flight != 0 && ch.in_flight >= params.max_in_flight) {
        ch.wants_writable = true;
        bump(link, &NetworkStats::busy);
        trace(TraceKind::Busy, src, dst, link, 0, size);
        return SendStatus::Busy;
    }

    const std::uint64_t seq = record_send(ch, src, dst, link, size);

    const FrameFate fate = plan_.draw(src, dst, link, size);
    const Micros jitter = plan_.draw_jitter(params.jitter);
    const Micros tx_end =
        std::max(sim_.now(), ch.tx_free_at) + serialization_time(size, params.bandwidth);
    ch.tx_free_at = tx_end;
    Micros arrival = tx_end + params.latency + jitter + fate.extra_delay;
    if (fate.extra_delay > 0)
        bump(link, &NetworkStats::delayed);
    if (params.ordered)
        arrival = std::max(arrival, ch.last_arrival);
    // A lost frame cannot hold up later ones; a reordered one must not.
    if (!fate.drop && fate.reorder_delay == 0)
        ch.last_arrival = std::max(ch.last_arrival, arrival);
    arrival += fate.reorder_delay;

    // A duplicate is a clean copy travelling on its own; only the original
    // takes the corruption.
    std::vector<std::uint8_t> dup_bytes;
    if (fate.duplicate)
        dup_bytes = frame.bytes;
    if (!fate.flipped_bits.empty()) {
        bump(link, &NetworkStats::corrupted);
        apply_bit_flips(frame.bytes, fate.flipped_bits);
    }
    ++ch.in_flight;
    // Original first: with a zero duplicate delay FIFO order keeps it ahead.
    schedule_copy(arrival,
                  Copy{src, dst, link, seq, ch.epoch, true, fate.drop, std::move(frame.bytes)});
    if (fate.duplicate) {
        bump(link, &NetworkStats::duplicated);
        schedule_copy(arrival + fate.duplicate_delay,
                      Copy{src, dst, link, seq, ch.epoch, false, false, std::move(dup_bytes)});
    }
    return SendStatus::Ok;
}

void Network::schedule_copy(Micros at, Copy copy) {
    ++pending_;
    sim_.schedule(at, [this, c = std::move(copy)]() mutable { arrive(c); });
}

void Network::arrive(Copy& copy) {
    --pending_;
    Channel& ch = channel(copy.src, copy.dst, copy.link);
    if (copy.original)
        --ch.in_flight;
    const bool link_lost = ch.down_count > 0 || ch.epoch != copy.epoch;
    if (copy.fault_drop || link_lost) {
        bump(copy.link, &NetworkStats::dropped);
        if (link_lost && !copy.fault_drop)
            bump(copy.link, &NetworkStats::dropped_link_down);
        trace(TraceKind::Drop, copy.src, copy.dst, copy.link, copy.seq, copy.bytes.size());
    } else {
        if (copy.original) {
            if (copy.seq + 1 < ch.delivered_up_to)
                bump(copy.link, &NetworkStats::reordered);
            ch.delivered_up_to = std::max(ch.delivered_up_to, copy.seq + 1);
        }
        bump(copy.link, &NetworkStats::delivered);
        bump(copy.link, &NetworkStats::bytes_delivered, copy.bytes.size());
        trace(TraceKind::Deliver, copy.src, copy.dst, copy.link, copy.seq, copy.bytes.size());
        const Endpoint& receiver = endpoints_[copy.dst];
        if (receiver.on_frame)
            receiver.on_frame(copy.src, copy.link, copy.bytes);
    }
    // Space freed: tell a sender that was refused, once per refusal episode.
    const std::size_t limit = params_[copy.link].max_in_flight;
    if (copy.original && ch.wants_writable && (limit == 0 || ch.in_flight < limit)) {
        ch.wants_writable = false;
        const Endpoint& sender = endpoints_[copy.src];
        if (sender.on_writable)
            sender.on_writable(copy.dst, copy.link);
    }
}

void Network::link_down(const LinkSelector& where) {
    struct Notice {
        Rank src;
        Rank dst;
        LinkIndex link;
    };
    std::vector<Notice> notices;  // directions that just went down
    for (Rank s = 0; s < ranks_; ++s) {
        for (Rank d = 0; d < ranks_; ++d) {
            for (LinkIndex l = 0; l < links_; ++l) {
                if (s == d || !where.matches(s, d, l))
                    continue;
                Channel& ch = channel(s, d, l);
                if (ch.down_count++ != 0)
                    continue;
                ++ch.epoch;
                trace(TraceKind::LinkDown, s, d, l, 0, 0);
                notices.push_back(Notice{s, d, l});
            }
        }
    }
    if (!plan_.reports_link_errors())
        return;
    // Scheduled, not called: link_down may run from inside an engine callback.
    for (const Notice& n : notices) {
        sim_.schedule(sim_.now(), [this, n] {
            const Endpoint& ep = endpoints_[n.src];
            if (ep.on_link_error)
                ep.on_link_error(n.dst, n.link);
        });
    }
}

void Network::link_up(const LinkSelector& where) {
    for (Rank s = 0; s < ranks_; ++s) {
        for (Rank d = 0; d < ranks_; ++d) {
            for (LinkIndex l = 0; l < links_; ++l) {
                if (s == d || !where.matches(s, d, l))
                    continue;
                Channel& ch = channel(s, d, l);
                if (ch.down_count == 0)
                    continue;
                if (--ch.down_count == 0)
                    trace(TraceKind::LinkUp, s, d, l, 0, 0);
            }
        }
    }
}

bool Network::is_link_up(Rank src, Rank dst, LinkIndex link) const {
    if (!valid(src, dst, link))
        throw std::out_of_range("Network::is_link_up");
    return channels_[index(src, dst, link)].down_count == 0;
}

std::size_t Network::in_flight(Rank src, Rank dst, LinkIndex link) const {
    if (!valid(src, dst, link))
        throw std::out_of_range("Network::in_flight");
    return channels_[index(src, dst, link)].in_flight;
}

}  // namespace sim
