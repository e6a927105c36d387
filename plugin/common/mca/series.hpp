// What the glue uses that differs between the Open MPI series we build for
// (4.1 and 5.0), in one place: modex scope and key names, the receive
// callback a BTL calls and a PML registers, whether a topology file was
// given, and a communicator's local CID.
// Per-series code elsewhere is only where a component or module struct
// itself differs (a field one series has and the other lacks).
#pragma once
#include "opal_prelude.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace plugin::common {

// ------------------------------------------------------------------ modex
// 4.1: opal_pmix's scopes, keys and types; 5.0: OpenPMIx's own (the
// OPAL_MODEX_* macros call PMIx directly and return a pmix_status_t, whose
// success is 0, as OPAL_SUCCESS is).
#if OPAL_MAJOR_VERSION >= 5
inline constexpr auto kModexLocal = PMIX_LOCAL;
inline constexpr auto kModexGlobal = PMIX_GLOBAL;
inline constexpr const char* kModexJobSize = PMIX_JOB_SIZE;
inline constexpr auto kModexUint32 = PMIX_UINT32;
#else
inline constexpr auto kModexLocal = OPAL_PMIX_LOCAL;
inline constexpr auto kModexGlobal = OPAL_PMIX_GLOBAL;
inline constexpr const char* kModexJobSize = OPAL_PMIX_JOB_SIZE;
inline constexpr auto kModexUint32 = OPAL_UINT32;
#endif

// ------------------------------------------------------- receive callbacks
// A frame as a BTL hands it to the callback registered for its tag: 4.1
// passes (module, tag, descriptor, cbdata), 5.0 (module, receive
// descriptor). The glue writes one handler over the segments and registers
// recv_callback<handler>.
using RecvSegments = std::span<const mca_btl_base_segment_t>;

// The bytes of one segment.
inline std::span<const std::uint8_t> bytes_of(const mca_btl_base_segment_t& seg) noexcept {
    return {static_cast<const std::uint8_t*>(seg.seg_addr.pval), seg.seg_len};
}
// The segments' bytes in one buffer (for the rare BTL that hands over a
// frame in pieces).
inline std::vector<std::uint8_t> gathered(RecvSegments segments) {
    std::vector<std::uint8_t> all;
    for (const mca_btl_base_segment_t& s : segments) {
        const auto b = bytes_of(s);
        all.insert(all.end(), b.begin(), b.end());
    }
    return all;
}
using RecvHandler = void (*)(mca_btl_base_module_t* btl, RecvSegments segments) noexcept;

#if OPAL_MAJOR_VERSION >= 5
template <RecvHandler Handler>
void recv_callback(mca_btl_base_module_t* btl,
                   const mca_btl_base_receive_descriptor_t* des) noexcept {
    Handler(btl, {des->des_segments, des->des_segment_count});
}
#else
template <RecvHandler Handler>
void recv_callback(mca_btl_base_module_t* btl, mca_btl_base_tag_t, mca_btl_base_descriptor_t* des,
                   void*) noexcept {
    Handler(btl, {des->des_segments, des->des_segment_count});
}
#endif

// Hands a received frame to the callback registered for `tag` (the PML's).
// `endpoint` may be null (5.0 allows it; 4.1 does not pass one). False: no
// callback for that tag, nothing delivered.
inline bool deliver_received(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* endpoint,
                             mca_btl_base_tag_t tag, mca_btl_base_segment_t* segments,
                             std::size_t count) noexcept {
    const mca_btl_active_message_callback_t& cb = mca_btl_base_active_message_trigger[tag];
    if (cb.cbfunc == nullptr)
        return false;
#if OPAL_MAJOR_VERSION >= 5
    const mca_btl_base_receive_descriptor_t des{endpoint, segments, count, tag, cb.cbdata};
    cb.cbfunc(btl, &des);
#else
    (void)endpoint;
    // What a receive callback may look at; the list-item header stays unset.
    mca_btl_base_descriptor_t des;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    des.des_segments = segments;
    des.des_segment_count = count;
    des.des_cbfunc = nullptr;
    des.des_cbdata = nullptr;
    des.des_context = nullptr;
    des.des_flags = 0;
    des.order = MCA_BTL_NO_ORDER;
    cb.cbfunc(btl, tag, &des, cb.cbdata);
#endif
    return true;
}

// ----------------------------------------------------------------- topology
// Whether Open MPI is told to load its topology from a file
// (hwloc_base_topo_file, 4.1 only: 5.0 has no such parameter and takes the
// launcher's topology through PMIx or discovers one).
inline bool topology_file_given() noexcept {
#if OPAL_MAJOR_VERSION >= 5
    return false;
#else
    return opal_hwloc_base_topo_file != nullptr;
#endif
}

// ------------------------------------------------------------ communicators
#ifdef PLUGIN_OMPI_PRELUDE
// The communicator's id in the PML's frames. 4.1: c_contextid, agreed by
// all members. 5.0: c_contextid is the extended CID (a struct); the local
// index is agreed by all members as well, because pml dr does not set
// MCA_PML_BASE_FLAG_SUPPORTS_EXT_CID (so MPI_Comm_create_from_group, which
// needs that flag, is not supported).
inline std::uint32_t local_cid(const ompi_communicator_t* comm) noexcept {
#if OMPI_MAJOR_VERSION >= 5
    return ompi_comm_get_local_cid(comm);
#else
    return comm->c_contextid;
#endif
}
#endif

}  // namespace plugin::common
