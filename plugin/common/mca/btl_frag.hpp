// Helpers every BTL of ours needs around Open MPI descriptors and convertors.
#pragma once
#include "opal_prelude.hpp"

namespace plugin::common {

// A send descriptor handed out fresh: one segment of `bytes` at `data`,
// the PML's flags, no callback yet.
inline void reset_send_descriptor(mca_btl_base_descriptor_t& des, mca_btl_base_segment_t* segments,
                                  void* data, std::size_t bytes, uint32_t flags) noexcept {
    segments[0].seg_addr.pval = data;
    segments[0].seg_len = bytes;
    des.des_segments = segments;
    des.des_segment_count = 1;
    des.des_flags = flags;
    des.des_cbfunc = nullptr;
    des.des_cbdata = nullptr;
    des.des_context = nullptr;
    des.order = MCA_BTL_NO_ORDER;
}

// Packs up to `*size` bytes of the convertor's data at `dest`; `*size` gets
// what was packed. False on a convertor error.
inline bool pack_into(opal_convertor_t* convertor, void* dest, std::size_t* size) noexcept {
    iovec iov{dest, *size};
    uint32_t count = 1;
    size_t max_data = *size;
    if (opal_convertor_pack(convertor, &iov, &count, &max_data) < 0)
        return false;
    *size = max_data;
    return true;
}

}  // namespace plugin::common
