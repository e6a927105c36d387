// Fuzz target: btl drtcp stream reassembly (StreamDecoder::feed, and the
// adapter's direct reads: direct_target/commit_direct).
//
// Input: | ctrl (u8) | max_frame (u32) | n (u8) | n read sizes (u8 each) | stream... |
//   ctrl bit 0 (kNoHello):     the stream starts with frames, no handshake
//   ctrl bit 1 (kRefuseHello): the sink refuses the first handshake message
//   ctrl bit 2 (kInitiator):   read as the initiator (REPLY first); else as
//                              the acceptor (HELLO, then CONFIRM)
//   ctrl bit 3 (kDirect):      read like the socket adapter: into
//                              direct_target(min_direct) when it offers one,
//                              the rest of the read through feed()
//   ctrl bits 4-7:             min_direct = value * 32
//   max_frame is taken modulo kMaxFrameCap + 1: the decoder allocates
//   max_frame bytes at the first split message, and 4 GiB per input would
//   only measure the allocator (decode_frame_header's own target covers
//   lengths up to 2^32 - 1).
//   n % 16 read sizes, used in turn: byte b < 0xF0 is a read of b bytes (0: an
//   empty read), b >= 0xF0 one of (b - 0xEF) * 4096 bytes. No sizes: the
//   stream in one read.
//
// The stream is read in those pieces and checked against a reference that
// parses it in one piece straight from the wire decoders: the same
// handshake messages (a bad preamble fails after its 8 bytes, before the
// rest of the message), frames (tag and payload bytes) and BYE in the same order, the error from
// the read that completes the bad message and from no earlier one, the same
// final phase and held/wanted byte counts. A failed stream stays failed,
// holds nothing and calls the sink no more; the caller's bytes are never
// written. Never a crash or a read out of bounds (payloads are copied during
// the callback).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "stream.hpp"
#include "wire.hpp"

namespace {

using namespace btl::drtcp::core;
using plugin::common::ErrorCode;
using Phase = StreamDecoder::Phase;

constexpr std::uint8_t kNoHello = 0x01;
constexpr std::uint8_t kRefuseHello = 0x02;
constexpr std::uint8_t kInitiator = 0x04;
constexpr std::uint8_t kDirect = 0x08;
constexpr std::uint32_t kMaxFrameCap = 1u << 20;

struct Event {
    enum class Kind : std::uint8_t { Hello, Reply, Confirm, Frame, Bye } kind = Kind::Frame;
    Hello peer;                         // Hello
    Reply reply;                        // Reply
    Confirm confirm;                    // Confirm
    std::uint8_t tag = 0;               // Frame
    std::vector<std::uint8_t> payload;  // Frame

    friend bool operator==(const Event& a, const Event& b) {
        if (a.kind != b.kind)
            return false;
        switch (a.kind) {
            case Kind::Hello:
                return a.peer == b.peer;
            case Kind::Reply:
                return a.reply == b.reply;
            case Kind::Confirm:
                return a.confirm == b.confirm;
            case Kind::Frame:
                return a.tag == b.tag && a.payload == b.payload;
            case Kind::Bye:
                return true;
        }
        return false;
    }
};

Event hello_event(const Hello& h) {
    Event e;
    e.kind = Event::Kind::Hello;
    e.peer = h;
    return e;
}
Event reply_event(const Reply& r) {
    Event e;
    e.kind = Event::Kind::Reply;
    e.reply = r;
    return e;
}
Event confirm_event(const Confirm& c) {
    Event e;
    e.kind = Event::Kind::Confirm;
    e.confirm = c;
    return e;
}
Event frame_event(std::uint8_t tag, std::span<const std::uint8_t> payload) {
    Event e;
    e.tag = tag;
    e.payload.assign(payload.begin(), payload.end());
    return e;
}
Event bye_event() {
    Event e;
    e.kind = Event::Kind::Bye;
    return e;
}

class Recorder : public StreamSink {
  public:
    explicit Recorder(bool refuse) : refuse_(refuse) {}
    bool on_hello(const Hello& hello) override {
        events.push_back(hello_event(hello));
        return !refuse_;
    }
    bool on_reply(const Reply& r) override {
        events.push_back(reply_event(r));
        return !refuse_;
    }
    bool on_confirm(const Confirm& c) override {
        events.push_back(confirm_event(c));
        return !refuse_;
    }
    void on_frame(std::uint8_t tag, std::span<std::uint8_t> payload) override {
        events.push_back(frame_event(tag, payload));
        ++frames;
    }
    void on_bye() override { events.push_back(bye_event()); }

    std::vector<Event> events;
    std::uint64_t frames = 0;

  private:
    bool refuse_;
};

struct Expected {
    std::vector<Event> events;
    bool failed = false;
    ErrorCode code{};
    std::size_t fail_end = 0;  // offset just past the byte that makes it fail
    Phase phase = Phase::Failed;
    std::size_t need = 0;  // size of the message left incomplete at the end
    std::size_t held = 0;  // its bytes present
    std::uint64_t frames = 0;
};

// The reference: the whole stream at once, message by message.
Expected reference(std::span<const std::uint8_t> s, std::uint32_t max_frame,
                   StreamDecoder::Role role, bool refuse) {
    Expected e;
    std::size_t pos = 0;
    const auto fail = [&](ErrorCode code, std::size_t end) {
        e.failed = true;
        e.code = code;
        e.fail_end = end;
        return e;
    };
    const auto partial = [&](Phase phase, std::size_t need) {
        e.phase = phase;
        e.need = need;
        e.held = s.size() - pos;
        return e;
    };
    std::vector<HsType> handshake;
    if (role == StreamDecoder::Role::Acceptor)
        handshake = {HsType::Hello, HsType::Confirm};
    else if (role == StreamDecoder::Role::Initiator)
        handshake = {HsType::Reply};
    for (const HsType t : handshake) {
        const Phase phase = t == HsType::Hello   ? Phase::Hello
                            : t == HsType::Reply ? Phase::Reply
                                                 : Phase::Confirm;
        const std::size_t size = handshake_size(t);
        if (s.size() - pos < kPreambleSize)
            return partial(phase, size);
        if (auto ok = check_preamble(s.subspan(pos, kPreambleSize), t); !ok)
            return fail(ok.error().code, pos + kPreambleSize);
        if (s.size() - pos < size)
            return partial(phase, size);
        const auto msg = s.subspan(pos, size);
        switch (t) {
            case HsType::Hello: {
                const auto h = decode_hello(msg);
                if (!h)
                    return fail(h.error().code, pos + size);
                e.events.push_back(hello_event(*h));
                break;
            }
            case HsType::Reply: {
                const auto r = decode_reply(msg);
                if (!r)
                    return fail(r.error().code, pos + size);
                e.events.push_back(reply_event(*r));
                break;
            }
            case HsType::Confirm: {
                const auto c = decode_confirm(msg);
                if (!c)
                    return fail(c.error().code, pos + size);
                e.events.push_back(confirm_event(*c));
                break;
            }
        }
        if (refuse)
            return fail(ErrorCode::UnknownPeer, pos + size);
        pos += size;
    }
    for (;;) {
        if (s.size() - pos < kFrameHeaderSize)
            return partial(Phase::Header, kFrameHeaderSize);
        const auto h = decode_frame_header(s.subspan(pos, kFrameHeaderSize), max_frame);
        if (!h)
            return fail(h.error().code, pos + kFrameHeaderSize);
        pos += kFrameHeaderSize;
        if (h->flags == kFrameFlagBye) {
            e.events.push_back(bye_event());
            // Nothing may follow a BYE: the first byte after it fails.
            if (pos < s.size())
                return fail(ErrorCode::BadLength, pos + 1);
            e.phase = Phase::Bye;
            return e;
        }
        if (h->flags == kFrameFlagPut) {
            // This sink registers nothing: every PUT is refused once its
            // target (key, address) is read.
            if (s.size() - pos < kPutHeaderSize)
                return partial(Phase::PutHeader, kPutHeaderSize);
            return fail(ErrorCode::OutOfRange, pos + kPutHeaderSize);
        }
        if (h->len == 0) {
            e.events.push_back(frame_event(h->tag, {}));
            ++e.frames;
            continue;
        }
        if (s.size() - pos < h->len)
            return partial(Phase::Payload, h->len);
        e.events.push_back(frame_event(h->tag, s.subspan(pos, h->len)));
        ++e.frames;
        pos += h->len;
    }
}

std::size_t read_size(std::uint8_t b) {
    return b < 0xF0 ? b : static_cast<std::size_t>(b - 0xEF) * 4096;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint8_t ctrl = in.u8();
    const std::uint32_t max_frame = in.u32() % (kMaxFrameCap + 1);
    std::vector<std::size_t> reads(in.u8() % 16);
    for (auto& r : reads)
        r = read_size(in.u8());
    const auto rest = in.rest();
    std::vector<std::uint8_t> stream(rest.begin(), rest.end());

    const StreamDecoder::Role role = (ctrl & kNoHello) != 0     ? StreamDecoder::Role::None
                                     : (ctrl & kInitiator) != 0 ? StreamDecoder::Role::Initiator
                                                                : StreamDecoder::Role::Acceptor;
    const bool refuse = (ctrl & kRefuseHello) != 0;
    const bool direct = (ctrl & kDirect) != 0;
    const std::size_t min_direct = static_cast<std::size_t>(ctrl >> 4) * 32;
    const std::vector<std::uint8_t> original = stream;
    const Expected want = reference(original, max_frame, role, refuse);

    StreamDecoder d(max_frame, role);
    Recorder sink(refuse);
    const std::span<std::uint8_t> s(stream);
    std::size_t pos = 0;
    std::size_t turn = 0;
    std::size_t empty_in_a_row = 0;
    bool failed = false;
    while (pos < s.size()) {
        std::size_t n = reads.empty() ? s.size() : reads[turn++ % reads.size()];
        // Only empty reads: after one round of them, read the rest.
        empty_in_a_row = n == 0 ? empty_in_a_row + 1 : 0;
        if (empty_in_a_row > reads.size())
            n = s.size() - pos;
        n = std::min(n, s.size() - pos);
        const std::size_t events_before = sink.events.size();
        plugin::common::Result<void> r;
        // As the adapter does: part of a read may land in the held buffer.
        const std::span<std::uint8_t> target =
            direct && !failed ? d.direct_target(min_direct) : std::span<std::uint8_t>();
        std::size_t into = 0;
        if (!target.empty() && n > 0) {
            fuzz::check(d.phase() == Phase::Payload && target.size() == d.want() &&
                            target.size() >= min_direct,
                        "direct_target() is not the rest of a payload");
            into = std::min(n, target.size());
            std::memcpy(target.data(), s.data() + pos, into);
            r = d.commit_direct(into, sink);
        }
        if (r && n > into)
            r = d.feed(s.subspan(pos + into, n - into), sink);
        else if (n == 0)
            r = d.feed(s.subspan(pos, 0), sink);
        pos += n;
        if (failed) {
            fuzz::check(n == 0 || (!r && r.error().code == ErrorCode::InvalidState),
                        "a failed stream accepted more bytes");
            fuzz::check(sink.events.size() == events_before, "a failed stream called the sink");
            continue;
        }
        // The read holding the byte that makes the stream fail reports it; no
        // read before does.
        if (want.failed && want.fail_end <= pos) {
            fuzz::check(!r && r.error().code == want.code,
                        "the stream did not fail where the reference does, or with another code");
            fuzz::check(d.phase() == Phase::Failed, "an error left the stream not Failed");
            fuzz::check(d.held() == 0, "a failed stream still holds bytes");
            fuzz::check(sink.events == want.events, "messages differ from the reference");
            failed = true;
            continue;
        }
        fuzz::check(r.has_value(), "the stream failed where the reference does not");
        fuzz::check(d.phase() != Phase::Failed, "Failed phase without an error");
        fuzz::check(d.held() <= std::max<std::size_t>(kHelloSize, max_frame),
                    "the stream holds more than one message");
        fuzz::check(d.phase() == Phase::Bye ? d.want() == 0 : d.want() > 0,
                    "a complete message is still held");
        fuzz::check(sink.events.size() <= want.events.size(), "more messages than the reference");
        for (std::size_t i = events_before; i < sink.events.size(); ++i)
            fuzz::check(sink.events[i] == want.events[i], "a message differs from the reference");
        fuzz::check(d.frames() == sink.frames, "frames() differs from the frames handed out");
    }

    fuzz::check(stream == original, "the decoder wrote into the caller's bytes");
    fuzz::check(sink.events == want.events, "messages differ from the one-piece reference");
    std::uint8_t more[1] = {0};
    if (want.failed) {
        fuzz::check(failed, "the stream did not fail");
        const auto r = d.feed(more, sink);
        fuzz::check(!r && r.error().code == ErrorCode::InvalidState && d.phase() == Phase::Failed,
                    "a failed stream accepted another byte");
        fuzz::check(sink.events == want.events, "a failed stream called the sink");
        return 0;
    }
    fuzz::check(d.phase() == want.phase, "final phase differs from the reference");
    fuzz::check(d.held() == want.held, "held() differs from the reference");
    fuzz::check(d.want() == want.need - want.held, "want() differs from the reference");
    fuzz::check(d.frames() == want.frames, "frames() differs from the reference");
    if (want.phase == Phase::Bye) {
        const auto r = d.feed(more, sink);
        fuzz::check(!r && d.phase() == Phase::Failed, "a byte after BYE was accepted");
    }
    return 0;
}
