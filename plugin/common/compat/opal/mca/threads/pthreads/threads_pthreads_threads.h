/* Stand-in for opal/mca/threads/pthreads/threads_pthreads_threads.h (Open
 * MPI 5.0 names it, MCA_threads_base_include_HEADER, but does not install
 * it; 4.1 never includes it): what opal/mca/threads/threads.h expects of
 * the pthreads component before it defines opal_thread_t. */
#ifndef DR_COMPAT_THREADS_PTHREADS_THREADS_H
#define DR_COMPAT_THREADS_PTHREADS_THREADS_H

#include "opal_config.h"

#include <pthread.h>
#include <signal.h>

#define OPAL_THREAD_YIELD_WHEN_IDLE_DEFAULT false

BEGIN_C_DECLS

/* libopen-pal's yield (sched_yield or nanosleep, chosen by a parameter). */
OPAL_DECLSPEC extern void (*opal_threads_pthreads_yield_fn)(void);

static inline void opal_thread_yield(void)
{
    opal_threads_pthreads_yield_fn();
}

END_C_DECLS

#endif
