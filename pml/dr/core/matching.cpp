#include "matching.hpp"

#include <algorithm>

#include "seq.hpp"

namespace pml::dr::core {

using plugin::common::ErrorCode;
using plugin::common::fail;

CommMatcher::CommMatcher(std::uint32_t nsources) : seqs_(nsources), in_(nsources) {}

CommMatcher::Source& CommMatcher::make_source(std::size_t rank) {
    in_[rank] = std::make_unique<Source>();
    return *in_[rank];
}

std::uint16_t CommMatcher::next_send_seq(std::int32_t dst) noexcept {
    if (dst < 0 || static_cast<std::size_t>(dst) >= seqs_.size())
        return 0;
    return seqs_[static_cast<std::size_t>(dst)].send++;
}

void CommMatcher::undo_send_seq(std::int32_t dst) noexcept {
    if (dst < 0 || static_cast<std::size_t>(dst) >= seqs_.size())
        return;
    --seqs_[static_cast<std::size_t>(dst)].send;
}

std::size_t CommMatcher::held_bytes() const noexcept {
    std::size_t n = 0;
    for_each_held([&n](const Unexpected& u) { n += u.data.size(); });
    return n;
}

void CommMatcher::push_unexpected(std::int32_t src, UnexpectedPtr msg) {
    const auto i = static_cast<std::uint32_t>(src);
    Source& s = source(i);
    if (s.unexpected.empty()) {
        s.busy_at = static_cast<std::uint32_t>(busy_.size());
        busy_.push_back(i);
    }
    s.unexpected.push_back(std::move(msg));
    ++held_count_;
}

UnexpectedPtr CommMatcher::erase_unexpected(Source& s,
                                            std::list<UnexpectedPtr>::iterator it) noexcept {
    UnexpectedPtr msg = std::move(*it);
    s.unexpected.erase(it);
    --held_count_;
    if (s.unexpected.empty()) {
        // Swap-remove: the last busy source takes this one's place.
        const std::uint32_t at = s.busy_at;
        const std::uint32_t last = busy_.back();
        busy_[at] = last;
        in_[last]->busy_at = at;  // a busy source has its queues
        busy_.pop_back();
        s.busy_at = kNotBusy;
    }
    return msg;
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
        Source* s = self.in_[static_cast<std::size_t>(src)].get();
        if (s == nullptr)
            return {};
        auto it = scan(*s);
        if (it != s->unexpected.end())
            where = s;
        return it;
    }
    // Any source: the earliest arrival among each busy source's first match.
    std::list<UnexpectedPtr>::iterator best{};
    for (const std::uint32_t i : busy_) {
        Source& s = *self.in_[i];
        ++self.stats_.any_source_visits;
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
    return erase_unexpected(*where, it);
}

UnexpectedPtr CommMatcher::post(Handle recv, std::int32_t src, std::int32_t tag) {
    if (src >= 0 && static_cast<std::size_t>(src) < in_.size()) {
        Source& s = source(static_cast<std::size_t>(src));
        if (!s.unexpected.empty())
            if (UnexpectedPtr msg = take(src, tag))
                return msg;
        s.posted.push_back(Posted{recv, src, tag, post_order_++});
        ++posted_specific_;
        return nullptr;
    }
    if (src != kAnySource)
        return nullptr;  // MPI_PROC_NULL and bad ranks are the glue's to handle; never queued
    if (UnexpectedPtr msg = take(src, tag))
        return msg;
    wild_.push_back(Posted{recv, src, tag, post_order_++});
    return nullptr;
}

bool CommMatcher::cancel(Handle recv, std::int32_t src) noexcept {
    auto drop = [recv](plugin::common::RingQueue<Posted>& l) {
        const std::size_t i = l.find_if([recv](const Posted& p) { return p.recv == recv; });
        if (i == l.size())
            return false;
        l.erase(i);
        return true;
    };
    if (src == kAnySource)
        return drop(wild_);
    if (src < 0 || static_cast<std::size_t>(src) >= in_.size())
        return false;
    Source* s = in_[static_cast<std::size_t>(src)].get();
    if (s == nullptr || !drop(s->posted))
        return false;
    --posted_specific_;
    return true;
}

void CommMatcher::take_posted_from(std::int32_t src, std::vector<Handle>& out) {
    if (src < 0 || static_cast<std::size_t>(src) >= in_.size() ||
        in_[static_cast<std::size_t>(src)] == nullptr)
        return;
    auto& posted = in_[static_cast<std::size_t>(src)]->posted;
    for (std::size_t i = 0; i < posted.size(); ++i)
        out.push_back(posted[i].recv);
    posted_specific_ -= posted.size();
    posted.clear();
}

void CommMatcher::take_posted_any(std::vector<Handle>& out) {
    for (std::size_t i = 0; i < wild_.size(); ++i)
        out.push_back(wild_[i].recv);
    wild_.clear();
}

bool CommMatcher::pop_posted(std::int32_t src, std::int32_t tag, Handle& out) {
    Source* from = in_[static_cast<std::size_t>(src)].get();  // null: only wildcards can match
    auto match = [tag](const Posted& p) { return tag_matches(p.tag, tag); };
    // The common case: no wildcard receive and the oldest specific one matches.
    if (wild_.empty()) {
        if (from == nullptr || from->posted.empty())
            return false;
        if (match(from->posted.front())) {
            out = from->posted.front().recv;
            from->posted.pop_front();
            --posted_specific_;
            return true;
        }
    }
    const std::size_t s = from != nullptr ? from->posted.find_if(match) : 0;
    const bool have_s = from != nullptr && s != from->posted.size();
    const std::size_t w = wild_.find_if(match);
    const bool have_w = w != wild_.size();
    if (!have_s && !have_w)
        return false;
    if (have_s && (!have_w || from->posted[s].order < wild_[w].order)) {
        out = from->posted[s].recv;
        from->posted.erase(s);
        --posted_specific_;
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
    push_unexpected(info.src, std::move(msg));
    sink.on_unexpected(ref);
}

void CommMatcher::deliver_held(UnexpectedPtr msg, MatchSink& sink, std::size_t& held_bytes) {
    Handle recv = 0;
    if (pop_posted(msg->info.src, msg->info.tag, recv)) {
        --held_count_;  // it left cant_match
        held_bytes -= msg->data.size();
        ++stats_.matched_posted;
        sink.on_match(recv, msg->info, msg->data);
        return;
    }
    msg->arrival = arrival_order_++;
    ++stats_.queued_unexpected;
    Unexpected& ref = *msg;
    const std::int32_t src = ref.info.src;
    --held_count_;  // it leaves cant_match; push_unexpected counts it again
    push_unexpected(src, std::move(msg));
    sink.on_unexpected(ref);
}

plugin::common::Result<void> CommMatcher::arrive(const MessageInfo& info,
                                                 std::span<const std::uint8_t> eager,
                                                 MatchSink& sink, std::size_t& held_bytes) {
    if (info.src < 0 || static_cast<std::size_t>(info.src) >= in_.size())
        return fail(ErrorCode::OutOfRange, "source rank outside the communicator");
    const auto rank = static_cast<std::size_t>(info.src);
    std::uint16_t& expected = seqs_[rank].expected;
    if (info.seq != expected) {
        using plugin::common::seq_lt;
        const Source* s = in_[rank].get();
        if (seq_lt(info.seq, expected) || (s != nullptr && s->cant_match.count(info.seq) != 0)) {
            ++stats_.stale_dropped;
            return fail(ErrorCode::Duplicate, "message sequence already seen");
        }
        auto msg = std::make_unique<Unexpected>();
        msg->info = info;
        msg->data.assign(eager.begin(), eager.end());
        held_bytes += msg->data.size();
        ++stats_.held_out_of_order;
        source(rank).cant_match.emplace(info.seq, std::move(msg));
        ++held_count_;
        return {};
    }
    ++expected;
    deliver_in_order(info, eager, sink, held_bytes);
    Source* s = in_[rank].get();
    if (s == nullptr || s->cant_match.empty())
        return {};
    // The gap may have closed for messages that arrived early.
    for (auto it = s->cant_match.find(expected); it != s->cant_match.end();
         it = s->cant_match.find(expected)) {
        UnexpectedPtr held = std::move(it->second);
        s->cant_match.erase(it);
        ++expected;
        deliver_held(std::move(held), sink, held_bytes);
    }
    return {};
}

}  // namespace pml::dr::core
