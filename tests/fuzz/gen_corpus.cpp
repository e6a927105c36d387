// Writes the seed corpora of the fuzz targets from valid encodings, or
// checks the checked-in ones against what it would write.
//
//   fuzz_gen_corpus DIR           (re)write DIR/<target>/<seed> files
//   fuzz_gen_corpus --check DIR   exit 1 if a seed file is missing or stale
//
// Run it after a wire format change (from the build dir):
//   tests/fuzz/fuzz_gen_corpus ../path/to/repo/tests/fuzz/corpus
// Other files in the corpus directories (e.g. crash reproducers added as
// regression inputs) are left alone and replayed like the seeds.
//
// Each seed is the target's control prefix (see the target's header
// comment) followed by wire bytes that decode; the generator refuses to
// write a seed that does not, so a stale encoder shows up here first.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "btl/drtcp/core/wire.hpp"
#include "crc32c.hpp"
#include "oob/drtcp/core/wire.hpp"
#include "plugin/pmix/core/wire.hpp"
#include "pml/dr/core/wire.hpp"
#include "pml/dr/core/wire_local.hpp"

namespace {

namespace fs = std::filesystem;
namespace drtcp = btl::drtcp::core;
namespace pml = pml::dr::core;
namespace oobw = oob::drtcp::core;
namespace pmix = plugin::pmix::core;
using Bytes = std::vector<std::uint8_t>;

struct SeedFile {
    std::string path;  // <target>/<name>
    Bytes bytes;
};

[[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "fuzz_gen_corpus: %s\n", why.c_str());
    std::exit(1);
}

void put_u32(Bytes& b, std::uint32_t v) {
    for (int i = 3; i >= 0; --i)
        b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void put_u32_at(Bytes& b, std::size_t at, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i)
        b.at(at + i) = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}

Bytes pattern(std::size_t n, std::uint8_t start) {
    Bytes b(n);
    for (std::size_t i = 0; i < n; ++i)
        b[i] = static_cast<std::uint8_t>(start + 31 * i);
    return b;
}

// ------------------------------------------------------------ drtcp
drtcp::Hello hello(std::uint32_t jobid, std::uint32_t vpid, std::uint16_t link, std::uint64_t seq) {
    drtcp::Hello h;
    h.from.jobid = jobid;
    h.from.vpid = vpid;
    h.to.jobid = jobid;
    h.to.vpid = vpid + 1;
    h.link = link;
    const Bytes random = pattern(8, 0x11);
    h.nonce = drtcp::make_hello_nonce(seq, std::span<const std::uint8_t, 8>(random.data(), 8));
    const Bytes mac = pattern(32, 0x5A);
    std::copy(mac.begin(), mac.end(), h.mac.begin());
    return h;
}

void append_hello(Bytes& b, const drtcp::Hello& h) {
    const std::size_t at = b.size();
    b.resize(at + drtcp::kHelloSize);
    if (!drtcp::encode(h, std::span(b).subspan(at)) ||
        !drtcp::decode_hello(std::span(b).subspan(at)))
        die("drtcp HELLO does not round-trip");
}

void append_reply(Bytes& b, std::uint32_t jobid, std::uint32_t vpid) {
    drtcp::Reply r;
    r.from = {jobid, vpid};
    const Bytes nonce = pattern(16, 0x21);
    std::copy(nonce.begin(), nonce.end(), r.nonce.begin());
    const Bytes mac = pattern(32, 0x6B);
    std::copy(mac.begin(), mac.end(), r.mac.begin());
    const std::size_t at = b.size();
    b.resize(at + drtcp::kReplySize);
    if (!drtcp::encode(r, std::span(b).subspan(at)) ||
        !drtcp::decode_reply(std::span(b).subspan(at)))
        die("drtcp REPLY does not round-trip");
}

void append_confirm(Bytes& b) {
    drtcp::Confirm c;
    const Bytes mac = pattern(32, 0x7C);
    std::copy(mac.begin(), mac.end(), c.mac.begin());
    const std::size_t at = b.size();
    b.resize(at + drtcp::kConfirmSize);
    if (!drtcp::encode(c, std::span(b).subspan(at)) ||
        !drtcp::decode_confirm(std::span(b).subspan(at)))
        die("drtcp CONFIRM does not round-trip");
}

// What an acceptor reads first: HELLO then CONFIRM.
void append_handshake(Bytes& b, const drtcp::Hello& h) {
    append_hello(b, h);
    append_confirm(b);
}

void append_frame(Bytes& b, std::uint8_t tag, const Bytes& payload, std::uint32_t max_frame) {
    drtcp::FrameHeader h;
    h.tag = tag;
    h.len = static_cast<std::uint32_t>(payload.size());
    const std::size_t at = b.size();
    b.resize(at + drtcp::kFrameHeaderSize);
    if (!drtcp::encode(h, std::span(b).subspan(at)) ||
        !drtcp::decode_frame_header(std::span(b).subspan(at), max_frame))
        die("drtcp frame header does not round-trip");
    b.insert(b.end(), payload.begin(), payload.end());
}

void drtcp_seeds(std::vector<SeedFile>& out) {
    // fuzz_drtcp_hello: | ctrl | handshake message |
    const auto hello_seed = [&](const char* name, std::uint8_t ctrl, const drtcp::Hello& h) {
        Bytes b{ctrl};
        append_hello(b, h);
        out.push_back({std::string("drtcp_hello/") + name, b});
    };
    hello_seed("valid", 0, hello(0x1234, 7, 1, 0x0102030405060708u));
    hello_seed("extremes", 0, hello(0xFFFFFFFFu, 0xFFFFFFFEu, 0xFFFF, ~0ull));
    hello_seed("raw_preamble", 0x04, hello(0, 0, 0, 0));
    {
        drtcp::Hello h = hello(3, 1, 0, 77);
        h.flags = drtcp::kHelloReconnect;
        hello_seed("reconnect", 0, h);
        Bytes r{0x01};
        append_reply(r, 3, 2);
        out.push_back({"drtcp_hello/reply", r});
        Bytes c{0x02};
        append_confirm(c);
        out.push_back({"drtcp_hello/confirm", c});
    }

    // fuzz_drtcp_frame_header: | max_frame | header |
    const auto header_seed = [&](const char* name, std::uint32_t max_frame, std::uint8_t tag,
                                 std::uint32_t len) {
        Bytes b;
        put_u32(b, max_frame);
        drtcp::FrameHeader h;
        h.tag = tag;
        h.len = len;
        const std::size_t at = b.size();
        b.resize(at + drtcp::kFrameHeaderSize);
        if (!drtcp::encode(h, std::span(b).subspan(at)) ||
            !drtcp::decode_frame_header(std::span(b).subspan(at), max_frame))
            die("drtcp frame header seed does not decode");
        out.push_back({std::string("drtcp_frame_header/") + name, b});
    };
    header_seed("small", 65536, 65, 100);
    header_seed("at_limit", 4096, 0xFF, 4096);
    header_seed("empty", 0, 0, 0);
    {
        Bytes b;
        put_u32(b, 1024);
        drtcp::FrameHeader h;
        h.flags = drtcp::kFrameFlagBye;
        const std::size_t at = b.size();
        b.resize(at + drtcp::kFrameHeaderSize);
        if (!drtcp::encode(h, std::span(b).subspan(at)) ||
            !drtcp::decode_frame_header(std::span(b).subspan(at), 1024))
            die("drtcp BYE seed does not decode");
        out.push_back({"drtcp_frame_header/bye", b});
    }

    // fuzz_drtcp_stream: | ctrl | max_frame | n | n read sizes | stream |
    const auto stream_seed = [&](const char* name, std::uint8_t ctrl, std::uint32_t max_frame,
                                 const Bytes& reads, const Bytes& stream) {
        Bytes b{ctrl};
        put_u32(b, max_frame);
        b.push_back(static_cast<std::uint8_t>(reads.size()));
        b.insert(b.end(), reads.begin(), reads.end());
        b.insert(b.end(), stream.begin(), stream.end());
        out.push_back({std::string("drtcp_stream/") + name, b});
    };
    {
        Bytes s;
        append_handshake(s, hello(5, 9, 0, 42));
        append_frame(s, 1, {}, 1024);
        append_frame(s, 2, pattern(5, 1), 1024);
        append_frame(s, 3, pattern(300, 2), 1024);
        stream_seed("hello_frames_split", 0, 1024, {1, 7, 32, 200}, s);
        stream_seed("hello_frames_one_read", 0, 1024, {}, s);
        stream_seed("refused_hello", 0x02, 1024, {40}, s);
    }
    {
        // The initiator's side: REPLY, then frames.
        Bytes s;
        append_reply(s, 5, 9);
        append_frame(s, 6, pattern(40, 9), 1024);
        stream_seed("reply_frames", 0x04, 1024, {5, 3, 60}, s);
    }
    {
        Bytes s;
        append_frame(s, 7, pattern(64, 3), 64);
        append_frame(s, 8, {}, 64);
        append_frame(s, 9, pattern(10, 4), 64);
        s.insert(s.end(), {0xD7, 10, 0, 0, 0, 0, 0, 20, 1, 2});  // a frame cut short
        stream_seed("no_hello_partial", 0x01, 64, {3, 0, 9}, s);
    }
    {
        // Adapter-style reads (kDirect, min_direct 32) of a large payload,
        // then a BYE.
        Bytes s;
        append_handshake(s, hello(1, 2, 3, 4));
        append_frame(s, 4, pattern(100, 6), 4096);
        append_frame(s, 5, pattern(600, 8), 4096);
        drtcp::FrameHeader bye;
        bye.flags = drtcp::kFrameFlagBye;
        const std::size_t at = s.size();
        s.resize(at + drtcp::kFrameHeaderSize);
        if (!drtcp::encode(bye, std::span(s).subspan(at)))
            die("drtcp BYE does not encode");
        stream_seed("direct_reads_bye", 0x08 | (1 << 4), 4096, {50, 100, 0xF0}, s);
    }
}

// ------------------------------------------------------------ pml dr
pml::Common common(std::uint16_t flags, std::uint32_t seq) {
    pml::Common c;
    c.flags = flags;
    c.src_jobid = 0x8001'0203u;
    c.src_vpid = 3;
    c.frame_seq = seq;
    c.ack_seq = seq + 7;
    return c;
}

pml::MatchFields match(const Bytes& payload, bool csum) {
    pml::MatchFields m;
    m.cid = 4;
    m.src_rank = 3;
    m.tag = -17;
    m.msg_seq = 0xFFFE;
    m.payload_len = static_cast<std::uint32_t>(payload.size());
    m.payload_crc = csum ? plugin::common::crc32c(payload.data(), payload.size()) : 0;
    return m;
}

void oob_seeds(std::vector<SeedFile>& out) {
    // fuzz_oob_drtcp_stream: | ctrl | max_kib | read | stream |
    // A HELLO from daemon 1 to daemon 0 of job 7 and a CONFIRM, MACs zero
    // (authentication off: ctrl bit 1 clear), then messages.
    Bytes s(2 * oobw::kHandshakeSize);
    oobw::HandshakeFrame hello;
    hello.type = oobw::HsType::Hello;
    hello.sender = {7, 1};
    hello.receiver = {7, 0};
    hello.nonce.fill(0x33);
    oobw::HandshakeFrame confirm = hello;
    confirm.type = oobw::HsType::Confirm;
    confirm.nonce.fill(0);
    if (!oobw::encode_handshake(hello, s) ||
        !oobw::encode_handshake(confirm, std::span(s).subspan(oobw::kHandshakeSize)))
        die("oob handshake does not encode");
    const auto message = [&](std::uint32_t tag, const Bytes& payload, const char* routed) {
        oobw::Header h;
        h.origin = {7, 1};
        h.dst = {7, tag % 3};
        h.tag = tag;
        h.nbytes = static_cast<std::uint32_t>(payload.size());
        if (!oobw::set_routed(h, routed))
            die("oob routed name");
        const std::size_t at = s.size();
        s.resize(at + oobw::kHeaderSize);
        if (!oobw::encode_header(h, std::span(s).subspan(at)))
            die("oob header does not encode");
        s.insert(s.end(), payload.begin(), payload.end());
    };
    message(1, {}, "radix");
    message(2, pattern(100, 3), "direct");
    message(3, pattern(3000, 5), "binomial");
    const auto seed = [&](const char* name, std::uint8_t ctrl, std::uint8_t max_kib,
                          std::uint8_t read, const Bytes& stream) {
        Bytes b{ctrl, max_kib, read};
        b.insert(b.end(), stream.begin(), stream.end());
        out.push_back({std::string("oob_drtcp_stream/") + name, b});
    };
    seed("messages_one_read", 0, 4, 0, s);
    seed("messages_split", 0, 4, 13, s);
    seed("too_long_for_max", 0, 1, 50, s);
    seed("refused_hello", 1, 4, 7, s);
    seed("forged_mac", 2, 4, 0, s);
    seed("unknown_daemon", 0, 4, 0, [&] {
        Bytes u = s;
        oobw::HandshakeFrame h = hello;
        h.sender = {7, 9};
        if (!oobw::encode_handshake(h, u))
            die("oob handshake does not encode");
        return u;
    }());
    Bytes bye = s;
    oobw::Header h;
    h.kind = oobw::Kind::Bye;
    bye.resize(bye.size() + oobw::kHeaderSize);
    if (!oobw::encode_header(h, std::span(bye).last(oobw::kHeaderSize)))
        die("oob BYE does not encode");
    seed("bye", 0, 4, 64, bye);
}

void pml_seeds(std::vector<SeedFile>& out) {
    // fuzz_pml_dr_frame: | ctrl | split | stamp_seq | frame |
    const auto seed = [&](const char* name, std::uint8_t ctrl, std::uint8_t split, const auto& hdr,
                          const Bytes& payload) {
        Bytes b{ctrl, split};
        put_u32(b, 0x00010002u);
        const std::size_t at = b.size();
        b.resize(at + pml::kMaxHeaderSize);
        const auto n = pml::encode(hdr, std::span(b).subspan(at));
        if (!n)
            die(std::string("pml frame seed does not encode: ") + name);
        b.resize(at + *n);
        b.insert(b.end(), payload.begin(), payload.end());
        if (!pml::decode(std::span(b).subspan(at)))
            die(std::string("pml frame seed does not decode: ") + name);
        out.push_back({std::string("pml_dr_frame/") + name, b});
    };
    constexpr std::uint8_t kStampRetransmit = 1 << 3;
    constexpr std::uint8_t kStampBoth = 3 << 3;
    {
        const Bytes p = pattern(5, 9);
        seed("match_csum", 0, 2, pml::MatchHdr{common(pml::kFlagPayloadCsum, 1), match(p, true)},
             p);
        seed("match_empty", kStampRetransmit, 0, pml::MatchHdr{common(0, 0), match({}, false)},
             Bytes{});
        seed("match_starved", 0, 2,
             pml::MatchHdr{common(pml::kFlagPayloadCsum | pml::kFlagCreditStarved, 1),
                           match(p, true)},
             p);
        // Valid as it stands: the raw bits only stop the fix-ups.
        seed("match_raw", 0x07, 1, pml::MatchHdr{common(pml::kFlagPayloadCsum, 9), match(p, true)},
             p);
    }
    {
        const Bytes p = pattern(8, 5);
        pml::RndvHdr r{common(pml::kFlagPayloadCsum | pml::kFlagSync | pml::kFlagCreditStarved, 2),
                       match(p, true), 100000, 0xCAFE, 0};
        seed("rndv", kStampBoth, 3, r, p);
        const Bytes handle = pattern(16, 7);
        pml::RndvHdr g{common(pml::kFlagPayloadCsum | pml::kFlagRget, 3), match(handle, true),
                       1u << 20, 0xBEEF, 0x7F00'0000'1000u};
        seed("rndv_rget", 0, 7, g, handle);
        const Bytes handle_crc = pattern(20, 7);
        pml::RndvHdr gc{common(pml::kFlagPayloadCsum | pml::kFlagRget | pml::kFlagDataCsum, 3),
                        match(handle_crc, true), 1u << 20, 0xBEEF, 0x7F00'0000'1000u};
        seed("rndv_rget_csum", 0, 7, gc, handle_crc);
    }
    seed("cts", 0, 0, pml::CtsHdr{common(0, 4), 0xCAFE, 0xF00D, 10, 100}, Bytes{});
    // Seeds on the edge of validity, so that small edits cross it.
    seed("cts_at_limit", 0, 0, pml::CtsHdr{common(0, 4), 0xCAFE, 0xF00D, 100, 100}, Bytes{});
    {
        const Bytes p = pattern(20, 13);
        pml::RndvHdr r{common(0, 2), match(p, false), 20, 0xCAFE, 0};
        seed("rndv_whole_message", 0, 0, r, p);
    }
    {
        const Bytes p = pattern(12, 11);
        pml::FragHdr f{common(pml::kFlagPayloadCsum | pml::kFlagAckNow, 5), 0xF00D, 4096,
                       static_cast<std::uint32_t>(p.size()),
                       plugin::common::crc32c(p.data(), p.size())};
        seed("frag", kStampRetransmit, 5, f, p);
    }
    seed("ack", 0, 0, pml::AckHdr{common(0, 0), 64, 0x5ull, 120, 200, 4096}, Bytes{});
    seed("ack_credit_answer", 0, 0,
         pml::AckHdr{common(pml::kFlagCreditAnswer, 0), 0, 0, 0, 200, 1u << 20}, Bytes{});
    seed("probe", 0, 0, pml::ProbeHdr{common(0, 0), 7, false}, Bytes{});
    seed("probe_ack", 0, 0, pml::ProbeHdr{common(0, 0), 7, true}, Bytes{});
    seed("bye", 0, 0, pml::ByeHdr{common(0, 0)}, Bytes{});
    seed("credit", 0, 0, pml::CreditHdr{common(pml::kFlagRetransmit, 6), 1u << 16}, Bytes{});
    seed("nack", kStampBoth, 0, pml::NackHdr{common(0, 0), 44}, Bytes{});
    seed("put", 0, 0, pml::PutHdr{common(0, 4), 0xCAFE, 0xF00D, 10, 1u << 20, 0x7F00'0000'2000u},
         Bytes{});
    seed("frag_put_done", kStampBoth, 0,
         pml::FragHdr{common(pml::kFlagPutDone | pml::kFlagAckNow, 5), 0xF00D, 1u << 20, 0, 0},
         Bytes{});
    seed("frag_put_done_csum", kStampBoth, 0,
         pml::FragHdr{common(pml::kFlagPutDone | pml::kFlagAckNow | pml::kFlagPayloadCsum, 5),
                      0xF00D, 1u << 20, 0, 0x1234'5678u},
         Bytes{});
}

// ------------------------------------------------------------ pmix dr
pmix::KvList pmix_values() {
    const Bytes blob{0, 1, 0, 0xFF};
    return {
        {"s1", pmix::Value::scalar(1, 1, 0xFF), pmix::Scope::Local},
        {"s8", pmix::Value::scalar(4, 8, 0x0102030405060708u), pmix::Scope::Remote},
        {"str", pmix::Value::string(3, "node0")},
        {"null", pmix::Value::null_string(3)},
        {"blob", pmix::Value::blob(7, blob)},
        {"name", pmix::Value::proc(8, {5, pmix::kRankWildcard})},
        // Three lists deep with the outer one: at kMaxDepth.
        {"list",
         pmix::Value::nested(
             9, {{"in", pmix::Value::scalar(2, 2, 7)},
                 {"deeper", pmix::Value::nested(9, {{"x", pmix::Value::scalar(2, 4, 1)}})}})},
    };
}

void pml_local_seeds(std::vector<SeedFile>& out) {
    // fuzz_pml_dr_local: | ctrl | LOCAL_MATCH header | payload |
    const auto seed = [&](const char* name, std::uint8_t ctrl, std::uint32_t cid, std::int32_t rank,
                          std::uint16_t msg_seq, std::size_t payload) {
        Bytes b{ctrl};
        const std::size_t at = b.size();
        b.resize(at + pml::kLocalMatchHeaderSize);
        pml::encode_local_match(pml::LocalMatchHdr{cid, rank, 5, msg_seq},
                                std::span<std::uint8_t, pml::kLocalMatchHeaderSize>(
                                    b.data() + at, pml::kLocalMatchHeaderSize));
        for (std::size_t i = 0; i < payload; ++i)
            b.push_back(static_cast<std::uint8_t>(i * 7 + 1));
        if (!pml::decode_local_match(std::span(b).subspan(at)))
            die(std::string("LOCAL_MATCH seed does not decode: ") + name);
        out.push_back({std::string("pml_dr_local/") + name, b});
    };
    seed("empty", 0, 3, 1, 0, 0);
    seed("eight", 0, 3, 1, 1, 8);
    seed("two_segments", 4, 3, 0, 2, 40);
    seed("untrusted_path", 2, 3, 1, 0, 8);
    seed("network_peer", 0, 3, 2, 0, 8);
    seed("unknown_comm", 0, 9, 1, 0, 8);
    // kPosted: receives wait for every rank (the direct path).
    seed("posted_direct", 8, 3, 1, 0, 8);
    seed("posted_ahead_of_turn", 8, 3, 1, 1, 8);
    seed("posted_network_peer", 8, 3, 2, 0, 8);
    seed("posted_two_segments", 12, 3, 0, 0, 40);
}

void pmix_seeds(std::vector<SeedFile>& out) {
    // fuzz_pmix_dr_request: | split | stream |
    const auto message = [](Bytes& s, pmix::MsgType type, std::uint32_t req, const Bytes& body) {
        const Bytes m = pmix::encode_message(type, req, body);
        if (!pmix::decode_header(m, 1 << 20))
            die("pmix header does not decode");
        s.insert(s.end(), m.begin(), m.end());
    };
    const auto seed = [&](const std::string& name, std::uint8_t split, const Bytes& stream) {
        Bytes b{split};
        b.insert(b.end(), stream.begin(), stream.end());
        out.push_back({"pmix_dr_request/" + name, b});
    };
    // One valid message of each type, checked with its body decoder.
    const auto one = [&](const char* name, pmix::MsgType type, const Bytes& body, auto decode) {
        if (!decode(body))
            die(std::string("pmix body seed does not decode: ") + name);
        Bytes s;
        message(s, type, 7, body);
        seed(name, 0, s);
    };
    using pmix::MsgType;
    const pmix::HelloBody hello{{5, 1}, 0x0102030405060708u};
    const pmix::FenceBody fence{true, {{5, pmix::kRankWildcard}}, {}};
    const pmix::FenceBody connect{false, {{5, pmix::kRankWildcard}, {6, 0}}, pmix_values()};
    const pmix::GetBody get{{5, 2}, "pmix.hname", false};
    const pmix::AbortBody abort{1, "oops", {{5, 0}}};
    const pmix::LookupBody lookup{{"port", "other"}, {{"pmix.wait", pmix::Value::scalar(1, 1, 1)}}};
    const pmix::LookupBody unpublish{};
    pmix::App app{"hostname", {"hostname", "-f"}, {"A=1"}, "/tmp", 2, {}};
    const pmix::SpawnBody spawn{{{"pmix.mapby", pmix::Value::string(3, "slot")}}, {app}};
    const pmix::EventBody event{
        -25, {5, 0}, {{"orte.notify.donotloop", pmix::Value::scalar(1, 1, 1)}}};
    const pmix::KvList publish{{"port", pmix::Value::string(3, "tcp://x:1")},
                               {"pmix.range", pmix::Value::scalar(6, 4, 2)}};
    const std::vector<pmix::Record> recs{
        {{5, pmix::kRankWildcard}, {{"pmix.jsize", pmix::Value::scalar(9, 4, 2)}}},
        {{5, 0}, pmix_values()}};
    const Bytes reply = pmix::encode_reply(0, pmix::encode_records(recs));
    one("hello", MsgType::Hello, pmix::encode(hello), pmix::decode_hello);
    one("commit", MsgType::Commit, pmix::encode(pmix_values()), pmix::decode_kvlist_body);
    one("fence", MsgType::Fence, pmix::encode(fence), pmix::decode_fence);
    one("get", MsgType::Get, pmix::encode(get), pmix::decode_get);
    one("job_data", MsgType::JobData, pmix::encode_u32(6), pmix::decode_u32);
    one("abort", MsgType::Abort, pmix::encode(abort), pmix::decode_abort);
    one("finalize", MsgType::Finalize, {}, [](const Bytes& b) { return b.empty(); });
    one("publish", MsgType::Publish, pmix::encode(publish), pmix::decode_kvlist_body);
    one("lookup", MsgType::Lookup, pmix::encode(lookup), pmix::decode_lookup);
    one("unpublish", MsgType::Unpublish, pmix::encode(unpublish), pmix::decode_lookup);
    one("spawn", MsgType::Spawn, pmix::encode(spawn), pmix::decode_spawn);
    one("connect", MsgType::Connect, pmix::encode(connect), pmix::decode_fence);
    one("reply", MsgType::Reply, reply, [](const Bytes& b) {
        const auto r = pmix::decode_reply(b);
        return r && pmix::decode_records(r->body);
    });
    one("event", MsgType::Event, pmix::encode(event), pmix::decode_event);

    // A conversation in one stream: one read, and split reads.
    Bytes s;
    message(s, MsgType::Hello, 1, pmix::encode(hello));
    message(s, MsgType::Reply, 1, reply);
    message(s, MsgType::Commit, 0, pmix::encode(pmix_values()));
    message(s, MsgType::Fence, 2, pmix::encode(fence));
    message(s, MsgType::Event, 0, pmix::encode(event));
    message(s, MsgType::Reply, 2, pmix::encode_reply(-1, {}));
    seed("conversation_one_read", 0, s);
    seed("conversation_split", 13, s);
    // A header announcing more than the receiver's 1 MiB: the stream fails.
    Bytes big = pmix::encode_message(MsgType::Reply, 3, Bytes(8, 0));
    put_u32_at(big, 8, (1u << 20) + 1);
    seed("oversized", 5, big);
}

Bytes read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
    bool check = false;
    std::string dir;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--check")
            check = true;
        else if (dir.empty() && !a.starts_with("-"))
            dir = a;
        else
            die("usage: fuzz_gen_corpus [--check] DIR");
    }
    if (dir.empty())
        die("usage: fuzz_gen_corpus [--check] DIR");

    std::vector<SeedFile> seeds;
    drtcp_seeds(seeds);
    pml_seeds(seeds);
    pml_local_seeds(seeds);
    oob_seeds(seeds);
    pmix_seeds(seeds);

    int stale = 0;
    for (const auto& s : seeds) {
        const fs::path p = fs::path(dir) / s.path;
        if (check) {
            if (!fs::exists(p) || read_file(p) != s.bytes) {
                std::fprintf(stderr, "stale or missing seed: %s\n", p.c_str());
                ++stale;
            }
            continue;
        }
        fs::create_directories(p.parent_path());
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(s.bytes.data()),
                static_cast<std::streamsize>(s.bytes.size()));
        if (!f)
            die("cannot write " + p.string());
    }
    if (stale != 0) {
        std::fprintf(stderr,
                     "%d seed file(s) differ from the current encoders; regenerate them:\n"
                     "  <builddir>/tests/fuzz/fuzz_gen_corpus %s\n",
                     stale, dir.c_str());
        return 1;
    }
    std::printf("%zu seed files %s\n", seeds.size(), check ? "up to date" : "written");
    return 0;
}
