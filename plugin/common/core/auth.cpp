#include "auth.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>

#include "wire_io.hpp"

namespace plugin::common::auth {

bool random_fill(std::span<std::uint8_t> out) noexcept {
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::getrandom(out.data() + done, out.size() - done, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

Result<Key> random_key() noexcept {
    Key k{};
    if (!random_fill(k))
        return fail(ErrorCode::NoResources, "the kernel's random source failed");
    return k;
}

std::string to_hex(const Key& key) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    s.reserve(2 * key.size());
    for (std::uint8_t b : key) {
        s.push_back(kDigits[b >> 4]);
        s.push_back(kDigits[b & 0xF]);
    }
    return s;
}

namespace {

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// Big enough for every transcript step_mac builds.
constexpr std::size_t kTranscriptMax = 128;

}  // namespace

Result<Key> parse_hex_key(std::string_view text) noexcept {
    if (text.size() != 2 * kKeySize)
        return fail(ErrorCode::BadLength, "a key is 64 hex characters");
    Key k{};
    for (std::size_t i = 0; i < kKeySize; ++i) {
        const int hi = hex_value(text[2 * i]);
        const int lo = hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return fail(ErrorCode::BadField, "a key holds only hex digits");
        k[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return k;
}

Mac hmac(const Key& key, std::span<const std::uint8_t> data) noexcept {
    Mac out{};
    unsigned int len = 0;
    // One-shot HMAC (not deprecated in OpenSSL 3); it fails only on an
    // unavailable digest, which leaves `out` zero: a MAC nobody can match
    // without also failing, so the handshake is refused, not passed.
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(), data.size(),
             out.data(), &len) == nullptr ||
        len != kMacSize)
        out.fill(0);
    return out;
}

namespace {

EVP_MAC* hmac_algorithm() noexcept {
    static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    return mac;
}

}  // namespace

KeyedMac::KeyedMac(const Key& key) noexcept : key_(key) {
    EVP_MAC* alg = hmac_algorithm();
    if (alg == nullptr)
        return;
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(alg);
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    if (ctx != nullptr && EVP_MAC_init(ctx, key_.data(), key_.size(), params) == 1)
        ctx_ = ctx;
    else
        EVP_MAC_CTX_free(ctx);
}

KeyedMac::~KeyedMac() {
    EVP_MAC_CTX_free(static_cast<EVP_MAC_CTX*>(ctx_));
}

Mac KeyedMac::mac(std::span<const std::uint8_t> data) const noexcept {
    auto* ctx = static_cast<EVP_MAC_CTX*>(ctx_);
    Mac out{};
    std::size_t len = 0;
    // Re-initialising with no key keeps the key and starts a new MAC.
    if (ctx == nullptr || EVP_MAC_init(ctx, nullptr, 0, nullptr) != 1 ||
        EVP_MAC_update(ctx, data.data(), data.size()) != 1 ||
        EVP_MAC_final(ctx, out.data(), &len, out.size()) != 1 || len != kMacSize)
        return hmac(key_, data);
    return out;
}

bool equal(const Mac& a, const Mac& b) noexcept {
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Key pair_key(std::string_view label, ProcName lo, const Key& key_lo, ProcName hi,
             const Key& key_hi) noexcept {
    std::array<std::uint8_t, kTranscriptMax> buf{};
    ByteWriter w(buf);
    const auto n = std::min(label.size(), std::size_t{32});
    w.bytes({reinterpret_cast<const std::uint8_t*>(label.data()), n});
    w.bytes(key_hi);
    w.name(lo);
    w.name(hi);
    const Mac m = hmac(key_lo, w.written());
    Key k{};
    std::copy(m.begin(), m.end(), k.begin());
    return k;
}

namespace {

template <typename MacFn>
Mac transcript_mac(const Binding& b, Step step, const Nonce& nonce_i, const Nonce* nonce_a,
                   MacFn&& mac) noexcept {
    std::array<std::uint8_t, kTranscriptMax> buf{};
    ByteWriter w(buf);
    const auto n = std::min(b.protocol.size(), std::size_t{32});
    w.u8(static_cast<std::uint8_t>(n));
    w.bytes({reinterpret_cast<const std::uint8_t*>(b.protocol.data()), n});
    w.u8(static_cast<std::uint8_t>(step));
    w.name(b.initiator);
    w.name(b.acceptor);
    w.u32(b.context);
    w.bytes(nonce_i);
    if (nonce_a != nullptr)
        w.bytes(*nonce_a);
    return mac(w.written());
}

}  // namespace

Mac step_mac(const Key& key, const Binding& b, Step step, const Nonce& nonce_i,
             const Nonce* nonce_a) noexcept {
    return transcript_mac(b, step, nonce_i, nonce_a,
                          [&](std::span<const std::uint8_t> d) { return hmac(key, d); });
}

Mac step_mac(const KeyedMac& key, const Binding& b, Step step, const Nonce& nonce_i,
             const Nonce* nonce_a) noexcept {
    return transcript_mac(b, step, nonce_i, nonce_a,
                          [&](std::span<const std::uint8_t> d) { return key.mac(d); });
}

std::string_view to_string(HsState s) noexcept {
    switch (s) {
        case HsState::Start:
            return "start";
        case HsState::AwaitReply:
            return "await_reply";
        case HsState::AwaitConfirm:
            return "await_confirm";
        case HsState::Authenticated:
            return "authenticated";
        case HsState::Refused:
            return "refused";
    }
    return "unknown";
}

bool transition_allowed(HsState from, HsState to) noexcept {
    if (to == HsState::Refused)
        return from != HsState::Authenticated && from != HsState::Refused;
    switch (from) {
        case HsState::Start:
            return to == HsState::AwaitReply || to == HsState::AwaitConfirm;
        case HsState::AwaitReply:
        case HsState::AwaitConfirm:
            return to == HsState::Authenticated;
        case HsState::Authenticated:
        case HsState::Refused:
            return false;
    }
    return false;
}

bool Handshake::move(HsState to) noexcept {
    if (!transition_allowed(state_, to)) {
        if (transition_allowed(state_, HsState::Refused))
            state_ = HsState::Refused;
        return false;
    }
    state_ = to;
    return true;
}

Mac Handshake::make(Step step) const noexcept {
    if (!enabled_)
        return Mac{};
    const Nonce* nonce_a = step == Step::Hello ? nullptr : &nonce_a_;
    if (keyed_ != nullptr)
        return step_mac(*keyed_, binding_, step, nonce_i_, nonce_a);
    return step_mac(key_, binding_, step, nonce_i_, nonce_a);
}

bool Handshake::check(Step step, const Mac& got) const noexcept {
    return !enabled_ || equal(make(step), got);
}

Result<Handshake::Offer> Handshake::hello(const Binding& b) noexcept {
    if (state_ != HsState::Start) {
        move(HsState::Refused);
        return fail(ErrorCode::InvalidState, "handshake already started");
    }
    binding_ = b;
    if (!random_fill(nonce_i_)) {
        move(HsState::Refused);
        return fail(ErrorCode::NoResources, "the kernel's random source failed");
    }
    move(HsState::AwaitReply);
    return Offer{nonce_i_, make(Step::Hello)};
}

Result<Handshake::Offer> Handshake::hello(const Binding& b, const Nonce& nonce_i) noexcept {
    if (state_ != HsState::Start) {
        move(HsState::Refused);
        return fail(ErrorCode::InvalidState, "handshake already started");
    }
    binding_ = b;
    nonce_i_ = nonce_i;
    move(HsState::AwaitReply);
    return Offer{nonce_i_, make(Step::Hello)};
}

Result<Handshake::Offer> Handshake::on_hello(const Binding& b, const Nonce& nonce_i,
                                             const Mac& mac) noexcept {
    if (state_ != HsState::Start) {
        move(HsState::Refused);
        return fail(ErrorCode::InvalidState, "handshake already started");
    }
    binding_ = b;
    nonce_i_ = nonce_i;
    if (!check(Step::Hello, mac)) {
        move(HsState::Refused);
        return fail(ErrorCode::BadChecksum, "HELLO not signed with the job's key");
    }
    if (!random_fill(nonce_a_)) {
        move(HsState::Refused);
        return fail(ErrorCode::NoResources, "the kernel's random source failed");
    }
    move(HsState::AwaitConfirm);
    return Offer{nonce_a_, make(Step::Reply)};
}

Result<Mac> Handshake::on_reply(const Nonce& nonce_a, const Mac& mac) noexcept {
    if (state_ != HsState::AwaitReply) {
        move(HsState::Refused);
        return fail(ErrorCode::InvalidState, "no HELLO of ours to reply to");
    }
    nonce_a_ = nonce_a;
    if (!check(Step::Reply, mac)) {
        move(HsState::Refused);
        return fail(ErrorCode::BadChecksum, "REPLY not signed with the job's key");
    }
    move(HsState::Authenticated);
    return make(Step::Confirm);
}

Result<void> Handshake::on_confirm(const Mac& mac) noexcept {
    if (state_ != HsState::AwaitConfirm) {
        move(HsState::Refused);
        return fail(ErrorCode::InvalidState, "CONFIRM before HELLO");
    }
    if (!check(Step::Confirm, mac)) {
        move(HsState::Refused);
        return fail(ErrorCode::BadChecksum, "CONFIRM not signed with the job's key");
    }
    move(HsState::Authenticated);
    return {};
}

}  // namespace plugin::common::auth
