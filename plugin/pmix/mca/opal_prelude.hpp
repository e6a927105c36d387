// The Open MPI (OPAL) headers the pmix component needs, in one place: C
// headers without extern "C" guards. No ORTE or OMPI header: the launcher's
// callbacks arrive as a table in server_init.
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {
#include "opal_config.h"

#include "opal/class/opal_list.h"
#include "opal/dss/dss.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/event/event.h"
#include "opal/mca/mca.h"
#include "opal/mca/pmix/base/base.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/argv.h"
#include "opal/util/opal_environ.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
}
