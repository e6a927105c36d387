#include "stream.hpp"

#include <algorithm>
#include <cstring>

namespace btl::drtcp::core {

using plugin::common::Error;
using plugin::common::ErrorCode;
using plugin::common::fail;

std::string_view to_string(StreamDecoder::Phase p) noexcept {
    switch (p) {
        case StreamDecoder::Phase::Hello:
            return "hello";
        case StreamDecoder::Phase::Header:
            return "header";
        case StreamDecoder::Phase::Payload:
            return "payload";
        case StreamDecoder::Phase::Bye:
            return "bye";
        case StreamDecoder::Phase::Failed:
            return "failed";
    }
    return "unknown";
}

StreamDecoder::StreamDecoder(std::uint32_t max_frame, bool expect_hello)
    : max_frame_(max_frame),
      phase_(expect_hello ? Phase::Hello : Phase::Header),
      need_(expect_hello ? kHelloSize : kFrameHeaderSize) {}

Result<void> StreamDecoder::failed(Error e) {
    phase_ = Phase::Failed;
    filled_ = 0;
    held_.reset();
    held_cap_ = 0;
    return fail(e);
}

void StreamDecoder::reserve_held() {
    if (need_ <= held_cap_)
        return;
    auto bigger = std::make_unique_for_overwrite<std::uint8_t[]>(need_);
    if (filled_ > 0)
        std::memcpy(bigger.get(), held_.get(), filled_);
    held_ = std::move(bigger);
    held_cap_ = need_;
}

// A whole message of the current phase: act on it and move to the next.
Result<void> StreamDecoder::complete(std::span<std::uint8_t> message, StreamSink& sink) {
    switch (phase_) {
        case Phase::Hello: {
            auto h = decode_hello(message);
            if (!h)
                return failed(h.error());
            if (!sink.on_hello(*h))
                return failed(Error(ErrorCode::UnknownPeer, "HELLO from a process not expected"));
            phase_ = Phase::Header;
            need_ = kFrameHeaderSize;
            return {};
        }
        case Phase::Header: {
            auto h = decode_frame_header(message, max_frame_);
            if (!h)
                return failed(h.error());
            if (h->flags == kFrameFlagBye) {
                phase_ = Phase::Bye;
                need_ = 0;
                sink.on_bye();
                return {};
            }
            tag_ = h->tag;
            if (h->len == 0) {
                ++frames_;
                sink.on_frame(tag_, {});
                return {};  // next header
            }
            phase_ = Phase::Payload;
            need_ = h->len;
            return {};
        }
        case Phase::Payload:
            ++frames_;
            phase_ = Phase::Header;
            need_ = kFrameHeaderSize;
            sink.on_frame(tag_, message);
            return {};
        case Phase::Bye:
        case Phase::Failed:
            break;
    }
    return fail(ErrorCode::InvalidState, "stream already closed");
}

Result<void> StreamDecoder::complete_held(StreamSink& sink) {
    const std::size_t n = filled_;
    filled_ = 0;
    return complete(std::span(held_.get(), n), sink);
}

Result<void> StreamDecoder::feed(std::span<std::uint8_t> bytes, StreamSink& sink) {
    while (!bytes.empty()) {
        if (phase_ == Phase::Failed)
            return fail(ErrorCode::InvalidState, "stream already failed");
        if (phase_ == Phase::Bye)
            return failed(Error(ErrorCode::BadLength, "bytes after BYE"));
        if (filled_ == 0 && bytes.size() >= need_) {
            // The whole message is in this read: hand it out in place.
            const auto message = bytes.first(need_);
            bytes = bytes.subspan(need_);
            if (auto ok = complete(message, sink); !ok)
                return ok;
            continue;
        }
        reserve_held();
        const std::size_t take = std::min(bytes.size(), need_ - filled_);
        std::memcpy(held_.get() + filled_, bytes.data(), take);
        filled_ += take;
        bytes = bytes.subspan(take);
        if (filled_ < need_)
            return {};  // a partial read: wait for more
        if (auto ok = complete_held(sink); !ok)
            return ok;
    }
    return {};
}

std::span<std::uint8_t> StreamDecoder::direct_target(std::size_t min_direct) {
    if (phase_ != Phase::Payload || need_ - filled_ < min_direct)
        return {};
    reserve_held();
    return {held_.get() + filled_, need_ - filled_};
}

Result<void> StreamDecoder::commit_direct(std::size_t n, StreamSink& sink) {
    if (phase_ != Phase::Payload || n > need_ - filled_)
        return fail(ErrorCode::InvalidState, "direct read outside a payload");
    filled_ += n;
    if (filled_ < need_)
        return {};
    return complete_held(sink);
}

}  // namespace btl::drtcp::core
