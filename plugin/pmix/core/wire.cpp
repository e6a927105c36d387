#include "wire.hpp"

namespace plugin::pmix::core {

using plugin::common::fail;

namespace {

// Runs `body` on a reader over `in` and requires it to consume every byte.
template <class F>
auto decode_all(std::span<const std::uint8_t> in, F body)
    -> Result<decltype(body(std::declval<ByteReader&>()))> {
    ByteReader r(in);
    auto out = body(r);
    r.expect_end();
    if (!r.ok())
        return fail(r.error());
    return out;
}

std::vector<std::uint8_t> take(Encoder& e) {
    return std::move(e.buffer());
}

void encode_strings(Encoder& e, const std::vector<std::string>& items) {
    e.u32(static_cast<std::uint32_t>(items.size()));
    for (const std::string& s : items)
        e.text(s);
}

std::vector<std::string> decode_strings(ByteReader& r) {
    std::vector<std::string> out;
    const std::uint32_t n = r.u32();
    if (r.ok() && n > r.remaining() / 4) {
        r.fail(Error(ErrorCode::BadLength, "more strings than bytes"));
        return out;
    }
    for (std::uint32_t i = 0; i < n && r.ok(); ++i)
        out.push_back(read_text(r, r.remaining()));
    return out;
}

}  // namespace

Result<Header> decode_header(std::span<const std::uint8_t> in, std::size_t max_length) {
    ByteReader r(in);
    if (!r.need(kHeaderSize))
        return fail(r.error());
    if (r.u32() != kMagic)
        return fail(ErrorCode::BadField, "bad magic");
    const std::uint8_t version = r.u8();
    const std::uint8_t type = r.u8();
    r.expect_zero(2);
    Header h;
    h.length = r.u32();
    h.req = r.u32();
    if (!r.ok())
        return fail(r.error());
    if (version != kVersion)
        return fail(ErrorCode::BadVersion, "unknown protocol version");
    if (type < kFirstMsgType || type > kLastMsgType)
        return fail(ErrorCode::BadType, "unknown message type");
    if (h.length > max_length)
        return fail(ErrorCode::BadLength, "message longer than max_msg_size");
    h.type = static_cast<MsgType>(type);
    return h;
}

std::vector<std::uint8_t> encode_message(MsgType type, std::uint32_t req,
                                         std::span<const std::uint8_t> payload) {
    Encoder e;
    e.u32(kMagic);
    e.u8(kVersion);
    e.u8(static_cast<std::uint8_t>(type));
    e.u16(0);
    e.u32(static_cast<std::uint32_t>(payload.size()));
    e.u32(req);
    e.bytes(payload);
    return take(e);
}

void FrameReader::feed(std::span<const std::uint8_t> bytes) {
    if (start_ > 0 && start_ == buf_.size()) {
        buf_.clear();
        start_ = 0;
    }
    buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

Result<std::optional<FrameReader::Message>> FrameReader::next() {
    const std::span<const std::uint8_t> avail(buf_.data() + start_, buf_.size() - start_);
    if (avail.size() < kHeaderSize)
        return std::optional<Message>{};
    auto h = decode_header(avail, max_length_);
    if (!h)
        return fail(h.error());
    if (avail.size() - kHeaderSize < h->length)
        return std::optional<Message>{};
    Message m;
    m.header = *h;
    const auto* p = avail.data() + kHeaderSize;
    m.payload.assign(p, p + h->length);
    start_ += kHeaderSize + h->length;
    if (start_ == buf_.size()) {
        buf_.clear();
        start_ = 0;
    } else if (start_ > 65536 && start_ * 2 > buf_.size()) {
        buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(start_));
        start_ = 0;
    }
    return std::optional<Message>(std::move(m));
}

std::vector<std::uint8_t> encode(const HelloBody& b) {
    Encoder e;
    e.name(b.proc);
    e.u64(b.secret);
    return take(e);
}

Result<HelloBody> decode_hello(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) {
        HelloBody b;
        b.proc = r.name();
        b.secret = r.u64();
        return b;
    });
}

std::vector<std::uint8_t> encode(const FenceBody& b) {
    Encoder e;
    e.u8(b.collect ? 1 : 0);
    encode_names(e, b.procs);
    encode_kvlist(e, b.info);
    return take(e);
}

Result<FenceBody> decode_fence(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) {
        FenceBody b;
        const std::uint8_t collect = r.u8();
        if (r.ok() && collect > 1)
            r.fail(Error(ErrorCode::BadField, "bad collect flag"));
        b.collect = collect == 1;
        b.procs = decode_names(r);
        if (r.ok() && b.procs.empty())
            r.fail(Error(ErrorCode::BadField, "no participants"));
        b.info = decode_kvlist(r);
        return b;
    });
}

std::vector<std::uint8_t> encode(const GetBody& b) {
    Encoder e;
    e.name(b.proc);
    e.text(b.key);
    e.u8(b.immediate ? 1 : 0);
    return take(e);
}

Result<GetBody> decode_get(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) {
        GetBody b;
        b.proc = r.name();
        b.key = read_text(r, kMaxKeyLength);
        const std::uint8_t imm = r.u8();
        if (r.ok() && imm > 1)
            r.fail(Error(ErrorCode::BadField, "bad immediate flag"));
        b.immediate = imm == 1;
        return b;
    });
}

std::vector<std::uint8_t> encode(const AbortBody& b) {
    Encoder e;
    e.i32(b.status);
    e.text(b.message);
    encode_names(e, b.procs);
    return take(e);
}

Result<AbortBody> decode_abort(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) {
        AbortBody b;
        b.status = static_cast<std::int32_t>(r.u32());
        b.message = read_text(r, r.remaining());
        b.procs = decode_names(r);
        return b;
    });
}

std::vector<std::uint8_t> encode(const LookupBody& b) {
    Encoder e;
    encode_strings(e, b.keys);
    encode_kvlist(e, b.info);
    return take(e);
}

Result<LookupBody> decode_lookup(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) {
        LookupBody b;
        b.keys = decode_strings(r);
        b.info = decode_kvlist(r);
        return b;
    });
}

std::vector<std::uint8_t> encode(const SpawnBody& b) {
    Encoder e;
    encode_kvlist(e, b.job_info);
    e.u32(static_cast<std::uint32_t>(b.apps.size()));
    for (const App& a : b.apps) {
        e.text(a.cmd);
        encode_strings(e, a.argv);
        encode_strings(e, a.env);
        e.text(a.cwd);
        e.i32(a.maxprocs);
        encode_kvlist(e, a.info);
    }
    return take(e);
}

Result<SpawnBody> decode_spawn(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) {
        SpawnBody b;
        b.job_info = decode_kvlist(r);
        const std::uint32_t n = r.u32();
        if (r.ok() && n > r.remaining() / 20)
            r.fail(Error(ErrorCode::BadLength, "more apps than bytes"));
        for (std::uint32_t i = 0; i < n && r.ok(); ++i) {
            App a;
            a.cmd = read_text(r, r.remaining());
            a.argv = decode_strings(r);
            a.env = decode_strings(r);
            a.cwd = read_text(r, r.remaining());
            a.maxprocs = static_cast<std::int32_t>(r.u32());
            a.info = decode_kvlist(r);
            if (r.ok() && a.maxprocs < 1)
                r.fail(Error(ErrorCode::BadField, "app without processes"));
            b.apps.push_back(std::move(a));
        }
        if (r.ok() && b.apps.empty())
            r.fail(Error(ErrorCode::BadField, "spawn without apps"));
        return b;
    });
}

std::vector<std::uint8_t> encode(const EventBody& b) {
    Encoder e;
    e.i32(b.status);
    e.name(b.source);
    encode_kvlist(e, b.info);
    return take(e);
}

Result<EventBody> decode_event(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) {
        EventBody b;
        b.status = static_cast<std::int32_t>(r.u32());
        b.source = r.name();
        b.info = decode_kvlist(r);
        return b;
    });
}

std::vector<std::uint8_t> encode(const KvList& list) {
    Encoder e;
    encode_kvlist(e, list);
    return take(e);
}

Result<KvList> decode_kvlist_body(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) { return decode_kvlist(r); });
}

std::vector<std::uint8_t> encode_u32(std::uint32_t v) {
    Encoder e;
    e.u32(v);
    return take(e);
}

Result<std::uint32_t> decode_u32(std::span<const std::uint8_t> in) {
    return decode_all(in, [](ByteReader& r) { return r.u32(); });
}

std::vector<std::uint8_t> encode_reply(std::int32_t status, std::span<const std::uint8_t> body) {
    Encoder e;
    e.i32(status);
    e.bytes(body);
    return take(e);
}

std::vector<std::uint8_t> encode_records(std::span<const Record> records) {
    Encoder e;
    for (const Record& rec : records)
        encode_record(e, rec);
    return take(e);
}

Result<ReplyBody> decode_reply(std::span<const std::uint8_t> in) {
    ByteReader r(in);
    ReplyBody b;
    b.status = static_cast<std::int32_t>(r.u32());
    if (!r.ok())
        return fail(r.error());
    b.body = r.rest();
    return b;
}

}  // namespace plugin::pmix::core
