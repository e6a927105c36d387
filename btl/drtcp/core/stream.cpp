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
        case StreamDecoder::Phase::Reply:
            return "reply";
        case StreamDecoder::Phase::Confirm:
            return "confirm";
        case StreamDecoder::Phase::Header:
            return "header";
        case StreamDecoder::Phase::Payload:
            return "payload";
        case StreamDecoder::Phase::PutHeader:
            return "put-header";
        case StreamDecoder::Phase::PutPayload:
            return "put-payload";
        case StreamDecoder::Phase::Bye:
            return "bye";
        case StreamDecoder::Phase::Failed:
            return "failed";
    }
    return "unknown";
}

namespace {

StreamDecoder::Phase first_phase(StreamDecoder::Role role) noexcept {
    switch (role) {
        case StreamDecoder::Role::Acceptor:
            return StreamDecoder::Phase::Hello;
        case StreamDecoder::Role::Initiator:
            return StreamDecoder::Phase::Reply;
        case StreamDecoder::Role::None:
            return StreamDecoder::Phase::Header;
    }
    return StreamDecoder::Phase::Header;
}

std::size_t first_need(StreamDecoder::Role role) noexcept {
    switch (role) {
        case StreamDecoder::Role::Acceptor:
            return kHelloSize;
        case StreamDecoder::Role::Initiator:
            return kReplySize;
        case StreamDecoder::Role::None:
            return kFrameHeaderSize;
    }
    return kFrameHeaderSize;
}

HsType type_of(StreamDecoder::Phase p) noexcept {
    return p == StreamDecoder::Phase::Hello   ? HsType::Hello
           : p == StreamDecoder::Phase::Reply ? HsType::Reply
                                              : HsType::Confirm;
}

}  // namespace

StreamDecoder::StreamDecoder(std::uint32_t max_frame, Role role)
    : max_frame_(max_frame), phase_(first_phase(role)), need_(first_need(role)) {}

// Handshake messages are small and fixed: assembled in hs_, the preamble
// checked as soon as it is in (a stranger's bytes are refused after 8).
Result<void> StreamDecoder::feed_handshake(std::span<std::uint8_t>& bytes, StreamSink& sink) {
    const std::size_t target = filled_ < kPreambleSize ? kPreambleSize : need_;
    const std::size_t take = std::min(bytes.size(), target - filled_);
    std::memcpy(hs_ + filled_, bytes.data(), take);
    filled_ += take;
    bytes = bytes.subspan(take);
    if (filled_ < target)
        return {};
    if (target == kPreambleSize) {
        if (auto ok = check_preamble(std::span(hs_, kPreambleSize), type_of(phase_)); !ok)
            return failed(ok.error());
        if (filled_ < need_)
            return {};
    }
    filled_ = 0;
    return complete_handshake(sink);
}

Result<void> StreamDecoder::complete_handshake(StreamSink& sink) {
    const std::span<const std::uint8_t> msg(hs_, need_);
    switch (phase_) {
        case Phase::Hello: {
            auto h = decode_hello(msg);
            if (!h)
                return failed(h.error());
            if (!sink.on_hello(*h))
                return failed(Error(ErrorCode::UnknownPeer, "HELLO refused"));
            phase_ = Phase::Confirm;
            need_ = kConfirmSize;
            return {};
        }
        case Phase::Reply: {
            auto r = decode_reply(msg);
            if (!r)
                return failed(r.error());
            if (!sink.on_reply(*r))
                return failed(Error(ErrorCode::UnknownPeer, "REPLY refused"));
            break;
        }
        case Phase::Confirm: {
            auto c = decode_confirm(msg);
            if (!c)
                return failed(c.error());
            if (!sink.on_confirm(*c))
                return failed(Error(ErrorCode::UnknownPeer, "CONFIRM refused"));
            break;
        }
        case Phase::Header:
        case Phase::Payload:
        case Phase::PutHeader:
        case Phase::PutPayload:
        case Phase::Bye:
        case Phase::Failed:
            return fail(ErrorCode::InvalidState, "not in a handshake");
    }
    phase_ = Phase::Header;
    need_ = kFrameHeaderSize;
    return {};
}

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
            if (h->flags == kFrameFlagPut) {
                phase_ = Phase::PutHeader;
                need_ = kPutHeaderSize;
                put_len_ = h->len;
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
        case Phase::PutHeader: {
            auto p = decode_put_header(message);
            if (!p)
                return failed(p.error());
            put_dest_ = sink.on_put(p->key, p->addr, put_len_);
            if (put_dest_.size() != put_len_ || put_dest_.data() == nullptr)
                return failed(Error(ErrorCode::OutOfRange, "PUT outside a registered region"));
            phase_ = Phase::PutPayload;
            need_ = put_len_;
            return {};
        }
        case Phase::Hello:  // through feed_handshake, never here
        case Phase::Reply:
        case Phase::Confirm:
        case Phase::PutPayload:  // bytes go to put_dest_, never through here
        case Phase::Bye:
        case Phase::Failed:
            break;
    }
    return fail(ErrorCode::InvalidState, "stream already closed");
}

Result<void> StreamDecoder::put_done(StreamSink& sink) {
    phase_ = Phase::Header;
    need_ = kFrameHeaderSize;
    filled_ = 0;
    put_dest_ = {};
    sink.on_put_done();
    return {};
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
        if (phase_ == Phase::PutPayload) {
            // Straight to the registered target; nothing is held.
            const std::size_t take = std::min(bytes.size(), need_ - filled_);
            std::memcpy(put_dest_.data() + filled_, bytes.data(), take);
            filled_ += take;
            bytes = bytes.subspan(take);
            if (filled_ == need_)
                if (auto ok = put_done(sink); !ok)
                    return ok;
            continue;
        }
        if (in_handshake()) {
            if (auto ok = feed_handshake(bytes, sink); !ok)
                return ok;
            continue;
        }
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
    if (phase_ == Phase::PutPayload && need_ - filled_ >= min_direct)
        return put_dest_.subspan(filled_);
    if (phase_ != Phase::Payload || need_ - filled_ < min_direct)
        return {};
    reserve_held();
    return {held_.get() + filled_, need_ - filled_};
}

Result<void> StreamDecoder::commit_direct(std::size_t n, StreamSink& sink) {
    if ((phase_ != Phase::Payload && phase_ != Phase::PutPayload) || n > need_ - filled_)
        return fail(ErrorCode::InvalidState, "direct read outside a payload");
    filled_ += n;
    if (filled_ < need_)
        return {};
    return phase_ == Phase::PutPayload ? put_done(sink) : complete_held(sink);
}

}  // namespace btl::drtcp::core
