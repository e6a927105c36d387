#include "stream.hpp"

#include <algorithm>

namespace oob::drtcp::core {

using plugin::common::ErrorCode;
using plugin::common::fail;

std::size_t StreamDecoder::need() const noexcept {
    switch (phase_) {
        case Phase::Connect:
            return kConnectSize;
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
        case Phase::Connect: {
            auto from = decode_connect(piece);
            if (!from)
                return failed(from.error());
            if (!sink.on_connect(*from))
                return failed({ErrorCode::UnknownPeer, "CONNECT refused"});
            phase_ = Phase::Header;
            return {};
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
