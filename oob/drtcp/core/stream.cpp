#include "stream.hpp"

namespace oob::drtcp::core {

using plugin::common::ErrorCode;
using plugin::common::fail;

namespace {
constexpr std::size_t kKeepHeld = 64 * 1024;  // a larger split payload's buffer is not kept
}  // namespace

StreamDecoder::StreamDecoder(std::uint32_t max_nbytes) noexcept
    : max_nbytes_(max_nbytes), reader_(kKeepHeld) {
    reader_.expect(kHandshakeSize, kHandshakePrefix);
}

// Each piece the reader cuts: act on it in the current phase and say what
// comes next.
struct StreamDecoder::Pieces {
    StreamDecoder& d;
    StreamSink& sink;

    // A handshake that starts wrong is refused at once, not when (or if)
    // its 76 bytes have arrived.
    Result<void> on_prefix(std::span<const std::uint8_t> prefix) {
        if (auto p = check_handshake_prefix(prefix); !p)
            return d.reader_.fail(p.error());
        return {};
    }

    Result<void> on_piece(std::span<const std::uint8_t> piece) {
        switch (d.phase_) {
            case Phase::Handshake:
                return handshake(piece);
            case Phase::Header:
                return header(piece);
            case Phase::Payload:
                d.phase_ = Phase::Header;
                d.reader_.expect(kHeaderSize);
                ++d.messages_;
                sink.on_message(d.header_, piece);
                return {};
            case Phase::Closed:
            case Phase::Failed:
                break;
        }
        return d.reader_.fail({ErrorCode::Internal, "decoder in a final phase"});
    }

    Result<void> handshake(std::span<const std::uint8_t> piece) {
        auto f = decode_handshake(piece);
        if (!f)
            return d.reader_.fail(f.error());
        switch (sink.on_handshake(*f)) {
            case StreamSink::HsStep::More:
                d.reader_.expect(kHandshakeSize, kHandshakePrefix);
                return {};
            case StreamSink::HsStep::Open:
                d.phase_ = Phase::Header;
                d.reader_.expect(kHeaderSize);
                return {};
            case StreamSink::HsStep::Refuse:
                break;
        }
        return d.reader_.fail({ErrorCode::UnknownPeer, "handshake refused"});
    }

    Result<void> header(std::span<const std::uint8_t> piece) {
        auto h = decode_header(piece, d.max_nbytes_);
        if (!h)
            return d.reader_.fail(h.error());
        if (h->kind == Kind::Bye) {
            d.phase_ = Phase::Closed;
            d.reader_.stop();
            sink.on_bye();
            return {};
        }
        d.header_ = *h;
        if (d.header_.nbytes > 0) {
            d.phase_ = Phase::Payload;
            d.reader_.expect(d.header_.nbytes);
            return {};
        }
        d.reader_.expect(kHeaderSize);
        ++d.messages_;
        sink.on_message(d.header_, {});
        return {};
    }
};

Result<void> StreamDecoder::feed(std::span<const std::uint8_t> bytes, StreamSink& sink) {
    Pieces pieces{*this, sink};
    return reader_.feed(bytes, pieces);
}

}  // namespace oob::drtcp::core
