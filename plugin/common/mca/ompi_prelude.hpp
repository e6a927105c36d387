// The OMPI layer of Open MPI (communicators, requests, the PML and BML
// interfaces) on top of the OPAL prelude, for the PML. See opal_prelude.hpp.
#pragma once

// (2) mpi.h would otherwise pull in the deprecated C++ bindings.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif

#include "opal_prelude.hpp"

extern "C" {
#include "ompi_config.h"
#include "mpi.h"

#if OMPI_MAJOR_VERSION >= 5
// (4) 5.0: ompi_comm_lookup_cid (communicator.h, inline) hands this function
// a void* where it takes void**: fine in C, ill-formed in C++. Declared by
// the OPAL prelude already, so only the call in that header is rewritten.
#define opal_hash_table_get_value_ptr(table, key, keylen, ptr) \
    opal_hash_table_get_value_ptr(table, key, keylen, (void**)(ptr))
#endif
#include "ompi/communicator/communicator.h"
#if OMPI_MAJOR_VERSION >= 5
#undef opal_hash_table_get_value_ptr
#endif
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "ompi/mca/pml/base/pml_base_recvreq.h"
#include "ompi/mca/pml/base/pml_base_request.h"
#include "ompi/mca/pml/base/pml_base_sendreq.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/message/message.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"
}

// What differs between the series in use (local CID, receive descriptors).
#define PLUGIN_OMPI_PRELUDE 1
#include "series.hpp"
