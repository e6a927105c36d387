// Fuzz target: pmix dr message stream (FrameReader) and every body decoder.
//
// Input: | split (u8) | stream bytes... |
//   `split`: 0 feeds the stream in one read; otherwise reads of 1..split
//   bytes, sizes from a small generator seeded by `split`. The receiver's
//   max_msg_size is fixed at 1 MiB.
//
// Properties: never crashes; split reads give exactly the messages and the
// outcome of one read; after draining, at most one partial message is held;
// every message re-encodes to the bytes it came from; each payload goes to
// the decoder for its type (Reply bodies also to decode_records and
// decode_u32), which fails only with a wire error, and a body that decodes
// re-encodes to the same bytes and decodes again to an equal value.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "wire.hpp"

namespace {

using namespace plugin::pmix::core;

constexpr std::size_t kMaxLength = std::size_t{1} << 20;

// The reply's body is compared as bytes (check_body re-encodes it).
bool operator==(const ReplyBody& a, const ReplyBody& b) {
    return a.status == b.status;
}

bool same(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// Decodes `in`; if that works, re-encodes and decodes again.
template <class Decode, class Encode>
void check_body(std::span<const std::uint8_t> in, Decode decode, Encode enc) {
    auto d = decode(in);
    if (!d) {
        fuzz::check(fuzz::is_wire_error(d.error().code), "body decoder returned a non-wire error");
        return;
    }
    const std::vector<std::uint8_t> again = enc(*d);
    fuzz::check(same(again, in), "re-encoding a decoded body changes its bytes");
    auto back = decode(again);
    fuzz::check(back.has_value(), "a re-encoded body does not decode");
    fuzz::check(*back == *d, "decode(encode(body)) differs from body");
}

void check_payload(MsgType type, std::span<const std::uint8_t> p) {
    const auto enc = [](const auto& b) { return encode(b); };
    switch (type) {
        case MsgType::Hello:
            return check_body(p, decode_hello, enc);
        case MsgType::Commit:
        case MsgType::Publish:
            return check_body(p, decode_kvlist_body, enc);
        case MsgType::Fence:
        case MsgType::Connect:
            return check_body(p, decode_fence, enc);
        case MsgType::Get:
            return check_body(p, decode_get, enc);
        case MsgType::JobData:
            return check_body(p, decode_u32, encode_u32);
        case MsgType::Abort:
            return check_body(p, decode_abort, enc);
        case MsgType::Finalize:
            return;  // no body
        case MsgType::Lookup:
        case MsgType::Unpublish:
            return check_body(p, decode_lookup, enc);
        case MsgType::Spawn:
            return check_body(p, decode_spawn, enc);
        case MsgType::Event:
            return check_body(p, decode_event, enc);
        case MsgType::Reply: {
            check_body(p, decode_reply,
                       [](const ReplyBody& b) { return encode_reply(b.status, b.body); });
            auto r = decode_reply(p);
            if (!r)
                return;
            check_body(r->body, decode_records,
                       [](const std::vector<Record>& recs) { return encode_records(recs); });
            check_body(r->body, decode_u32, encode_u32);
            return;
        }
    }
    fuzz::property_failed("FrameReader delivered an unknown message type", __FILE__, __LINE__);
}

struct Got {
    Header header;
    std::vector<std::uint8_t> payload;
    bool operator==(const Got& o) const {
        return header.type == o.header.type && header.length == o.header.length &&
               header.req == o.header.req && payload == o.payload;
    }
};

// Drains every complete message. False once the stream has failed.
bool drain(FrameReader& fr, std::vector<Got>& out) {
    for (;;) {
        auto m = fr.next();
        if (!m) {
            fuzz::check(fuzz::is_wire_error(m.error().code), "FrameReader non-wire error");
            fuzz::check(!fr.next().has_value(), "FrameReader usable after an error");
            return false;
        }
        if (!m->has_value())
            return true;
        out.push_back({(*m)->header, std::move((*m)->payload)});
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint8_t split = in.u8();
    const auto stream = in.rest();

    FrameReader one(kMaxLength);
    one.feed(stream);
    std::vector<Got> whole;
    const bool ok_whole = drain(one, whole);
    if (ok_whole)
        fuzz::check(one.buffered() < kHeaderSize + kMaxLength, "held more than one message");

    std::size_t at = 0;
    for (const Got& g : whole) {
        fuzz::check(g.payload.size() == g.header.length && g.header.length <= kMaxLength,
                    "payload size differs from its header");
        const auto again = encode_message(g.header.type, g.header.req, g.payload);
        fuzz::check(same(again, stream.subspan(at, again.size())),
                    "a message does not re-encode to its bytes");
        at += again.size();
        check_payload(g.header.type, g.payload);
    }
    if (ok_whole)
        fuzz::check(one.buffered() == stream.size() - at, "bytes lost or invented");

    FrameReader pieces(kMaxLength);
    std::vector<Got> got;
    bool ok_split = true;
    std::uint32_t x = split;
    for (std::size_t pos = 0; pos < stream.size() && ok_split;) {
        x = x * 1103515245u + 12345u;
        const std::size_t n = split == 0 ? stream.size() : 1 + (x >> 16) % split;
        const auto piece = stream.subspan(pos, std::min(n, stream.size() - pos));
        pieces.feed(piece);
        pos += piece.size();
        ok_split = drain(pieces, got);
    }
    fuzz::check(ok_split == ok_whole, "split reads change the outcome");
    fuzz::check(got == whole, "split reads change the messages");
    return 0;
}
