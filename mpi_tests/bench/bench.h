/* Scaffolding shared by the MPI benchmarks in this directory. Header-only, so
 * each benchmark stays one `mpicc x.c` (harness.ProgramCache) and one file.
 *
 * Options every program takes:
 *   -S max_bytes   largest message (default 4 MiB); sizes are 0, 1, f, f^2, ... <= max
 *   -m min_bytes   first size of the sweep (default 0)
 *   -f factor      step between sizes (default 2: every power of two)
 *   -t ms          time spent measuring each size (default 100), after warm-up
 *   -w window      non-blocking sends in flight per sender (default 16)
 *   -b             bidirectional (bw.c only)
 *   -n steps       time exactly this many steps per size, no warm-up (for
 *                  counting instructions: scripts/profile-pingpong)
 *   -p pad         every message carries pad bytes more than the size it is
 *                  reported at (pingpong.c only: another PML's header size)
 *
 * Timing: bench_time() runs a step (one round trip, one window, ...) in batches
 * of 1, 2, 4, ... until a batch of at least 8 takes a tenth of the budget
 * (that is the warm-up), then times as many steps as fill the budget. Rank 0
 * decides the counts so every rank runs the same number of steps. Every rank
 * of the communicator calls it with the same arguments. */
#ifndef DR_BENCH_H
#define DR_BENCH_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Receive buffers of one rank are bounded by this: the window shrinks for
 * large messages so a sweep to 4 MiB fits in memory with several ranks. */
#define BENCH_MAX_BUFFER ((size_t)64 << 20)

/* -n: steps per size when fixed (0: a time budget). */
static long bench_fixed_steps = 0;

struct bench_opts {
    size_t min_bytes;
    size_t max_bytes;
    size_t factor;
    double budget_s;
    int window;
    int bidirectional;
    size_t pad;
};

static inline struct bench_opts bench_parse(int argc, char **argv) {
    struct bench_opts o = {0, (size_t)4 << 20, 2, 0.1, 16, 0, 0};
    int c;
    while ((c = getopt(argc, argv, "m:S:f:t:w:bn:p:")) != -1) {
        switch (c) {
        case 'm': o.min_bytes = (size_t)atoll(optarg); break;
        case 'S': o.max_bytes = (size_t)atoll(optarg); break;
        case 'f': o.factor = (size_t)atoll(optarg); break;
        case 't': o.budget_s = atof(optarg) / 1e3; break;
        case 'w': o.window = atoi(optarg); break;
        case 'b': o.bidirectional = 1; break;
        case 'n': bench_fixed_steps = atol(optarg); break;
        case 'p': o.pad = (size_t)atoll(optarg); break;
        default:
            fprintf(stderr,
                    "usage: %s [-m min_bytes] [-S max_bytes] [-f factor] [-t ms] [-w window] [-b] "
                    "[-n steps] [-p pad]\n",
                    argv[0]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (o.factor < 2) o.factor = 2;
    if (o.window < 1) o.window = 1;
    return o;
}

/* The next size of the sweep after n: 0 -> 1 -> f -> f^2 ... */
static inline size_t bench_next_size(const struct bench_opts *o, size_t n) {
    return n == 0 ? 1 : n * o->factor;
}

/* `window` capped so that `copies` windows of n-byte buffers fit BENCH_MAX_BUFFER. */
static inline int bench_window(const struct bench_opts *o, size_t n, size_t copies) {
    size_t fit = n * copies > 0 ? BENCH_MAX_BUFFER / (n * copies) : (size_t)o->window;
    if (fit < 1) fit = 1;
    return (size_t)o->window < fit ? o->window : (int)fit;
}

/* A zero-filled, touched buffer of at least one byte (no page faults while timing). */
static inline char *bench_alloc(size_t bytes) {
    char *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, 0, bytes > 0 ? bytes : 1);
    return p;
}

typedef void (*bench_step_fn)(void *ctx);

/* Seconds per step (the slowest rank's time over the timed steps). */
static inline double bench_time(bench_step_fn step, void *ctx, double budget_s, MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    long count = 1, iters = bench_fixed_steps;
    while (iters == 0) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        for (long i = 0; i < count; i++) step(ctx);
        double dt = MPI_Wtime() - t0;
        /* at least 1+2+4+8 warm-up steps unless one batch already ate the budget */
        if (rank == 0 && ((dt >= budget_s / 10 && count >= 8) || dt >= budget_s ||
                          count >= (1L << 24))) {
            double per_step = dt / (double)count;
            iters = per_step > 0 ? (long)(budget_s / per_step) : count;
            if (iters < 1) iters = 1;
        }
        MPI_Bcast(&iters, 1, MPI_LONG, 0, comm);
        count *= 2;
    }
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) step(ctx);
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest / (double)iters;
}

#endif
