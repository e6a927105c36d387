// The client's event handlers, in the order PMIx runs them: handlers for
// specific codes before default ones; within each group prepended handlers
// first, then in registration order. Sans I/O: the glue keeps the callbacks
// behind the tokens.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plugin::pmix::core {

class HandlerChain {
  public:
    // `codes` empty = a default handler for every event. Returns the
    // registration's reference.
    std::size_t add(std::vector<int> codes, bool prepend, std::uint64_t token);
    // The removed registration's token, if there was one.
    std::optional<std::uint64_t> remove(std::size_t ref);
    // The tokens to run for `code`, in order.
    std::vector<std::uint64_t> for_event(int code) const;
    std::size_t size() const noexcept { return handlers_.size(); }

  private:
    struct Handler {
        std::size_t ref = 0;
        std::vector<int> codes;
        std::uint64_t token = 0;
    };
    std::vector<Handler> handlers_;
    std::size_t next_ref_ = 1;
};

}  // namespace plugin::pmix::core
