// Fuzz target: oob drtcp stream decoder (CONNECT, message headers, payloads).
//
// Input: | ctrl (u8) | max_kib (u8) | read (u8) | stream bytes... |
//   ctrl bit 0: the sink refuses the CONNECT. `max_kib`: the receiver's
//   largest payload in KiB (0: 0 bytes). `read`: size of each read (0: one).
//
// Properties: never crashes; holds at most kHeaderSize + max bytes; every
// delivered payload is exactly its header's nbytes, at most the maximum;
// nothing is delivered after a failure, a refused CONNECT or a BYE; split
// reads give exactly the messages and the outcome of one read; a header
// that decodes re-encodes to the same 72 bytes.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "stream.hpp"

namespace {

using namespace oob::drtcp::core;

struct Sink final : StreamSink {
    bool refuse = false;
    bool connected = false;
    bool closed = false;
    std::uint32_t max = 0;
    std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> got;  // tag, payload
    bool on_connect(const ProcName&) override {
        fuzz::check(!connected, "second CONNECT delivered");
        connected = !refuse;
        return connected;
    }
    void on_message(const Header& h, std::span<const std::uint8_t> p) override {
        fuzz::check(connected && !closed, "message before CONNECT or after BYE");
        fuzz::check(p.size() == h.nbytes && h.nbytes <= max, "payload size");
        std::array<std::uint8_t, kHeaderSize> again{};
        fuzz::check(encode_header(h, again).has_value(), "a decoded header does not encode");
        const auto back = decode_header(again, max);
        fuzz::check(back.has_value() && back->nbytes == h.nbytes && back->tag == h.tag &&
                        back->routed_name() == h.routed_name(),
                    "decode(encode(header)) differs");
        got.emplace_back(h.tag, std::vector<std::uint8_t>(p.begin(), p.end()));
    }
    void on_bye() override {
        fuzz::check(connected && !closed, "BYE before CONNECT or twice");
        closed = true;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint8_t ctrl = in.u8();
    const std::uint32_t max = static_cast<std::uint32_t>(in.u8()) * 1024;
    const std::size_t read = in.u8();
    const auto stream = in.rest();

    Sink whole;
    whole.refuse = (ctrl & 1) != 0;
    whole.max = max;
    StreamDecoder one(max);
    const bool ok_whole = one.feed(stream, whole).has_value();
    fuzz::check(one.held() <= kHeaderSize + max, "held more than a message");

    Sink split;
    split.refuse = whole.refuse;
    split.max = max;
    StreamDecoder pieces(max);
    bool ok_split = true;
    for (std::size_t at = 0; at < stream.size() && ok_split;) {
        const std::size_t n = std::min(stream.size() - at, read == 0 ? stream.size() : read);
        ok_split = pieces.feed(stream.subspan(at, n), split).has_value();
        fuzz::check(pieces.held() <= kHeaderSize + max, "held more than a message (split)");
        at += n;
    }
    fuzz::check(ok_split == ok_whole, "split reads change the outcome");
    fuzz::check(split.got == whole.got, "split reads change the messages");
    fuzz::check(split.closed == whole.closed, "split reads change the BYE");
    if (!ok_whole)
        fuzz::check(one.phase() == StreamDecoder::Phase::Failed,
                    "an error left the decoder usable");
    return 0;
}
