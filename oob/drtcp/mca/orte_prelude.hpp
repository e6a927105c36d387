// The ORTE headers the oob component needs, in one place (C headers without
// extern "C" guards; C++20 warns about some of them, see meson.build).
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {
#include "orte_config.h"

#include "opal/class/opal_bitmap.h"
#include "opal/class/opal_hash_table.h"
#include "opal/mca/base/base.h"
#include "opal/mca/event/event.h"
#include "opal/util/opal_environ.h"
#include "opal/util/output.h"
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
