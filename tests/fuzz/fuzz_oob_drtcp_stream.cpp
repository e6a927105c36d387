// Fuzz target: oob drtcp stream decoder and the acceptor's handshake
// (HELLO, CONFIRM, message headers, payloads), as mpirun sees a connection.
//
// Input: | ctrl (u8) | max_kib (u8) | read (u8) | stream bytes... |
//   ctrl bit 0: admission refuses every HELLO; bit 1: MACs are checked
//   (a fixed key), else authentication is off. `max_kib`: the receiver's
//   largest payload in KiB (0: 0 bytes). `read`: size of each read (0: one).
//   The acceptor is daemon 0 of job 7, which has daemons 0-3.
//
// Properties: never crashes; holds at most kHeaderSize + max bytes; every
// delivered payload is exactly its header's nbytes, at most the maximum;
// nothing is delivered before the handshake is open, after a failure, a
// refused handshake or a BYE; an admission refusal or a MAC check failure
// leaves no reply; split
// reads give exactly the messages and the outcome of one read; a header
// that decodes re-encodes to the same 72 bytes.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "handshake.hpp"
#include "stream.hpp"

namespace {

using namespace oob::drtcp::core;

struct Admit final : Admitter {
    bool refuse = false;
    Admission admit(const ProcName& from, const ProcName& to, bool reconnect) override {
        AdmissionFacts f;
        f.me = {7, 0};
        f.num_daemons = 4;
        return refuse ? Admission::UnknownDaemon : oob::drtcp::core::admit(f, from, to, reconnect);
    }
};

const plugin::common::auth::Key kKey = {1, 2, 3};

struct Sink final : StreamSink {
    Admit admit;
    LinkHandshake hs;
    bool connected = false;
    bool closed = false;
    int replies = 0;
    std::uint32_t max = 0;
    std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> got;  // tag, payload
    explicit Sink(bool auth)
        : hs({LinkRole::Acceptor, {7, 0}, {}, &kKey, auth, false},
             plugin::common::NullLogSink::instance()) {}
    HsStep on_handshake(const HandshakeFrame& f) override {
        fuzz::check(!connected, "handshake frame after the handshake");
        std::array<std::uint8_t, kHandshakeSize> out{};
        auto step = hs.on_frame(f, admit, out);
        if (!step) {
            fuzz::check(hs.state() == LinkState::Refused, "an error left the handshake usable");
            return HsStep::Refuse;
        }
        fuzz::check(!step->send || admit.admit(f.sender, f.receiver, false) == Admission::Admit ||
                        (f.flags & kFlagReconnect) != 0,
                    "a reply to a HELLO admission refused");
        replies += step->send ? 1 : 0;
        connected = step->open;
        return connected ? HsStep::Open : HsStep::More;
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

    const bool auth = (ctrl & 2) != 0;
    Sink whole(auth);
    whole.admit.refuse = (ctrl & 1) != 0;
    whole.max = max;
    StreamDecoder one(max);
    const bool ok_whole = one.feed(stream, whole).has_value();
    // At most one piece: a handshake frame, or a message's header and payload.
    const std::size_t most = std::max(kHandshakeSize, kHeaderSize + max);
    fuzz::check(one.held() <= most, "held more than a message");

    Sink split(auth);
    split.admit.refuse = whole.admit.refuse;
    split.max = max;
    StreamDecoder pieces(max);
    bool ok_split = true;
    for (std::size_t at = 0; at < stream.size() && ok_split;) {
        const std::size_t n = std::min(stream.size() - at, read == 0 ? stream.size() : read);
        ok_split = pieces.feed(stream.subspan(at, n), split).has_value();
        fuzz::check(pieces.held() <= most, "held more than a message (split)");
        at += n;
    }
    fuzz::check(ok_split == ok_whole, "split reads change the outcome");
    fuzz::check(split.got == whole.got, "split reads change the messages");
    fuzz::check(split.closed == whole.closed, "split reads change the BYE");
    fuzz::check(split.replies == whole.replies, "split reads change the replies");
    if (whole.admit.refuse)
        fuzz::check(whole.replies == 0 && !whole.connected, "a refused HELLO was answered");
    if (auth)
        fuzz::check(!whole.connected, "a forged HELLO/CONFIRM passed the MAC checks");
    if (!ok_whole)
        fuzz::check(one.phase() == StreamDecoder::Phase::Failed,
                    "an error left the decoder usable");
    return 0;
}
