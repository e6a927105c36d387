#include "send_queue.hpp"

namespace plugin::common {

std::size_t SendQueue::Frame::bytes() const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < count; ++i)
        n += pieces[i].len;
    return n;
}

SendQueue::SendQueue(std::size_t initial_capacity)
    : ring_(initial_capacity > 0 ? initial_capacity : 1) {}

void SendQueue::grow() {
    std::vector<Frame> bigger(ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i)
        bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_.swap(bigger);
    head_ = 0;
}

bool SendQueue::push(const Frame& frame) {
    if (frame.count == 0 || frame.count > kMaxPieces)
        return false;
    if (size_ == ring_.size())
        grow();
    ring_[(head_ + size_) % ring_.size()] = frame;
    ++size_;
    return true;
}

std::size_t SendQueue::gather(std::span<ByteRange> out) const noexcept {
    std::size_t n = 0;
    for (std::size_t f = 0; f < size_ && n < out.size(); ++f) {
        const Frame& frame = ring_[(head_ + f) % ring_.size()];
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
    while (size_ > 0) {
        Frame& frame = ring_[head_];
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
        frame = Frame{};
        head_ = (head_ + 1) % ring_.size();
        --size_;
        piece_ = 0;
    }
    return completed;
}

void SendQueue::drain(std::vector<void*>& out) {
    while (size_ > 0) {
        out.push_back(ring_[head_].cookie);
        ring_[head_] = Frame{};
        head_ = (head_ + 1) % ring_.size();
        --size_;
    }
    piece_ = 0;
    head_piece_off_ = 0;
}

}  // namespace plugin::common
