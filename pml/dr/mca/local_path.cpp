#include "local_path.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "btl_medium.hpp"
#include "pml.hpp"
#include "reliability.hpp"
#include "trust.hpp"
#include "wire_local.hpp"

namespace pml::dr::mca {
namespace {

struct LocalPaths {
    // The BTL modules whose LOCAL_MATCH frames are taken: those that carry
    // the paths of a peer reached only through memory (self, vader).
    std::array<const mca_btl_base_module_t*, 4> btls{};
    std::size_t nbtls = 0;
    const mca_btl_base_module_t* last_trusted = nullptr;  // btl_trusted()'s latest yes
    std::uint64_t sent = 0;
    const mca_base_component_t* component = nullptr;  // the modex key (local_publish)
};
LocalPaths g_local;

// Asked for every LOCAL_MATCH that arrives: the BTL of the previous one
// answers in one comparison.
bool btl_trusted(const mca_btl_base_module_t* btl) noexcept {
    if (btl == g_local.last_trusted && btl != nullptr)
        return true;
    const auto end = g_local.btls.begin() + static_cast<std::ptrdiff_t>(g_local.nbtls);
    if (std::find(g_local.btls.begin(), end, btl) == end)
        return false;
    g_local.last_trusted = btl;
    return true;
}

void trust_btl(const mca_btl_base_module_t* btl) noexcept {
    if (!btl_trusted(btl) && g_local.nbtls < g_local.btls.size())
        g_local.btls[g_local.nbtls++] = btl;
}

// What the peer published (local_publish): whether it would send LOCAL_MATCH
// to us. Missing: no.
bool peer_sends_local(ompi_proc_t* proc) noexcept {
    if (g_local.component == nullptr)
        return false;
    std::uint8_t* data = nullptr;
    size_t size = 0;
    int rc = OPAL_SUCCESS;
    OPAL_MODEX_RECV(rc, g_local.component, &proc->super.proc_name, reinterpret_cast<void**>(&data),
                    &size);
    const bool sends = rc == OPAL_SUCCESS && data != nullptr && size == 1 && data[0] == 1;
    std::free(data);  // the modex allocated it
    return sends;
}

// What carries `btl`'s frames: what the BTL reports of itself (btl drucx:
// shared memory or tcp), else what its name says.
core::PathMedium medium_of(const mca_btl_base_module_t* btl) noexcept {
    using plugin::common::BtlMedium;
    switch (plugin::common::reported_medium(btl)) {
        case BtlMedium::Memory:
            return core::PathMedium::Memory;
        case BtlMedium::Network:
            return core::PathMedium::Network;
        case BtlMedium::Unknown:
            break;
    }
    return core::medium_of_btl(btl_name(btl));
}

}  // namespace

void local_publish(const core::Config& config, const mca_base_component_t* component) noexcept {
    g_local.component = component;
    const std::array media{core::PathMedium::Memory};
    std::uint8_t sends =
        core::local_trust(config, media) == core::LocalTrust::AcceptAndSend ? 1 : 0;
    int rc = OPAL_SUCCESS;
    OPAL_MODEX_SEND(rc, plugin::common::kModexLocal, component, &sends, sizeof sends);
    if (rc != OPAL_SUCCESS)
        g_local.component = nullptr;  // no peer will see it: send LOCAL_MATCH to none
}

void local_add_peer(core::PeerId peer, ompi_proc_t* proc) noexcept {
    mca_bml_base_endpoint_t* ep = mca_bml_base_get_endpoint(proc);
    if (ep == nullptr)
        return;
    const std::vector<const mca_btl_base_module_t*> btls = bml_send_btls(ep);
    std::vector<core::PathMedium> media;
    for (const mca_btl_base_module_t* btl : btls)
        media.push_back(medium_of(btl));
    core::LocalTrust trust = core::local_trust(state().config, media);
    const bool in_process = std::all_of(media.begin(), media.end(), [](core::PathMedium m) {
        return m == core::PathMedium::Process;
    });
    if (trust == core::LocalTrust::AcceptAndSend && !in_process && !peer_sends_local(proc))
        trust = core::LocalTrust::Accept;
    if (trust != core::LocalTrust::None) {
        for (const mca_btl_base_module_t* btl : btls)
            trust_btl(btl);
        // A table full of other memory BTLs (never seen: Open MPI loads self
        // and one shared-memory BTL) leaves the peer on the full protocol.
        if (!std::all_of(btls.begin(), btls.end(), btl_trusted))
            trust = core::LocalTrust::None;
    }
    engine().set_trust(peer, trust);
}

namespace {

// Contiguous messages up to this size go with their header in one buffer on
// the stack, through sendi without a convertor: the BTL copies header and
// payload in one go. Building, preparing and tearing down a convertor costs
// more than copying this much twice.
constexpr std::size_t kStagedMax = 1024;

// The LOCAL_MATCH header into `out` (the message's seq taken).
void encode_header(std::uint8_t* out, ompi_communicator_t* comm, int dst, int tag,
                   core::CommMatcher& matcher) noexcept {
    core::LocalMatchHdr h;
    h.cid = plugin::common::local_cid(comm);
    h.src_rank = comm->c_my_rank;
    h.tag = tag;
    h.msg_seq = matcher.next_send_seq(dst);
    core::encode_local_match(
        h, std::span<std::uint8_t, core::kLocalMatchHeaderSize>(out, core::kLocalMatchHeaderSize));
}

// Whether a LOCAL_MATCH of `size` payload bytes fits the BTL's eager frame
// and the peer's eager window (charged when it does).
bool fits_and_charged(const mca_btl_base_module_t* btl, core::PeerId peer,
                      std::size_t size) noexcept {
    return core::kLocalMatchHeaderSize + size <= btl->btl_eager_limit &&
           engine().try_charge_eager(peer, size);
}

// After the BTL's answer: counted, or the seq and charge given back.
int sent_or_undone(int rc, int dst, core::PeerId peer, std::size_t size,
                   core::CommMatcher& matcher) noexcept {
    if (rc == OMPI_SUCCESS) {
        ++g_local.sent;
        return rc;
    }
    matcher.undo_send_seq(dst);
    engine().uncharge_eager(peer, size);
    return rc;
}

}  // namespace

int local_send(const void* buf, std::size_t count, ompi_datatype_t* dt, int dst, int tag,
               ompi_communicator_t* comm, ompi_proc_t* proc, core::PeerId peer,
               core::CommMatcher& matcher, mca_bml_base_btl_t* bb) noexcept {
    mca_btl_base_module_t* btl = bb->btl;
    if (btl->btl_sendi == nullptr)
        return OMPI_ERR_NOT_AVAILABLE;
    const std::size_t type_size = dt->super.size;
    if (const std::size_t size = type_size * count;
        size <= kStagedMax && proc->super.proc_arch == opal_local_arch &&
        (size == 0 || ompi_datatype_is_contiguous_memory_layout(dt, static_cast<int32_t>(count)))) {
        if (!fits_and_charged(btl, peer, size))
            return OMPI_ERR_NOT_AVAILABLE;
        alignas(8) std::uint8_t frame[core::kLocalMatchHeaderSize + kStagedMax];
        encode_header(frame, comm, dst, tag, matcher);
        if (size > 0)
            std::memcpy(frame + core::kLocalMatchHeaderSize,
                        static_cast<const char*>(buf) + dt->super.true_lb, size);
        const int rc = btl->btl_sendi(btl, bb->btl_endpoint, nullptr, frame,
                                      core::kLocalMatchHeaderSize + size, 0, MCA_BTL_NO_ORDER,
                                      kFrameDesFlags, kLocalTag, nullptr);
        return sent_or_undone(rc, dst, peer, size, matcher);
    }
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    std::size_t size = 0;
    if (count > 0) {
        opal_convertor_copy_and_prepare_for_send(proc->super.proc_convertor, &dt->super, count, buf,
                                                 0, &conv);
        opal_convertor_get_packed_size(&conv, &size);
    }
    int rc = OMPI_ERR_NOT_AVAILABLE;
    if (fits_and_charged(btl, peer, size)) {
        alignas(8) std::uint8_t hdr[core::kLocalMatchHeaderSize];
        encode_header(hdr, comm, dst, tag, matcher);
        rc = sent_or_undone(btl->btl_sendi(btl, bb->btl_endpoint, &conv, hdr, sizeof hdr, size,
                                           MCA_BTL_NO_ORDER, kFrameDesFlags, kLocalTag, nullptr),
                            dst, peer, size, matcher);
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}

void local_recv(mca_btl_base_module_t* btl, plugin::common::RecvSegments seg) noexcept {
    using plugin::common::bytes_of;
    Guard g;
    core::Engine& eng = engine();
    const bool trusted = btl_trusted(btl);
    if (seg.size() == 1 || seg.size() == 2) {
        eng.on_local_frame(bytes_of(seg[0]),
                           seg.size() == 2 ? bytes_of(seg[1]) : std::span<const std::uint8_t>{},
                           engine_sink(), path_of(btl), trusted);
        return;
    }
    // Not seen from self or vader.
    eng.on_local_frame(plugin::common::gathered(seg), {}, engine_sink(), path_of(btl), trusted);
}

std::uint64_t local_frames_sent() noexcept {
    return g_local.sent;
}

}  // namespace pml::dr::mca
