/* Stand-in for opal/mca/threads/pthreads/threads_pthreads_mutex.h, which
 * Open MPI 5.0 names in opal_config.h (MCA_threads_mutex_base_include_HEADER)
 * and reaches from opal/mca/threads/mutex.h but does not install. Open MPI
 * 4.1 never includes it. Debian's 5.0 threads component is pthreads: its
 * internal mutex and condition are the plain pthread objects (the layout of
 * opal_mutex_t and wait_sync_t depends on that), driven through these
 * inline calls. Non-debug semantics (OPAL_ENABLE_DEBUG is 0 there). */
#ifndef DR_COMPAT_THREADS_PTHREADS_MUTEX_H
#define DR_COMPAT_THREADS_PTHREADS_MUTEX_H

#include "opal_config.h"

#include <pthread.h>
#include <stdbool.h>

#include "opal/constants.h"

BEGIN_C_DECLS

typedef pthread_mutex_t opal_thread_internal_mutex_t;
typedef pthread_cond_t opal_thread_internal_cond_t;

#define OPAL_THREAD_INTERNAL_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define OPAL_THREAD_INTERNAL_COND_INITIALIZER PTHREAD_COND_INITIALIZER
#if defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP)
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#endif

static inline int opal_thread_internal_mutex_init(opal_thread_internal_mutex_t *m, bool recursive)
{
    pthread_mutexattr_t attr;
    int rc;
    if (!recursive) {
        return pthread_mutex_init(m, NULL) == 0 ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
    }
    if (pthread_mutexattr_init(&attr) != 0) {
        return OPAL_ERR_IN_ERRNO;
    }
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc == 0 ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline void opal_thread_internal_mutex_lock(opal_thread_internal_mutex_t *m)
{
    pthread_mutex_lock(m);
}

/* 0: locked; 1: held elsewhere. */
static inline int opal_thread_internal_mutex_trylock(opal_thread_internal_mutex_t *m)
{
    return pthread_mutex_trylock(m) == 0 ? 0 : 1;
}

static inline void opal_thread_internal_mutex_unlock(opal_thread_internal_mutex_t *m)
{
    pthread_mutex_unlock(m);
}

static inline void opal_thread_internal_mutex_destroy(opal_thread_internal_mutex_t *m)
{
    pthread_mutex_destroy(m);
}

static inline int opal_thread_internal_cond_init(opal_thread_internal_cond_t *c)
{
    return pthread_cond_init(c, NULL) == 0 ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline void opal_thread_internal_cond_wait(opal_thread_internal_cond_t *c,
                                                  opal_thread_internal_mutex_t *m)
{
    pthread_cond_wait(c, m);
}

static inline void opal_thread_internal_cond_broadcast(opal_thread_internal_cond_t *c)
{
    pthread_cond_broadcast(c);
}

static inline void opal_thread_internal_cond_signal(opal_thread_internal_cond_t *c)
{
    pthread_cond_signal(c);
}

static inline void opal_thread_internal_cond_destroy(opal_thread_internal_cond_t *c)
{
    pthread_cond_destroy(c);
}

END_C_DECLS

#endif
