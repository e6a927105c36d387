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

#include "ompi/communicator/communicator.h"
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
