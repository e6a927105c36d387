#include "send_queue.hpp"

namespace plugin::common {

std::size_t SendQueue::Frame::bytes() const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < count; ++i)
        n += pieces[i].len;
    return n;
}

bool SendQueue::push(const Frame& frame) {
    if (frame.count == 0 || frame.count > kMaxPieces)
        return false;
    ring_.push_back(frame);
    return true;
}

std::size_t SendQueue::gather(std::span<ByteRange> out) const noexcept {
    std::size_t n = 0;
    for (std::size_t f = 0; f < ring_.size() && n < out.size(); ++f) {
        const Frame& frame = ring_[f];
        for (std::size_t p = (f == 0 ? piece_ : 0); p < frame.count && n < out.size(); ++p) {
            ByteRange r = frame.pieces[p];
            if (f == 0 && p == piece_) {
                r.base += head_piece_off_;
                r.len -= head_piece_off_;
            }
            if (r.len > 0)
                out[n++] = r;
        }
    }
    return n;
}

std::size_t SendQueue::advance(std::size_t written, std::vector<void*>& done) {
    std::size_t completed = 0;
    while (!ring_.empty()) {
        const Frame& frame = ring_.front();
        while (piece_ < frame.count) {
            const std::size_t left = frame.pieces[piece_].len - head_piece_off_;
            if (written < left) {
                head_piece_off_ += written;
                return completed;
            }
            written -= left;
            head_piece_off_ = 0;
            ++piece_;
        }
        done.push_back(frame.cookie);
        ++completed;
        ring_.pop_front();
        piece_ = 0;
    }
    return completed;
}

void SendQueue::drain(std::vector<void*>& out) {
    for (; !ring_.empty(); ring_.pop_front())
        out.push_back(ring_.front().cookie);
    piece_ = 0;
    head_piece_off_ = 0;
}

}  // namespace plugin::common
