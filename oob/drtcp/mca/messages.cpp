// oob drtcp: messages between the RML and the wire. Building the frame of
// an RML send, completing it, handing arrivals to the RML or relaying them
// towards their destination, and telling ORTE about connections that come
// and go.
#include <cstdlib>
#include <cstring>

#include "oob.hpp"

namespace oob::drtcp::mca {

using plugin::common::logf;
using plugin::common::LogLevel;

OutMsg* make_out(orte_rml_send_t* msg) {
    auto* m = new OutMsg;
    m->msg = msg;
    if (msg->buffer != nullptr) {
        m->payload = reinterpret_cast<const std::uint8_t*>(msg->buffer->base_ptr);
        m->len = msg->buffer->bytes_used;
    } else if (msg->iov != nullptr) {
        for (int i = 0; i < msg->count; ++i) {
            const auto* b = static_cast<const std::uint8_t*>(msg->iov[i].iov_base);
            m->owned.insert(m->owned.end(), b, b + msg->iov[i].iov_len);
        }
        m->payload = m->owned.data();
        m->len = m->owned.size();
    } else {
        m->payload = reinterpret_cast<const std::uint8_t*>(msg->data);
        m->len = static_cast<std::size_t>(msg->count);
    }
    core::Header h;
    h.origin = name_of(msg->origin);
    h.dst = name_of(msg->dst);
    h.tag = msg->tag;
    h.seq_num = msg->seq_num;
    h.nbytes = static_cast<std::uint32_t>(m->len);
    (void)core::set_routed(h, msg->routed != nullptr ? msg->routed : "");
    (void)core::encode_header(h, m->header);
    return m;
}

namespace {

// A relayed message's bytes are ours (the RML does not free `data`).
void free_relay_data(orte_rml_send_t* msg) noexcept {
    if (msg->data != nullptr && msg->iov == nullptr && msg->buffer == nullptr) {
        std::free(msg->data);
        msg->data = nullptr;
    }
}

}  // namespace

void discard(OutMsg* m) noexcept {
    if (m->msg != nullptr) {
        free_relay_data(m->msg);
        OBJ_RELEASE(m->msg);
    }
    delete m;
}

void finish(OutMsg* m, bool ok) noexcept {
    orte_rml_send_t* msg = m->msg;
    delete m;
    if (msg == nullptr)
        return;
    free_relay_data(msg);
    if (ok)
        ++state().counters.sent;
    msg->status = ok ? ORTE_SUCCESS : ORTE_ERR_UNREACH;
    ORTE_RML_SEND_COMPLETE(msg);
}

void deliver(const core::Header& h, std::span<const std::uint8_t> payload) noexcept {
    State& s = state();
    void* copy = nullptr;
    if (!payload.empty()) {
        copy = std::malloc(payload.size());  // the RML owns (and frees) it
        if (copy == nullptr) {
            logf(s.log, LogLevel::Error, "no memory for a %zu-byte message", payload.size());
            return;
        }
        std::memcpy(copy, payload.data(), payload.size());
    }
    if (h.dst == name_of(*ORTE_PROC_MY_NAME)) {
        ++s.counters.received;
        const orte_process_name_t origin = orte_name(h.origin);
        ORTE_RML_POST_MESSAGE(&origin, h.tag, h.seq_num, copy, payload.size());
        return;
    }
    // Not for us: back to the base, which routes it on.
    ++s.counters.relayed;
    orte_rml_send_t* snd = OBJ_NEW(orte_rml_send_t);
    snd->dst = orte_name(h.dst);
    snd->origin = orte_name(h.origin);
    snd->tag = h.tag;
    snd->seq_num = h.seq_num;
    snd->data = static_cast<char*>(copy);
    snd->count = static_cast<int>(payload.size());
    snd->routed = strdup(h.routed_name().data());
    snd->cbfunc.iov = nullptr;
    snd->cbdata = nullptr;
    ORTE_OOB_SEND(snd);
}

namespace {

// The OOB base's key for a peer: the name's 8 bytes as they lie in memory.
std::uint64_t base_key(const orte_process_name_t& name) noexcept {
    std::uint64_t key = 0;
    std::memcpy(&key, &name, sizeof key);
    return key;
}

}  // namespace

void mark_connected(const ProcName& peer) noexcept {
    orte_process_name_t name = orte_name(peer);
    const std::uint64_t ui64 = base_key(name);
    orte_oob_base_peer_t* bpr = nullptr;
    if (opal_hash_table_get_value_uint64(&orte_oob_base.peers, ui64,
                                         reinterpret_cast<void**>(&bpr)) != OPAL_SUCCESS ||
        bpr == nullptr) {
        bpr = OBJ_NEW(orte_oob_base_peer_t);
        opal_hash_table_set_value_uint64(&orte_oob_base.peers, ui64, bpr);
    }
    opal_bitmap_set_bit(&bpr->addressable, mca_oob_drtcp_component.idx);
    bpr->component = &mca_oob_drtcp_component;
    orte_routed.update_route(nullptr, &name, &name);
}

void report_lost(const ProcName& peer) noexcept {
    orte_process_name_t name = orte_name(peer);
    const std::uint64_t ui64 = base_key(name);
    orte_oob_base_peer_t* bpr = nullptr;
    if (opal_hash_table_get_value_uint64(&orte_oob_base.peers, ui64,
                                         reinterpret_cast<void**>(&bpr)) == OPAL_SUCCESS &&
        bpr != nullptr) {
        opal_bitmap_clear_bit(&bpr->addressable, mca_oob_drtcp_component.idx);
        OBJ_RELEASE(bpr);
        opal_hash_table_set_value_uint64(&orte_oob_base.peers, ui64, nullptr);
    }
    if (orte_finalizing)
        return;
    logf(state().log, LogLevel::Info, "lost connection to %s", ORTE_NAME_PRINT(&name));
    // The errmgr decides: our lifeline (e.g. mpirun, for a daemon) ends this
    // process; a child daemon going away is expected once termination began.
    // (The ORTE macros bring their own semicolons: braces keep if/else whole.)
    if (orte_routed.route_lost(nullptr, &name) != ORTE_SUCCESS) {
        ORTE_ACTIVATE_PROC_STATE(&name, ORTE_PROC_STATE_LIFELINE_LOST);
    } else {
        ORTE_ACTIVATE_PROC_STATE(&name, ORTE_PROC_STATE_COMM_FAILED);
    }
}

void report_unreachable(Peer& p) noexcept {
    orte_process_name_t name = orte_name(p.name);
    logf(state().log, LogLevel::Warn, "cannot connect to %s after %u attempts",
         ORTE_NAME_PRINT(&name), state().config.retry.attempts);
    while (!p.waiting.empty()) {
        OutMsg* m = p.waiting.front();
        p.waiting.pop_front();
        finish(m, false);
    }
    if (!orte_finalizing) {
        ORTE_ACTIVATE_PROC_STATE(&name, ORTE_PROC_STATE_FAILED_TO_CONNECT);
    }
}

}  // namespace oob::drtcp::mca
