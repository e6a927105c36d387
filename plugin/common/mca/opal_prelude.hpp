// The OPAL layer of Open MPI (and the headers every glue file of ours needs
// from it), included from C++ in one place. The ORTE and OMPI preludes
// include this one first and add their layer; BTLs and the PMIx component,
// which are OPAL components, include only this one.
//
// Open MPI 4.1's devel headers are C99 without extern "C" guards. They
// compile under C++20 with the fix below (see DESIGN.md §2). Every glue
// (mca/) file includes a prelude first; core/ code never does, and no other
// file of the tree opens an extern "C" block around Open MPI headers.
#pragma once

// Standard headers first, outside the extern "C" block.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// Wrapped, or the linker looks for mangled names at dlopen time.
extern "C" {
#include "opal_config.h"
#include "opal/threads/thread_usage.h"

// (1) The stock macro casts its expected-value argument to void* while the
// function takes void**: fine in C, ill-formed in C++.
#undef OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR(x, y, z) \
    opal_thread_compare_exchange_strong_ptr((volatile intptr_t*)(x), (void**)(y), (void*)(z))
#undef OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR

#include "opal/class/opal_bitmap.h"
#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/dss/dss.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/event/event.h"
#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/mca.h"
#include "opal/mca/pmix/base/base.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/argv.h"
#include "opal/util/opal_environ.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
}
