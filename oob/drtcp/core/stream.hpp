// oob drtcp: reassembly of the byte stream of one connection (sans I/O).
// The adapter reads whatever the kernel has, in pieces of any size, and
// feeds it here; the decoder hands out the handshake frames (their first 8
// bytes checked as soon as they arrive) until the sink says the handshake is
// complete, then one message at a time, header first and the payload once
// it is whole (its size comes from the header and is bounded by the
// receiver's maximum, so an absurd length is a protocol error, never an
// allocation). The cutting into pieces is the shared PieceReader
// (plugin/common/core/piece_reader.hpp): a piece wholly inside one read is
// handed out in place, one split across reads is assembled in a buffer of at
// most max_nbytes bytes, kept for the next one only up to 64 KiB.
//
// After a protocol error or a refused handshake the decoder is Failed for
// good and consumes nothing more: the adapter closes the connection.
// After a BYE it is Closed: bytes that follow are an error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "piece_reader.hpp"
#include "result.hpp"
#include "wire.hpp"

namespace oob::drtcp::core {

class StreamSink {
  public:
    virtual ~StreamSink() = default;
    enum class HsStep : std::uint8_t { More, Open, Refuse };
    // A handshake frame (decoded and CRC-checked): More waits for the next
    // one, Open switches to messages, Refuse fails the stream.
    virtual HsStep on_handshake(const HandshakeFrame& f) = 0;
    // One message; `payload` is valid only during the call.
    virtual void on_message(const Header& h, std::span<const std::uint8_t> payload) = 0;
    // The peer closes on purpose; nothing may follow.
    virtual void on_bye() {}
};

class StreamDecoder {
  public:
    enum class Phase : std::uint8_t { Handshake, Header, Payload, Closed, Failed };

    explicit StreamDecoder(std::uint32_t max_nbytes) noexcept;

    // Consumes all of `bytes`, calling the sink for everything complete.
    Result<void> feed(std::span<const std::uint8_t> bytes, StreamSink& sink);

    [[nodiscard]] Phase phase() const noexcept { return reader_.failed() ? Phase::Failed : phase_; }
    // Bytes held for a piece that arrived split.
    [[nodiscard]] std::size_t held() const noexcept { return reader_.held(); }
    [[nodiscard]] std::uint64_t messages() const noexcept { return messages_; }

  private:
    struct Pieces;  // the reader's handler: the phases below

    std::uint32_t max_nbytes_;
    Phase phase_ = Phase::Handshake;
    Header header_;  // of the message whose payload is awaited
    plugin::common::ConstPieceReader reader_;
    std::uint64_t messages_ = 0;
};

}  // namespace oob::drtcp::core
