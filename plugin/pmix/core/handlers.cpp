#include "handlers.hpp"

#include <algorithm>

namespace plugin::pmix::core {

std::size_t HandlerChain::add(std::vector<int> codes, bool prepend, std::uint64_t token) {
    Handler h{next_ref_++, std::move(codes), token};
    if (prepend)
        handlers_.insert(handlers_.begin(), std::move(h));
    else
        handlers_.push_back(std::move(h));
    return next_ref_ - 1;
}

std::optional<std::uint64_t> HandlerChain::remove(std::size_t ref) {
    auto it = std::find_if(handlers_.begin(), handlers_.end(),
                           [&](const Handler& h) { return h.ref == ref; });
    if (it == handlers_.end())
        return std::nullopt;
    const std::uint64_t token = it->token;
    handlers_.erase(it);
    return token;
}

std::vector<std::uint64_t> HandlerChain::for_event(int code) const {
    std::vector<std::uint64_t> out;
    for (const Handler& h : handlers_)
        if (std::find(h.codes.begin(), h.codes.end(), code) != h.codes.end())
            out.push_back(h.token);
    for (const Handler& h : handlers_)
        if (h.codes.empty())
            out.push_back(h.token);
    return out;
}

}  // namespace plugin::pmix::core
