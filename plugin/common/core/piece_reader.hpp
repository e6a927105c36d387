// The framing core of every stream connection of ours (sans I/O): cuts the
// bytes a socket delivers, in reads of any size, into the pieces the owner
// asks for one at a time (a handshake message, a frame header, a payload of
// the length that header gave). btl drtcp's and oob drtcp's decoders are
// this reader plus their own phases and wire formats.
//
// - A piece wholly inside one read is handed out in place; one split across
//   reads is assembled in a buffer of ours, sized to the piece (the owner
//   bounds every length it asks for: its decoders refuse longer ones).
// - A prefix check: expect(size, check_at) shows the owner the piece's first
//   check_at bytes as soon as they are in, so a stranger's garbage is
//   refused without waiting for (or holding) the rest.
// - A piece may go straight to a destination of the owner's (expect_into:
//   an RDMA put's target), and a large one may be read by the adapter
//   directly where it belongs (direct_target / commit_direct): such bytes
//   are copied once, by the kernel.
// - The stream ends one of two ways, and nothing more is consumed after
//   either: stop() (the peer said it closes, e.g. BYE), after which bytes
//   that still come fail the stream (BadLength), and fail(error) (the owner
//   found the stream broken), after which feed() refuses everything.
//
// The handler (a template parameter: no virtual call per piece) provides
//   Result<void> on_prefix(std::span<const std::uint8_t> first_check_at_bytes);
//   Result<void> on_piece(std::span<Byte> piece);  // calls expect*/stop/fail
// where Byte is std::uint8_t (PieceReader: pieces handed out in place may be
// written by the handler) or const std::uint8_t (ConstPieceReader).
// An error from on_prefix or on_piece ends feed() with it (the owner has
// stopped the reader by then).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "result.hpp"

namespace plugin::common {

template <class Byte>
class BasicPieceReader {
  public:
    // A held buffer at most keep_limit bytes large is kept for the next split
    // piece; a larger one is freed once its piece was handed out.
    explicit BasicPieceReader(std::size_t keep_limit) noexcept : keep_limit_(keep_limit) {}

    // The next piece is `size` bytes; check_at (< size) > 0 asks for
    // on_prefix once that many of them are in.
    void expect(std::size_t size, std::size_t check_at = 0) noexcept {
        need_ = size;
        filled_ = 0;
        check_at_ = check_at;
        dest_ = {};
        into_ = false;
        stopped_ = false;
    }
    // The next piece is exactly dest.size() bytes, written into dest.
    void expect_into(std::span<std::uint8_t> dest) noexcept {
        expect(dest.size());
        dest_ = dest;
        into_ = true;
    }
    // The stream ended on purpose: consumes nothing more (wants nothing);
    // frees what was held.
    void stop() noexcept {
        stopped_ = true;
        need_ = 0;
        into_ = false;
        dest_ = {};
        filled_ = 0;
        release();
    }

    // The stream is broken: consumes nothing more; `return reader.fail(e);`
    // passes the error on.
    Failure fail(const Error& e) noexcept {
        stop();
        failed_ = true;
        return plugin::common::fail(e);
    }

    [[nodiscard]] bool stopped() const noexcept { return stopped_; }
    [[nodiscard]] bool failed() const noexcept { return failed_; }
    // Bytes still missing from the piece being assembled.
    [[nodiscard]] std::size_t want() const noexcept { return need_ - filled_; }
    // Bytes held (or written into the destination) for the current piece.
    [[nodiscard]] std::size_t held() const noexcept { return filled_; }
    // The buffer kept for split pieces (memory this reader holds).
    [[nodiscard]] std::size_t buffer_bytes() const noexcept { return held_cap_; }

    template <class Handler>
    Result<void> feed(std::span<Byte> bytes, Handler& h) {
        while (!bytes.empty()) {
            if (failed_)
                return plugin::common::fail(ErrorCode::InvalidState, "stream already failed");
            if (stopped_)
                return fail(Error(ErrorCode::BadLength, "bytes after the end of the stream"));
            if (into_) {
                const std::size_t take = std::min(bytes.size(), need_ - filled_);
                std::memcpy(dest_.data() + filled_, bytes.data(), take);
                filled_ += take;
                bytes = bytes.subspan(take);
                if (filled_ == need_)
                    if (auto ok = complete_into(h); !ok)
                        return ok;
                continue;
            }
            if (filled_ == 0 && bytes.size() >= need_) {
                // The whole piece is in this read: handed out in place.
                const auto piece = bytes.first(need_);
                bytes = bytes.subspan(need_);
                if (check_at_ > 0)
                    if (auto ok = h.on_prefix(piece.first(check_at_)); !ok)
                        return ok;
                if (auto ok = h.on_piece(piece); !ok)
                    return ok;
                continue;
            }
            reserve();
            // Up to the prefix first (when it is not in yet), then the rest.
            const std::size_t target = check_at_ > filled_ ? check_at_ : need_;
            const std::size_t take = std::min(bytes.size(), target - filled_);
            std::memcpy(held_.get() + filled_, bytes.data(), take);
            filled_ += take;
            bytes = bytes.subspan(take);
            if (filled_ < target)
                return {};  // a partial read: wait for more
            if (target == check_at_ && target < need_) {
                if (auto ok = h.on_prefix(std::span<const std::uint8_t>(held_.get(), check_at_));
                    !ok)
                    return ok;
                continue;
            }
            if (auto ok = complete_held(h); !ok)
                return ok;
        }
        return {};
    }

    // Where the adapter may read the rest of the current piece straight
    // into, when at least `min_direct` bytes of it are missing; empty
    // otherwise (and for a piece with a pending prefix check).
    std::span<std::uint8_t> direct_target(std::size_t min_direct) {
        if (stopped_ || need_ - filled_ < min_direct || check_at_ > filled_)
            return {};
        if (into_)
            return dest_.subspan(filled_);
        reserve();
        return {held_.get() + filled_, need_ - filled_};
    }
    // `n` bytes were read into direct_target(); completes the piece when whole.
    template <class Handler>
    Result<void> commit_direct(std::size_t n, Handler& h) {
        if (stopped_ || n > need_ - filled_)
            return plugin::common::fail(ErrorCode::InvalidState, "direct read outside a piece");
        filled_ += n;
        if (filled_ < need_)
            return {};
        return into_ ? complete_into(h) : complete_held(h);
    }

  private:
    void reserve() {
        if (need_ <= held_cap_)
            return;
        auto bigger = std::make_unique_for_overwrite<std::uint8_t[]>(need_);
        if (filled_ > 0)
            std::memcpy(bigger.get(), held_.get(), filled_);
        held_ = std::move(bigger);
        held_cap_ = need_;
    }
    void release() noexcept {
        held_.reset();
        held_cap_ = 0;
    }
    template <class Handler>
    Result<void> complete_held(Handler& h) {
        const std::size_t n = filled_;
        filled_ = 0;
        // The piece stays in held_ during the call; on_piece only sets what
        // comes next (expect never touches the buffer).
        auto ok = h.on_piece(std::span<Byte>(held_.get(), n));
        if (held_cap_ > keep_limit_)
            release();  // a large piece: its buffer is not kept for the next
        return ok;
    }
    template <class Handler>
    Result<void> complete_into(Handler& h) {
        const auto piece = dest_.first(need_);
        into_ = false;
        dest_ = {};
        filled_ = 0;
        return h.on_piece(std::span<Byte>(piece));
    }

    std::size_t keep_limit_;
    std::size_t need_ = 0;                  // size of the piece being assembled
    std::size_t filled_ = 0;                // its bytes so far (only when split, or into dest_)
    std::size_t check_at_ = 0;              // on_prefix once this many are in (0: no check)
    std::unique_ptr<std::uint8_t[]> held_;  // grown to the largest split piece
    std::size_t held_cap_ = 0;
    std::span<std::uint8_t> dest_;  // expect_into's destination
    bool into_ = false;
    bool stopped_ = false;
    bool failed_ = false;
};

using PieceReader = BasicPieceReader<std::uint8_t>;
using ConstPieceReader = BasicPieceReader<const std::uint8_t>;

}  // namespace plugin::common
