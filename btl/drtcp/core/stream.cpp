#include "stream.hpp"

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
    : max_frame_(max_frame), phase_(first_phase(role)), reader_(max_frame) {
    // Handshake messages: their preamble is checked as soon as it is in (a
    // stranger's bytes are refused after 8).
    reader_.expect(first_need(role), role == Role::None ? 0 : kPreambleSize);
}

// Each piece the reader cuts: act on it in the current phase and say what
// comes next.
struct StreamDecoder::Pieces {
    StreamDecoder& d;
    StreamSink& sink;

    Result<void> on_prefix(std::span<const std::uint8_t> preamble) {
        if (auto ok = check_preamble(preamble, type_of(d.phase_)); !ok)
            return d.reader_.fail(ok.error());
        return {};
    }

    Result<void> on_piece(std::span<std::uint8_t> piece) {
        switch (d.phase_) {
            case Phase::Hello:
            case Phase::Reply:
            case Phase::Confirm:
                return handshake(piece);
            case Phase::Header:
                return header(piece);
            case Phase::Payload:
                ++d.frames_;
                d.next_header();
                sink.on_frame(d.tag_, piece);
                return {};
            case Phase::PutHeader:
                return put_header(piece);
            case Phase::PutPayload:
                d.next_header();
                sink.on_put_done();
                return {};
            case Phase::Bye:
            case Phase::Failed:
                break;
        }
        return fail(ErrorCode::InvalidState, "stream already closed");
    }

    Result<void> handshake(std::span<const std::uint8_t> msg) {
        switch (d.phase_) {
            case Phase::Hello: {
                auto h = decode_hello(msg);
                if (!h)
                    return d.reader_.fail(h.error());
                if (!sink.on_hello(*h))
                    return d.reader_.fail(Error(ErrorCode::UnknownPeer, "HELLO refused"));
                d.phase_ = Phase::Confirm;
                d.reader_.expect(kConfirmSize, kPreambleSize);
                return {};
            }
            case Phase::Reply: {
                auto r = decode_reply(msg);
                if (!r)
                    return d.reader_.fail(r.error());
                if (!sink.on_reply(*r))
                    return d.reader_.fail(Error(ErrorCode::UnknownPeer, "REPLY refused"));
                break;
            }
            case Phase::Confirm: {
                auto c = decode_confirm(msg);
                if (!c)
                    return d.reader_.fail(c.error());
                if (!sink.on_confirm(*c))
                    return d.reader_.fail(Error(ErrorCode::UnknownPeer, "CONFIRM refused"));
                break;
            }
            default:
                return fail(ErrorCode::InvalidState, "not in a handshake");
        }
        d.next_header();
        return {};
    }

    Result<void> header(std::span<const std::uint8_t> bytes) {
        auto h = decode_frame_header(bytes, d.max_frame_);
        if (!h)
            return d.reader_.fail(h.error());
        if (h->flags == kFrameFlagBye) {
            d.phase_ = Phase::Bye;
            d.reader_.stop();
            sink.on_bye();
            return {};
        }
        if (h->flags == kFrameFlagPut) {
            d.phase_ = Phase::PutHeader;
            d.put_len_ = h->len;
            d.reader_.expect(kPutHeaderSize);
            return {};
        }
        d.tag_ = h->tag;
        if (h->len == 0) {
            ++d.frames_;
            d.next_header();
            sink.on_frame(d.tag_, {});
            return {};
        }
        d.phase_ = Phase::Payload;
        d.reader_.expect(h->len);
        return {};
    }

    Result<void> put_header(std::span<const std::uint8_t> bytes) {
        auto p = decode_put_header(bytes);
        if (!p)
            return d.reader_.fail(p.error());
        // Straight to the registered target; nothing is held.
        const std::span<std::uint8_t> dest = sink.on_put(p->key, p->addr, d.put_len_);
        if (dest.size() != d.put_len_ || dest.data() == nullptr)
            return d.reader_.fail(Error(ErrorCode::OutOfRange, "PUT outside a registered region"));
        d.phase_ = Phase::PutPayload;
        d.reader_.expect_into(dest);
        return {};
    }
};

void StreamDecoder::next_header() noexcept {
    phase_ = Phase::Header;
    reader_.expect(kFrameHeaderSize);
}

Result<void> StreamDecoder::feed(std::span<std::uint8_t> bytes, StreamSink& sink) {
    Pieces pieces{*this, sink};
    return reader_.feed(bytes, pieces);
}

std::span<std::uint8_t> StreamDecoder::direct_target(std::size_t min_direct) {
    if (phase_ != Phase::Payload && phase_ != Phase::PutPayload)
        return {};
    return reader_.direct_target(min_direct);
}

Result<void> StreamDecoder::commit_direct(std::size_t n, StreamSink& sink) {
    if (phase_ != Phase::Payload && phase_ != Phase::PutPayload)
        return fail(ErrorCode::InvalidState, "direct read outside a payload");
    Pieces pieces{*this, sink};
    return reader_.commit_direct(n, pieces);
}

}  // namespace btl::drtcp::core
