// The OPAL layer of Open MPI (and the headers every glue file of ours needs
// from it), included from C++ in one place. The ORTE and OMPI preludes
// include this one first and add their layer; BTLs and the PMIx component,
// which are OPAL components, include only this one.
//
// Open MPI's devel headers are C99 without extern "C" guards. They compile
// under C++20 with the fixes below (see DESIGN.md §2), which differ between
// the two series we build for: 4.1 and 5.0 (OPAL_MAJOR_VERSION, from the
// installed opal_config.h). Every glue (mca/) file includes a prelude first;
// core/ code never does, and no other file of the tree opens an extern "C"
// block around Open MPI headers. What differs in use between the series is
// in series.hpp.
#pragma once

// Standard headers first, outside the extern "C" block.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// Wrapped, or the linker looks for mangled names at dlopen time.
extern "C" {
#include "opal_config.h"

#if OPAL_MAJOR_VERSION >= 5
// (1) 5.0: two headers open an extern "C" block they never close; include
// them first and close what each leaves open, so that the blocks balance.
#include "opal/util/event.h"  // opens two, closes one
}
#include "opal/mca/base/mca_base_alias.h"  // opens one, closes none
}
#include "opal/mca/threads/thread_usage.h"
#else
#include "opal/threads/thread_usage.h"

// (1) 4.1: the stock macro casts its expected-value argument to void* while
// the function takes void**: fine in C, ill-formed in C++ (5.0's is right).
#undef OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR(x, y, z) \
    opal_thread_compare_exchange_strong_ptr((volatile intptr_t*)(x), (void**)(y), (void*)(z))
#undef OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR
#endif

#include "opal/class/opal_bitmap.h"
#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/datatype/opal_convertor.h"
#if OPAL_MAJOR_VERSION < 5
#include "opal/dss/dss.h"
#endif
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#if OPAL_MAJOR_VERSION < 5
#include "opal/mca/event/event.h"
#endif
#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/mca.h"
#include "opal/mca/pmix/base/base.h"
#if OPAL_MAJOR_VERSION >= 5
#include "opal/mca/pmix/pmix-internal.h"  // the modex macros, over OpenPMIx
#else
#include "opal/mca/pmix/pmix.h"
#endif
#include "opal/runtime/opal.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/argv.h"
#include "opal/util/opal_environ.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
}
