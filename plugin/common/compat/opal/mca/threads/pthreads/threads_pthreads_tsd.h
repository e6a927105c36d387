/* Stand-in for opal/mca/threads/pthreads/threads_pthreads_tsd.h (Open MPI
 * 5.0 names it, MCA_threads_tsd_base_include_HEADER, but does not install
 * it; 4.1 never includes it): thread-specific data as pthread keys. */
#ifndef DR_COMPAT_THREADS_PTHREADS_TSD_H
#define DR_COMPAT_THREADS_PTHREADS_TSD_H

#include "opal_config.h"

#include <pthread.h>

#include "opal/constants.h"

BEGIN_C_DECLS

typedef pthread_key_t opal_tsd_key_t;

static inline int opal_tsd_key_delete(opal_tsd_key_t key)
{
    return pthread_key_delete(key) == 0 ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline int opal_tsd_set(opal_tsd_key_t key, void *value)
{
    return pthread_setspecific(key, value) == 0 ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline int opal_tsd_get(opal_tsd_key_t key, void **valuep)
{
    *valuep = pthread_getspecific(key);
    return OPAL_SUCCESS;
}

END_C_DECLS

#endif
