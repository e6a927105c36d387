// The send queue of one stream connection (sans I/O), shared by the TCP
// components (btl drtcp, oob drtcp).
//
// Each entry is one frame: up to kMaxPieces byte ranges written back to back
// (e.g. a frame header, the PML's header, then a payload that may sit in the
// user's buffer) and an opaque cookie (the caller's descriptor or message).
// The adapter asks for the next ranges to hand to writev(), reports how many
// bytes the kernel took, and gets back the cookies of the frames now fully
// written, in order. Partial writes leave the queue mid-frame; the next
// gather() resumes exactly there.
//
// Bounded by the glue (btl drtcp refuses new descriptors for an endpoint
// whose queue holds `sendq_frames`); the ring (a RingQueue) grows instead of
// refusing a push, so what was already handed out can always be queued.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ring_queue.hpp"

namespace plugin::common {

struct ByteRange {
    const std::uint8_t* base = nullptr;
    std::size_t len = 0;
};

class SendQueue {
  public:
    static constexpr std::size_t kMaxPieces = 3;
    struct Frame {
        std::array<ByteRange, kMaxPieces> pieces{};
        std::uint8_t count = 0;
        void* cookie = nullptr;
        [[nodiscard]] std::size_t bytes() const noexcept;
    };

    [[nodiscard]] bool empty() const noexcept { return ring_.empty(); }
    [[nodiscard]] std::size_t size() const noexcept { return ring_.size(); }
    // True while the head frame is partly written (it must not be dropped).
    [[nodiscard]] bool mid_frame() const noexcept {
        return !ring_.empty() && head_piece_off_ + piece_ > 0;
    }

    // False when the frame has no or too many pieces.
    bool push(const Frame& frame);

    // Fills `out` with the unwritten ranges from the head on; returns how many.
    std::size_t gather(std::span<ByteRange> out) const noexcept;

    // `written` bytes left through the socket: the frames completed by them
    // are appended to `done` (cookies, in order). Returns their count.
    std::size_t advance(std::size_t written, std::vector<void*>& done);

    // Takes every queued frame out (written or not), cookies in order: used
    // when the connection failed, to complete them all in error.
    void drain(std::vector<void*>& out);

  private:
    RingQueue<Frame> ring_;
    std::size_t piece_ = 0;           // of the head frame, first unwritten piece
    std::size_t head_piece_off_ = 0;  // bytes of that piece already written
};

}  // namespace plugin::common
