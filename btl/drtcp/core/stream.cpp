#include "stream.hpp"

#include <algorithm>

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
    held_.clear();
    held_.shrink_to_fit();
    return fail(e);
}

// A whole message of the current phase: act on it and move to the next.
Result<void> StreamDecoder::complete(std::span<const std::uint8_t> message, StreamSink& sink) {
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
            sink.on_frame(tag_, message);
            phase_ = Phase::Header;
            need_ = kFrameHeaderSize;
            return {};
        case Phase::Failed:
            break;
    }
    return fail(ErrorCode::InvalidState, "stream already failed");
}

Result<void> StreamDecoder::feed(std::span<const std::uint8_t> bytes, StreamSink& sink) {
    while (!bytes.empty()) {
        if (phase_ == Phase::Failed)
            return fail(ErrorCode::InvalidState, "stream already failed");
        if (held_.empty() && bytes.size() >= need_) {
            // The whole message is in this read: hand it out in place.
            const auto message = bytes.first(need_);
            bytes = bytes.subspan(need_);
            if (auto ok = complete(message, sink); !ok)
                return ok;
            continue;
        }
        const std::size_t take = std::min(bytes.size(), need_ - held_.size());
        held_.insert(held_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take));
        bytes = bytes.subspan(take);
        if (held_.size() < need_)
            return {};  // a partial read: wait for more
        std::vector<std::uint8_t> message;
        message.swap(held_);
        if (auto ok = complete(message, sink); !ok)
            return ok;
        message.clear();
        held_.swap(message);  // keep the capacity for the next split message
    }
    return {};
}

}  // namespace btl::drtcp::core
