// RPUT: for a long message whose receive buffer is contiguous, the receiver
// answers the RNDV with a PUT (instead of a CTS) naming its buffer, and the
// sender writes the rest of the message straight into it with BTL puts,
// then sends a FRAG with kFlagPutDone and no payload. On tcp the data then
// goes from the socket to its place (one copy less than FRAGs, which the
// receiver copies out of the BTL's buffer).
//
// With checksums (pml_dr_csum; on by default over tcp) the put data is
// covered too: the sender computes the CRC32C of the bytes it puts (one read
// of its buffer while the BTL still writes) and sends it in the PUT-done;
// the receiver computes it over the bytes where they landed and answers with
// a CTS: offset == want_len, they are right (the send completes on it); or
// offset == where the puts started, they are not (counted as a checksum
// error), and the sender sends them again as FRAGs, each with its own CRC.
// No byte reaches the application before its CRC matched.
//
// Used only where it cannot lose data without anyone noticing:
//   - the BTL needs no memory registration (the PUT carries an address
//     only);
//   - the peer has exactly one live path at both ends. Puts complete
//     locally, so only their order on that one connection ahead of the
//     PUT-done frame says the data is there; a PUT-done re-driven over
//     another path could overtake it. With one path, losing it kills the
//     peer and the transfer fails loudly.
// A sender that cannot put (or whose puts fail) treats the PUT as a CTS and
// sends FRAGs, which the receiver takes as usual.
#include <algorithm>

#include "crc32c.hpp"
#include "fault.hpp"
#include "pml.hpp"
#include "reliability.hpp"

namespace pml::dr::mca {
namespace {

RputStats g_stats;

// Put data flipped on arrival (pml_dr_fault_corrupt), to test the check;
// made on first use, from the configuration.
plugin::common::FaultInjector& data_faults() noexcept {
    static plugin::common::FaultInjector f(0.0, state().config.fault_corrupt, 0.0,
                                           state().config.fault_seed ^ 0x5055'5444u);
    return f;
}

// Puts go in pieces of at most this (a few callbacks per message, and the
// BTL can interleave other traffic between them).
constexpr std::uint64_t kPutPiece = std::uint64_t{1} << 20;

bool put_capable(const mca_btl_base_module_t* btl) noexcept {
    return (btl->btl_flags & MCA_BTL_FLAGS_PUT) != 0 && btl->btl_put != nullptr &&
           btl->btl_register_mem == nullptr;
}

// What both ends require of puts to or from this side's buffer (the
// receiver asks with it, the sender answers and predicts with it).
bool puts_allowed(const mca_btl_base_module_t* btl, core::PeerId peer,
                  const opal_convertor_t* conv) noexcept {
    return put_capable(btl) && live_paths(peer) == 1 && !opal_convertor_need_buffers(conv);
}

// Everything is written: tell the receiver, on the same path. The send then
// completes once that frame is acknowledged (check_send_done).
// Over btl self the receiver's verdict (a CTS) comes back inside the send
// call, so the request waits for it before the frame goes, and a hold on
// frames_inflight keeps it from completing until the call has returned.
bool send_put_done(SendRequest* r) noexcept {
    const std::uint64_t scheduled = r->bytes_scheduled;
    r->bytes_scheduled = r->bytes_target;
    r->cts_received = true;
    r->put_verdict_wait = r->put_verify;
    ++r->frames_inflight;
    const int rc = send_put_done_frame(r);
    --r->frames_inflight;
    if (rc == OMPI_ERR_OUT_OF_RESOURCE) {
        r->bytes_scheduled = scheduled;
        r->cts_received = false;
        r->put_verdict_wait = false;
        return false;
    }
    if (rc != OMPI_SUCCESS) {
        r->failed = true;  // the path is gone; the peer is (or will be) dead
        r->put_verdict_wait = false;
    }
    check_send_done(r);
    return true;
}

// The last put is back: announce the data, or fall back to FRAGs from where
// the puts started (the receiver accepts those as for a CTS).
void puts_finished(SendRequest* r) noexcept {
    if (r->put_failed && !r->failed) {
        ++g_stats.fallbacks;
        r->rdma_btl = nullptr;
        handle_cts(r, core::CtsHdr{{}, r->wire_id, r->peer_recv_id, r->put_from, r->bytes_target});
        return;
    }
    if (r->failed) {
        check_send_done(r);
        return;
    }
    ++g_stats.sends;
    g_stats.bytes += r->bytes_target - r->put_from;
    if (!send_put_done(r))
        defer(r, [r] { return send_put_done(r); });
}

void put_done(mca_btl_base_module_t*, mca_btl_base_endpoint_t*, void*,
              mca_btl_base_registration_handle_t*, void*, void* cbdata, int status) noexcept {
    Guard g;
    auto* r = static_cast<SendRequest*>(cbdata);
    if (status != OMPI_SUCCESS)
        r->put_failed = true;
    if (--r->puts_outstanding == 0)
        puts_finished(r);
}

// Issues puts from r->put_next on; false when the BTL ran out of resources
// (retried from progress). handle_put() took one count on puts_outstanding
// that is dropped once every put is issued, so completions cannot finish
// the transfer early.
bool issue_puts(SendRequest* r) noexcept {
    void* base = buffer_start(&r->base.req_base.req_convertor);
    std::uint64_t piece = kPutPiece;
    if (r->rdma_btl->btl->btl_put_limit > 0)
        piece = std::min<std::uint64_t>(piece, r->rdma_btl->btl->btl_put_limit);
    while (!r->put_failed && !r->failed && r->put_next < r->bytes_target) {
        const std::uint64_t len = std::min(piece, r->bytes_target - r->put_next);
        ++r->puts_outstanding;
        const int rc = mca_bml_base_put(r->rdma_btl, static_cast<char*>(base) + r->put_next,
                                        r->put_remote + r->put_next, nullptr, nullptr,
                                        static_cast<size_t>(len), 0, MCA_BTL_NO_ORDER, put_done, r);
        if (rc < 0) {
            --r->puts_outstanding;
            if (rc == OMPI_ERR_OUT_OF_RESOURCE)
                return false;
            r->put_failed = true;
            break;
        }
        r->put_next += len;
    }
    // Every put is issued: checksum the data while the BTL still writes it.
    if (r->put_verify && !r->put_failed && !r->failed && r->put_next >= r->bytes_target)
        r->put_crc =
            plugin::common::crc32c(static_cast<const char*>(base) + r->put_from,
                                   static_cast<std::size_t>(r->bytes_target - r->put_from));
    if (--r->puts_outstanding == 0)  // the issuing hold
        puts_finished(r);
    return true;
}

}  // namespace

bool rput_expected(const SendRequest* r, const mca_bml_base_btl_t* bb) noexcept {
    return r->base.req_send_mode != MCA_PML_BASE_SEND_SYNCHRONOUS &&
           puts_allowed(bb->btl, r->peer, &r->base.req_base.req_convertor);
}

void handle_put(SendRequest* r, const core::PutHdr& put, std::uint64_t path) noexcept {
    if (r->cts_received || r->put_started || r->base.req_base.req_pml_complete)
        return;
    const auto* btl = btl_of(path);
    mca_bml_base_btl_t* bb = find_bml(r->peer, btl);
    if (bb == nullptr || !puts_allowed(btl, r->peer, &r->base.req_base.req_convertor)) {
        handle_cts(r, core::cts_of(put));
        return;
    }
    r->put_started = true;
    r->rdma_btl = bb;
    r->peer_recv_id = put.recv_req;
    r->bytes_target = std::min<std::uint64_t>(put.want_len, r->base.req_bytes_packed);
    r->put_from = std::min(put.offset, r->bytes_target);
    r->put_next = r->put_from;
    r->put_remote = put.remote_addr;
    r->put_verify = csum_wanted(btl);
    ++r->puts_outstanding;  // the issuing hold (issue_puts)
    if (!issue_puts(r))
        defer(r, [r] { return issue_puts(r); });
}

bool rput_request(RecvRequest* r, const core::MessageInfo& info, std::uint64_t offset) noexcept {
    const auto* btl = btl_of(info.path);
    opal_convertor_t* conv = &r->base.req_base.req_convertor;
    // Short remainders are cheaper as FRAGs (the put-done frame is extra),
    // unless the RNDV carried no data: its sender expected puts.
    if ((offset > 0 && r->bytes_expected - offset < btl->btl_max_send_size) ||
        !puts_allowed(btl, r->peer, conv))
        return false;
    void* base = buffer_start(conv);
    if (base == nullptr)
        return false;
    core::PutHdr h;
    h.common = make_common(r->peer, 0);
    h.send_req = info.send_req;
    h.recv_req = r->wire_id;
    h.offset = offset;
    h.want_len = r->bytes_expected;
    h.remote_addr = reinterpret_cast<std::uint64_t>(base);
    std::uint8_t buf[core::kPutHeaderSize];
    if (!core::encode(h, buf))
        return false;
    r->put_wait = true;
    r->put_from = offset;
    r->send_req = info.send_req;
    ++g_stats.requests;
    send_control(r->peer, buf);
    return true;
}

RputStats rput_stats() noexcept {
    return g_stats;
}

bool rput_verdict(SendRequest* r, const core::CtsHdr& cts) noexcept {
    if (!r->put_verdict_wait)
        return false;
    r->put_verdict_wait = false;
    if (cts.offset < r->bytes_target) {
        // The receiver found the data damaged: FRAGs from where it says.
        ++g_stats.resent;
        r->rdma_btl = nullptr;
        r->bytes_scheduled = std::max(cts.offset, r->put_from);
        resend_as_frags(r);
    }
    check_send_done(r);
    return true;
}

void rput_done(RecvRequest* r, std::optional<std::uint32_t> data_crc) noexcept {
    if (!r->put_wait || r->base.req_base.req_pml_complete)
        return;
    r->put_wait = false;
    if (data_crc.has_value()) {
        auto* base = static_cast<std::uint8_t*>(buffer_start(&r->base.req_base.req_convertor));
        const auto len = static_cast<std::size_t>(r->bytes_expected - r->put_from);
        std::uint8_t* data = base + r->put_from;
        if (data_faults().enabled()) {
            const plugin::common::FaultPlan plan = data_faults().next(len);
            if (plan.corrupt) {
                data[plan.byte] ^= plan.mask;
                ++g_stats.injected;
            }
        }
        if (plugin::common::crc32c(data, len) != *data_crc) {
            ++g_stats.csum_errors;
            plugin::common::logf(*state().log, plugin::common::LogLevel::Debug,
                                 "put data from peer %u failed its checksum: asked again", r->peer);
            r->bytes_received = r->put_from;
            send_cts(r, r->send_req, r->put_from);
            return;
        }
        ++g_stats.verified;
        send_cts(r, r->send_req, r->bytes_expected);
    }
    r->bytes_received = r->bytes_expected;
    recv_complete(r, OMPI_SUCCESS);
}

}  // namespace pml::dr::mca
