// The ORTE layer of Open MPI (the runtime: oob, rml, errmgr, names) on top of
// the OPAL prelude, for the oob component. See opal_prelude.hpp.
#pragma once
#include "opal_prelude.hpp"

extern "C" {
#include "orte_config.h"

#include "orte/constants.h"
#include "orte/mca/errmgr/errmgr.h"
#include "orte/mca/oob/base/base.h"
#include "orte/mca/oob/oob.h"
#include "orte/mca/rml/base/base.h"
#include "orte/mca/rml/rml.h"
#include "orte/mca/routed/routed.h"
#include "orte/mca/state/state.h"
#include "orte/runtime/orte_globals.h"
#include "orte/util/name_fns.h"
#include "orte/util/proc_info.h"
#include "orte/util/threads.h"
}
