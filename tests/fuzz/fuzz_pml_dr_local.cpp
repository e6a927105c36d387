// Fuzz target: pml dr's LOCAL_MATCH (trusted local paths): the decoder and
// the engine's checks of its sender (Engine::on_local_frame).
//
// Input: | ctrl (u8) | frame... |
//   ctrl bit 0 (kRawType):  leave the version and type bytes as they are
//                           (else they are set right, so mutants reach the
//                           fields)
//   ctrl bit 1 (kUntrusted): the frame came on a path the receiver does not trust
//   ctrl bit 2 (kTwoSegments): handed over as header + payload segments, as
//                           the self BTL does (split after 16 bytes)
//   ctrl bit 3 (kPosted):   a receive waits for each rank with the frame's tag
//                           (what the direct path takes), and the frame's
//                           msg_seq is then due from its source
//
// Properties: never crashes or reads out of bounds; a decode error is a wire
// error; decoding succeeds exactly for 16+ bytes with our version and type,
// and the header re-encodes byte for byte (the format is canonical); the
// engine counts every frame once, in exactly one of decode_errors,
// untrusted_local, bad_rank, pending_unknown_comm (parked) or local_frames
// (matched), and takes none from an untrusted path or a peer reached over
// the network; nothing reaches matching twice; a match takes exactly one
// posted receive, the one waiting for the frame's sender.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine.hpp"
#include "fuzz_util.hpp"
#include "log.hpp"
#include "wire_local.hpp"

namespace {

using namespace pml::dr::core;

constexpr std::uint8_t kRawType = 0x01;
constexpr std::uint8_t kUntrusted = 0x02;
constexpr std::uint8_t kTwoSegments = 0x04;
constexpr std::uint8_t kPosted = 0x08;
constexpr std::uint32_t kCid = 3;

struct CountingSink final : EngineSink {
    std::uint64_t calls = 0;
    std::uint64_t matches = 0;
    Handle matched = 0;
    void on_match(Handle recv, const MessageInfo&, std::span<const std::uint8_t>) override {
        ++calls;
        ++matches;
        matched = recv;
    }
    void on_unexpected(const Unexpected&) override { ++calls; }
    void on_cts(Handle, PeerId, const CtsHdr&) override {
        fuzz::check(false, "LOCAL_MATCH made a CTS");
    }
    void on_frag(Handle, PeerId, std::uint64_t, std::span<const std::uint8_t>) override {
        fuzz::check(false, "LOCAL_MATCH made a FRAG");
    }
};

std::uint64_t counted(const RxCounters& rx) {
    return rx.decode_errors + rx.untrusted_local + rx.bad_rank + rx.pending_unknown_comm +
           rx.local_frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Input in({data, size});
    const std::uint8_t ctrl = in.u8();
    const auto rest = in.rest();
    std::vector<std::uint8_t> frame(rest.begin(), rest.end());
    if ((ctrl & kRawType) == 0 && frame.size() >= 2) {
        frame[0] = kWireVersion;
        frame[1] = kLocalMatchType;
    }
    const std::span<const std::uint8_t> bytes(frame);

    // The codec.
    const auto h = decode_local_match(bytes);
    const bool valid = bytes.size() >= kLocalMatchHeaderSize && bytes[0] == kWireVersion &&
                       bytes[1] == kLocalMatchType;
    fuzz::check(h.has_value() == valid, "decode_local_match accepts exactly 16+ bytes of ours");
    if (!h) {
        fuzz::check(fuzz::is_wire_error(h.error().code), "decode_local_match: not a wire error");
    } else {
        std::uint8_t again[kLocalMatchHeaderSize];
        encode_local_match(*h, again);
        fuzz::check(std::equal(again, again + kLocalMatchHeaderSize, bytes.begin()),
                    "LOCAL_MATCH header does not re-encode to its bytes");
    }

    // The engine: ranks 0 (this process) and 1 on the node, 2 over the network.
    plugin::common::NullLogSink log;
    Engine e{Config{}, log};
    const PeerId p0 = e.add_peer({7, 0});
    const PeerId p1 = e.add_peer({7, 1});
    const PeerId p2 = e.add_peer({7, 2});
    e.set_local({7, 0});
    e.set_trust(p0, LocalTrust::AcceptAndSend);
    e.set_trust(p1, LocalTrust::Accept);
    CountingSink sink;
    e.add_comm(kCid, {p0, p1, p2}, sink);
    const bool posted = (ctrl & kPosted) != 0;
    if (posted) {
        // Receives 100 + r wait for rank r with the frame's tag; messages
        // before the frame's msg_seq arrived (sent by nobody: the source's
        // expected seq starts at 0, so a frame with msg_seq 0 is due).
        const std::int32_t tag = h ? h->tag : 0;
        for (std::int32_t r = 0; r < 3; ++r)
            fuzz::check(e.post_recv(kCid, 100 + static_cast<Handle>(r), r, tag, sink) == nullptr,
                        "a receive matched before any frame");
    }
    const std::size_t posted_before = e.comm(kCid)->posted_count();
    const bool trusted_path = (ctrl & kUntrusted) == 0;
    if ((ctrl & kTwoSegments) != 0 && bytes.size() > kLocalMatchHeaderSize)
        e.on_local_frame(bytes.first(kLocalMatchHeaderSize), bytes.subspan(kLocalMatchHeaderSize),
                         sink, 1, trusted_path);
    else
        e.on_local_frame(bytes, {}, sink, 1, trusted_path);
    const RxCounters& rx = e.rx();
    fuzz::check(rx.frames == 1, "frame not counted");
    fuzz::check(counted(rx) == 1, "frame counted in none or several outcomes");
    if (!trusted_path || !valid)
        fuzz::check(rx.local_frames == 0, "LOCAL_MATCH taken from an untrusted path or undecoded");
    if (valid && h->cid == kCid && h->src_rank == 2)
        fuzz::check(rx.local_frames == 0, "LOCAL_MATCH taken from a peer over the network");
    fuzz::check(sink.calls <= rx.local_frames, "more deliveries than frames taken");
    const std::size_t taken = posted_before - e.comm(kCid)->posted_count();
    fuzz::check(taken == sink.matches, "a match that took no posted receive, or one that took two");
    if (posted && sink.matches == 1)
        fuzz::check(sink.matched == 100 + static_cast<Handle>(h->src_rank),
                    "matched a receive waiting for another rank");
    return 0;
}
