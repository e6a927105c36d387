#include "matching.hpp"

#include <algorithm>

#include "seq.hpp"

namespace pml::dr::core {

using plugin::common::ErrorCode;
using plugin::common::fail;

CommMatcher::CommMatcher(std::uint32_t nsources) : in_(nsources) {}

std::uint16_t CommMatcher::next_send_seq(std::int32_t dst) noexcept {
    if (dst < 0 || static_cast<std::size_t>(dst) >= in_.size())
        return 0;
    return in_[static_cast<std::size_t>(dst)].send_seq++;
}

void CommMatcher::undo_send_seq(std::int32_t dst) noexcept {
    if (dst < 0 || static_cast<std::size_t>(dst) >= in_.size())
        return;
    --in_[static_cast<std::size_t>(dst)].send_seq;
}

std::size_t CommMatcher::posted_count() const noexcept {
    std::size_t n = wild_.size();
    for (const Source& s : in_)
        n += s.posted.size();
    return n;
}

std::size_t CommMatcher::unexpected_count() const noexcept {
    std::size_t n = 0;
    for (const Source& s : in_)
        n += s.unexpected.size() + s.cant_match.size();
    return n;
}

std::size_t CommMatcher::held_bytes() const noexcept {
    std::size_t n = 0;
    for (const Source& s : in_) {
        for (const auto& u : s.unexpected)
            n += u->data.size();
        for (const auto& [seq, u] : s.cant_match)
            n += u->data.size();
    }
    return n;
}

std::list<UnexpectedPtr>::iterator CommMatcher::find_unexpected(std::int32_t src, std::int32_t tag,
                                                                Source*& where) const noexcept {
    auto& self = const_cast<CommMatcher&>(*this);
    auto scan = [tag](Source& s) {
        return std::find_if(
            s.unexpected.begin(), s.unexpected.end(),
            [tag](const UnexpectedPtr& u) { return tag_matches(tag, u->info.tag); });
    };
    where = nullptr;
    if (src != kAnySource) {
        if (src < 0 || static_cast<std::size_t>(src) >= in_.size())
            return {};
        Source& s = self.in_[static_cast<std::size_t>(src)];
        auto it = scan(s);
        if (it != s.unexpected.end())
            where = &s;
        return it;
    }
    // Any source: the earliest arrival among each source's first match.
    std::list<UnexpectedPtr>::iterator best{};
    for (Source& s : self.in_) {
        auto it = scan(s);
        if (it == s.unexpected.end())
            continue;
        if (where == nullptr || (*it)->arrival < (*best)->arrival) {
            best = it;
            where = &s;
        }
    }
    return best;
}

const Unexpected* CommMatcher::peek(std::int32_t src, std::int32_t tag) const noexcept {
    Source* where = nullptr;
    auto it = find_unexpected(src, tag, where);
    return where != nullptr ? it->get() : nullptr;
}

UnexpectedPtr CommMatcher::take(std::int32_t src, std::int32_t tag) {
    Source* where = nullptr;
    auto it = find_unexpected(src, tag, where);
    if (where == nullptr)
        return nullptr;
    UnexpectedPtr msg = std::move(*it);
    where->unexpected.erase(it);
    return msg;
}

UnexpectedPtr CommMatcher::post(Handle recv, std::int32_t src, std::int32_t tag) {
    if (src >= 0 && static_cast<std::size_t>(src) < in_.size()) {
        Source& s = in_[static_cast<std::size_t>(src)];
        if (!s.unexpected.empty())
            if (UnexpectedPtr msg = take(src, tag))
                return msg;
        s.posted.push_back(Posted{recv, src, tag, post_order_++});
        return nullptr;
    }
    if (src != kAnySource)
        return nullptr;  // MPI_PROC_NULL and bad ranks are the glue's to handle; never queued
    if (UnexpectedPtr msg = take(src, tag))
        return msg;
    wild_.push_back(Posted{recv, src, tag, post_order_++});
    return nullptr;
}

bool CommMatcher::cancel(Handle recv) noexcept {
    auto drop = [recv](plugin::common::RingQueue<Posted>& l) {
        const std::size_t i = l.find_if([recv](const Posted& p) { return p.recv == recv; });
        if (i == l.size())
            return false;
        l.erase(i);
        return true;
    };
    if (drop(wild_))
        return true;
    return std::any_of(in_.begin(), in_.end(), [&](Source& s) { return drop(s.posted); });
}

void CommMatcher::take_posted_from(std::int32_t src, std::vector<Handle>& out) {
    if (src < 0 || static_cast<std::size_t>(src) >= in_.size())
        return;
    auto& posted = in_[static_cast<std::size_t>(src)].posted;
    for (std::size_t i = 0; i < posted.size(); ++i)
        out.push_back(posted[i].recv);
    posted.clear();
}

void CommMatcher::take_posted_any(std::vector<Handle>& out) {
    for (std::size_t i = 0; i < wild_.size(); ++i)
        out.push_back(wild_[i].recv);
    wild_.clear();
}

bool CommMatcher::pop_posted(std::int32_t src, std::int32_t tag, Handle& out) {
    auto& specific = in_[static_cast<std::size_t>(src)].posted;
    auto match = [tag](const Posted& p) { return tag_matches(p.tag, tag); };
    // The common case: no wildcard receive and the oldest specific one matches.
    if (wild_.empty()) {
        if (specific.empty())
            return false;
        if (match(specific.front())) {
            out = specific.front().recv;
            specific.pop_front();
            return true;
        }
    }
    const std::size_t s = specific.find_if(match);
    const std::size_t w = wild_.find_if(match);
    const bool have_s = s != specific.size();
    const bool have_w = w != wild_.size();
    if (!have_s && !have_w)
        return false;
    if (have_s && (!have_w || specific[s].order < wild_[w].order)) {
        out = specific[s].recv;
        specific.erase(s);
    } else {
        out = wild_[w].recv;
        wild_.erase(w);
    }
    return true;
}

void CommMatcher::deliver_in_order(const MessageInfo& info, std::span<const std::uint8_t> eager,
                                   MatchSink& sink, std::size_t& held_bytes) {
    Handle recv = 0;
    if (pop_posted(info.src, info.tag, recv)) {
        ++stats_.matched_posted;
        sink.on_match(recv, info, eager);
        return;
    }
    auto msg = std::make_unique<Unexpected>();
    msg->info = info;
    msg->data.assign(eager.begin(), eager.end());
    msg->arrival = arrival_order_++;
    held_bytes += msg->data.size();
    ++stats_.queued_unexpected;
    Unexpected& ref = *msg;
    in_[static_cast<std::size_t>(info.src)].unexpected.push_back(std::move(msg));
    sink.on_unexpected(ref);
}

void CommMatcher::deliver_held(UnexpectedPtr msg, MatchSink& sink, std::size_t& held_bytes) {
    Handle recv = 0;
    if (pop_posted(msg->info.src, msg->info.tag, recv)) {
        held_bytes -= msg->data.size();
        ++stats_.matched_posted;
        sink.on_match(recv, msg->info, msg->data);
        return;
    }
    msg->arrival = arrival_order_++;
    ++stats_.queued_unexpected;
    Unexpected& ref = *msg;
    in_[static_cast<std::size_t>(msg->info.src)].unexpected.push_back(std::move(msg));
    sink.on_unexpected(ref);
}

plugin::common::Result<void> CommMatcher::arrive(const MessageInfo& info,
                                                 std::span<const std::uint8_t> eager,
                                                 MatchSink& sink, std::size_t& held_bytes) {
    if (info.src < 0 || static_cast<std::size_t>(info.src) >= in_.size())
        return fail(ErrorCode::OutOfRange, "source rank outside the communicator");
    Source& s = in_[static_cast<std::size_t>(info.src)];
    if (info.seq != s.expected_seq) {
        using plugin::common::seq_lt;
        if (seq_lt(info.seq, s.expected_seq) || s.cant_match.count(info.seq) != 0) {
            ++stats_.stale_dropped;
            return fail(ErrorCode::Duplicate, "message sequence already seen");
        }
        auto msg = std::make_unique<Unexpected>();
        msg->info = info;
        msg->data.assign(eager.begin(), eager.end());
        held_bytes += msg->data.size();
        ++stats_.held_out_of_order;
        s.cant_match.emplace(info.seq, std::move(msg));
        return {};
    }
    ++s.expected_seq;
    deliver_in_order(info, eager, sink, held_bytes);
    if (s.cant_match.empty())
        return {};
    // The gap may have closed for messages that arrived early.
    for (auto it = s.cant_match.find(s.expected_seq); it != s.cant_match.end();
         it = s.cant_match.find(s.expected_seq)) {
        UnexpectedPtr held = std::move(it->second);
        s.cant_match.erase(it);
        ++s.expected_seq;
        deliver_held(std::move(held), sink, held_bytes);
    }
    return {};
}

}  // namespace pml::dr::core
