// The one place that includes Open MPI (and UCX) internals from C++.
//
// Open MPI 4.1's devel headers are C99. They compile under C++20 with the fixes
// below (see DESIGN.md §2). Every glue (mca/) file includes this header first;
// core/ code never does.
#pragma once

// Standard headers first, outside the extern "C" block.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// (2) mpi.h would otherwise pull in the deprecated C++ bindings.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif

// About 40 internal headers lack extern "C" guards: wrap them all, or the
// linker looks for mangled names at dlopen time.
extern "C" {
#include "ompi_config.h"
#include "mpi.h"
#include "opal/threads/thread_usage.h"

// (1) The stock macro casts its expected-value argument to void* while the
// function takes void**: fine in C, ill-formed in C++.
#undef OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR(x, y, z) \
    opal_thread_compare_exchange_strong_ptr((volatile intptr_t*)(x), (void**)(y), (void*)(z))
#undef OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR

#include "opal/class/opal_list.h"
#include "opal/class/opal_free_list.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/event/event.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "opal/runtime/opal_progress.h"
#include "opal/mca/btl/btl.h"
#include "opal/datatype/opal_convertor.h"

#include "ompi/constants.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "ompi/message/message.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "ompi/mca/pml/base/pml_base_request.h"
#include "ompi/mca/pml/base/pml_base_sendreq.h"
#include "ompi/mca/pml/base/pml_base_recvreq.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/runtime/mpiruntime.h"
}
