/* Stand-in for ompi/peruse/peruse.h, which Open MPI 4.1 and 5.0 do not install but
 * ompi/mca/pml/base/pml_base_{send,recv}req.h reach through peruse-internal.h.
 * PERUSE is compiled out of Debian's build (OMPI_WANT_PERUSE == 0); only the
 * handle types named by peruse-internal.h's declarations are needed. */
#ifndef DR_COMPAT_PERUSE_H
#define DR_COMPAT_PERUSE_H
typedef void* peruse_event_h;
typedef void* peruse_comm_spec_t;
#endif
