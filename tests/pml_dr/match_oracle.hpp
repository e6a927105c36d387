// The MPI matching rules restated for the pml dr simulation tests: the
// messages and receives of a run, and a naive reference matcher the engine's
// decisions are compared with (so a wrong rule in matching.hpp cannot hide
// behind the same wrong rule in the checker).
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "matching.hpp"

namespace pml_dr_test {

using pml::dr::core::Handle;

struct Msg {
    int src = 0;
    int dst = 0;
    std::int32_t tag = 0;
    std::uint32_t id = 0;  // index in (src, dst) send order == msg_seq here
    std::size_t size = 0;
    bool csum = false;
    bool matched = false;
};

struct Recv {
    Handle handle = 0;
    std::int32_t src = 0;
    std::int32_t tag = 0;
    bool done = false;
};

using MsgKey = std::pair<int, std::uint16_t>;  // (src, msg_seq)

inline bool want_src_ok(std::int32_t want, std::int32_t have) {
    return want == -1 || want == have;
}
inline bool want_tag_ok(std::int32_t want, std::int32_t have) {
    return want == have || (want == -1 && have >= 0);
}

// The obvious matcher: one posted list in post order, one unexpected list in
// the order messages became matchable, per-source reorder buffers.
class Oracle {
  public:
    explicit Oracle(int n)
        : expected_(static_cast<std::size_t>(n), 0), held_(static_cast<std::size_t>(n)) {}

    struct Event {
        std::optional<Handle> recv;  // nullopt: went to the unexpected list
        MsgKey msg;
        bool operator==(const Event&) const = default;
    };

    std::vector<Event> arrive(int src, std::int32_t tag, std::uint16_t seq) {
        std::vector<Event> out;
        auto& held = held_[static_cast<std::size_t>(src)];
        held.emplace(seq, tag);
        auto& exp = expected_[static_cast<std::size_t>(src)];
        for (auto it = held.find(exp); it != held.end(); it = held.find(exp)) {
            const std::int32_t t = it->second;
            held.erase(it);
            out.push_back(release(src, t, exp));
            ++exp;
        }
        return out;
    }
    std::optional<MsgKey> post(Handle h, std::int32_t src, std::int32_t tag) {
        if (auto m = take(src, tag))
            return m;
        posted_.push_back(Recv{h, src, tag, false});
        return std::nullopt;
    }
    [[nodiscard]] std::optional<MsgKey> peek(std::int32_t src, std::int32_t tag) const {
        for (const Unx& u : unexpected_)
            if (want_src_ok(src, u.src) && want_tag_ok(tag, u.tag))
                return MsgKey{u.src, u.seq};
        return std::nullopt;
    }
    std::optional<MsgKey> take(std::int32_t src, std::int32_t tag) {
        for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
            if (want_src_ok(src, it->src) && want_tag_ok(tag, it->tag)) {
                MsgKey k{it->src, it->seq};
                unexpected_.erase(it);
                return k;
            }
        }
        return std::nullopt;
    }
    bool cancel(Handle h) {
        auto it = std::find_if(posted_.begin(), posted_.end(),
                               [h](const Recv& r) { return r.handle == h; });
        if (it == posted_.end())
            return false;
        posted_.erase(it);
        return true;
    }
    [[nodiscard]] bool empty() const {
        if (!posted_.empty() || !unexpected_.empty())
            return false;
        return std::all_of(held_.begin(), held_.end(), [](const auto& h) { return h.empty(); });
    }

  private:
    struct Unx {
        int src;
        std::int32_t tag;
        std::uint16_t seq;
    };
    Event release(int src, std::int32_t tag, std::uint16_t seq) {
        for (auto it = posted_.begin(); it != posted_.end(); ++it) {
            if (want_src_ok(it->src, src) && want_tag_ok(it->tag, tag)) {
                Event e{it->handle, {src, seq}};
                posted_.erase(it);
                return e;
            }
        }
        unexpected_.push_back(Unx{src, tag, seq});
        return Event{std::nullopt, {src, seq}};
    }

    std::vector<std::uint16_t> expected_;
    std::vector<std::map<std::uint16_t, std::int32_t>> held_;
    std::vector<Recv> posted_;
    std::vector<Unx> unexpected_;
};

}  // namespace pml_dr_test
