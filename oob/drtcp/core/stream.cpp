#include "stream.hpp"

#include <algorithm>
#include <array>

namespace oob::drtcp::core {

using plugin::common::ErrorCode;
using plugin::common::fail;

std::size_t StreamDecoder::need() const noexcept {
    switch (phase_) {
        case Phase::Handshake:
            return kHandshakeSize;
        case Phase::Header:
            return kHeaderSize;
        case Phase::Payload:
            return header_.nbytes;
        case Phase::Closed:
        case Phase::Failed:
            return 0;
    }
    return 0;
}

Result<void> StreamDecoder::failed(plugin::common::Error e) {
    phase_ = Phase::Failed;
    held_.clear();
    held_.shrink_to_fit();
    return fail(e);
}

Result<void> StreamDecoder::feed(std::span<const std::uint8_t> bytes, StreamSink& sink) {
    while (!bytes.empty()) {
        if (phase_ == Phase::Failed)
            return fail(ErrorCode::InvalidArgument, "stream already failed");
        if (phase_ == Phase::Closed)
            return failed({ErrorCode::BadLength, "bytes after BYE"});
        const std::size_t want = need() - held_.size();
        if (held_.empty() && bytes.size() >= want) {
            // Whole in this read: handed out in place.
            auto r = complete(bytes.first(want), sink);
            if (!r)
                return r;
            bytes = bytes.subspan(want);
            continue;
        }
        const std::size_t take = std::min(want, bytes.size());
        if (phase_ == Phase::Handshake && held_.size() < kHandshakePrefix &&
            held_.size() + take >= kHandshakePrefix) {
            // A handshake that starts wrong is refused at once, not when
            // (or if) its 76 bytes have arrived.
            std::array<std::uint8_t, kHandshakePrefix> prefix{};
            std::copy(held_.begin(), held_.end(), prefix.begin());
            std::copy_n(bytes.begin(), kHandshakePrefix - held_.size(),
                        prefix.begin() + static_cast<std::ptrdiff_t>(held_.size()));
            if (auto p = check_handshake_prefix(prefix); !p)
                return failed(p.error());
        }
        if (held_.empty())
            held_.reserve(need());
        held_.insert(held_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take));
        bytes = bytes.subspan(take);
        if (held_.size() == need()) {
            std::vector<std::uint8_t> piece;
            piece.swap(held_);
            auto r = complete(piece, sink);
            if (!r)
                return r;
            if (held_.capacity() == 0 && piece.capacity() <= 64 * 1024) {
                piece.clear();
                held_.swap(piece);  // keep a small buffer for the next split piece
            }
        }
    }
    return {};
}

Result<void> StreamDecoder::complete(std::span<const std::uint8_t> piece, StreamSink& sink) {
    switch (phase_) {
        case Phase::Handshake: {
            auto f = decode_handshake(piece);
            if (!f)
                return failed(f.error());
            switch (sink.on_handshake(*f)) {
                case StreamSink::HsStep::More:
                    return {};
                case StreamSink::HsStep::Open:
                    phase_ = Phase::Header;
                    return {};
                case StreamSink::HsStep::Refuse:
                    break;
            }
            return failed({ErrorCode::UnknownPeer, "handshake refused"});
        }
        case Phase::Header: {
            auto h = decode_header(piece, max_nbytes_);
            if (!h)
                return failed(h.error());
            if (h->kind == Kind::Bye) {
                phase_ = Phase::Closed;
                sink.on_bye();
                return {};
            }
            header_ = *h;
            if (header_.nbytes > 0) {
                phase_ = Phase::Payload;
                return {};
            }
            ++messages_;
            sink.on_message(header_, {});
            return {};
        }
        case Phase::Payload:
            phase_ = Phase::Header;
            ++messages_;
            sink.on_message(header_, piece);
            return {};
        case Phase::Closed:
        case Phase::Failed:
            break;
    }
    return failed({ErrorCode::Internal, "decoder in a final phase"});
}

}  // namespace oob::drtcp::core
