// btl drtcp: reassembly of the byte stream of one connection (sans I/O).
// The socket adapter reads whatever the kernel has, in any piece sizes, and
// feeds it here; the decoder hands out the handshake messages (an acceptor
// gets HELLO then CONFIRM, an initiator REPLY) and then one frame at a
// time. Partial reads are the normal case, not an error. Nothing but the
// handshake message the phase expects is accepted before the sink has
// accepted the last of them: a handshake message's 8-byte preamble is
// checked as soon as it is in, so garbage or a wrong length is refused
// without waiting for more bytes.
//
// Memory is bounded: at most max_frame bytes are held (and only when a frame
// arrives split across reads, sized to the largest such frame; a frame
// wholly inside one read is handed out in place). For a large payload split across reads the
// adapter may read straight into the held buffer (direct_target/commit_direct), so such a payload
// is copied once, by the kernel. The cutting into pieces is the shared
// PieceReader (plugin/common/core/piece_reader.hpp); this class is the
// phases and the wire format. A length above max_frame, a bad sync byte or a HELLO the sink
// (or REPLY or CONFIRM) the sink refuses fails the stream for good: a byte stream cannot be
// resynchronised, so the adapter closes the connection.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "piece_reader.hpp"
#include "result.hpp"
#include "wire.hpp"

namespace btl::drtcp::core {

class StreamSink {
  public:
    virtual ~StreamSink() = default;
    // Handshake messages (see wire.hpp); false refuses the peer (the
    // stream fails). An acceptor's stream expects HELLO then CONFIRM, an
    // initiator's REPLY.
    virtual bool on_hello(const Hello& /*hello*/) { return false; }
    virtual bool on_reply(const Reply& /*reply*/) { return false; }
    virtual bool on_confirm(const Confirm& /*confirm*/) { return false; }
    // One frame; `payload` is valid only during the call.
    virtual void on_frame(std::uint8_t tag, std::span<std::uint8_t> payload) = 0;
    // The peer closes on purpose; nothing may follow.
    virtual void on_bye() {}
    // A PUT of `len` bytes to `addr` under registration `key`: where to
    // write them (exactly `len` bytes), or an empty span to refuse (the
    // stream fails: the peer wrote outside what this process registered).
    virtual std::span<std::uint8_t> on_put(std::uint64_t /*key*/, std::uint64_t /*addr*/,
                                           std::uint32_t /*len*/) {
        return {};
    }
    // Every byte of the PUT is in place.
    virtual void on_put_done() {}
};

class StreamDecoder {
  public:
    enum class Phase : std::uint8_t {
        Hello,
        Reply,
        Confirm,
        Header,
        Payload,
        PutHeader,
        PutPayload,
        Bye,
        Failed
    };
    // Which end of the connection reads: the acceptor's stream starts with
    // HELLO and CONFIRM, the initiator's with REPLY; None: frames at once.
    enum class Role : std::uint8_t { Acceptor, Initiator, None };

    explicit StreamDecoder(std::uint32_t max_frame, Role role = Role::Acceptor);

    // Consumes all of `bytes`, calling the sink for every complete message.
    // After an error the decoder is Failed and consumes nothing more.
    Result<void> feed(std::span<std::uint8_t> bytes, StreamSink& sink);

    // Where the adapter may read the rest of a payload of at least
    // `min_direct` missing bytes straight into; empty otherwise.
    std::span<std::uint8_t> direct_target(std::size_t min_direct);
    // `n` bytes were read into direct_target(); completes the frame when whole.
    Result<void> commit_direct(std::size_t n, StreamSink& sink);

    [[nodiscard]] Phase phase() const noexcept { return reader_.failed() ? Phase::Failed : phase_; }
    // Bytes still missing from the message being assembled.
    [[nodiscard]] std::size_t want() const noexcept { return reader_.want(); }
    // Bytes held for a message that arrived in pieces.
    [[nodiscard]] std::size_t held() const noexcept { return reader_.held(); }
    [[nodiscard]] std::uint64_t frames() const noexcept { return frames_; }

  private:
    struct Pieces;  // the reader's handler: the phases below
    void next_header() noexcept;

    std::uint32_t max_frame_;
    Phase phase_;
    plugin::common::PieceReader reader_;  // keeps its buffer (at most max_frame)
    std::uint8_t tag_ = 0;                // of the frame whose payload is expected
    std::uint32_t put_len_ = 0;           // of the PUT whose header is expected
    std::uint64_t frames_ = 0;
};

std::string_view to_string(StreamDecoder::Phase p) noexcept;

}  // namespace btl::drtcp::core
