/* PMIx fence latency through Open MPI's internal PMIx interface (opal_pmix),
 * so the same binary measures whichever pmix component the job selected
 * (stock ext3x, or ours with --mca pmix dr). scripts/bench-pmix runs it.
 *
 *   pmix_fence [-n iterations] [-w warmup] [-s bytes]
 *
 * After MPI_Init every rank runs, -w times untimed and then -n times timed:
 *   1. opal_pmix.fence(NULL, 0)          a fence without data
 *   2. put + commit of an -s byte value (GLOBAL scope, one key, new contents
 *      each round), then opal_pmix.fence(NULL, 1): a fence that collects it
 * Only the fence calls are timed. An iteration's time is the slowest rank's,
 * and rank 0 prints the medians of those, in microseconds:
 *   fence_us nocollect=<median> collect=<median> iterations=<n> bytes=<s> np=<size>
 * With data collected, every process then checks one peer's value with a get.
 *
 * Build: mpicc -O2 pmix_fence.c -lopen-pal (the internal headers are under
 * <includedir>/openmpi, which Open MPI's mpicc already passes; libopen-pal
 * holds the opal_pmix module). Defaults: -n 200 -w 20 -s 64. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opal/mca/pmix/pmix.h"

#define KEY "dr.bench.pmix_fence"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void check(int rc, const char *what) {
    if (rc != OPAL_SUCCESS) {
        fprintf(stderr, "pmix_fence: %s failed: %d\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* put + commit of `bytes` bytes whose contents name the round. */
static void publish(char *buf, int bytes, int rank, int round) {
    memset(buf, 'a' + (rank + round) % 26, (size_t)bytes);
    opal_byte_object_t bo = {.size = bytes, .bytes = (uint8_t *)buf};
    int rc;
    OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_GLOBAL, KEY, &bo, OPAL_BYTE_OBJECT);
    check(rc, "put");
    check(opal_pmix.commit(), "commit");
}

/* The value of the right-hand neighbour, as of `round`. */
static void verify(int bytes, int rank, int size, int round) {
    int peer = (rank + 1) % size;
    opal_process_name_t name = {OPAL_PROC_MY_NAME.jobid, (opal_vpid_t)peer};
    opal_value_t *kv = NULL;
    check(opal_pmix.get(&name, KEY, NULL, &kv), "get");
    int ok = kv != NULL && kv->type == OPAL_BYTE_OBJECT && kv->data.bo.size == bytes;
    char want = (char)('a' + (peer + round) % 26);
    for (int i = 0; ok && i < bytes; i++) ok = kv->data.bo.bytes[i] == (uint8_t)want;
    if (!ok) {
        fprintf(stderr, "pmix_fence: rank %d: wrong value of %s from rank %d\n", rank, KEY, peer);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    OBJ_RELEASE(kv);
}

int main(int argc, char **argv) {
    int iters = 200, warmup = 20, bytes = 64, c;
    MPI_Init(&argc, &argv);
    while ((c = getopt(argc, argv, "n:w:s:")) != -1) {
        switch (c) {
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 's': bytes = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-n iterations] [-w warmup] [-s bytes]\n", argv[0]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (iters < 1) iters = 1;
    if (warmup < 0) warmup = 0;
    if (bytes < 1) bytes = 1;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (opal_pmix.fence == NULL || opal_pmix.put == NULL || opal_pmix.commit == NULL) {
        fprintf(stderr, "pmix_fence: the pmix module has no fence/put/commit\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    double *t_plain = calloc((size_t)iters, sizeof(double));
    double *t_collect = calloc((size_t)iters, sizeof(double));
    char *buf = malloc((size_t)bytes);
    if (t_plain == NULL || t_collect == NULL || buf == NULL) {
        fprintf(stderr, "pmix_fence: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = -warmup; i < iters; i++) {
        double t0 = MPI_Wtime();
        check(opal_pmix.fence(NULL, 0), "fence");
        double t1 = MPI_Wtime();
        publish(buf, bytes, rank, i + warmup);
        double t2 = MPI_Wtime();
        check(opal_pmix.fence(NULL, 1), "fence(collect)");
        double t3 = MPI_Wtime();
        if (i >= 0) {
            t_plain[i] = (t1 - t0) * 1e6;
            t_collect[i] = (t3 - t2) * 1e6;
        }
    }
    /* the data of the last round arrived with it */
    verify(bytes, rank, size, iters - 1 + warmup);

    /* per iteration: the slowest rank */
    MPI_Allreduce(MPI_IN_PLACE, t_plain, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, t_collect, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("fence_us nocollect=%.1f collect=%.1f iterations=%d bytes=%d np=%d\n",
               median(t_plain, iters), median(t_collect, iters), iters, bytes, size);
        fflush(stdout);
    }
    free(t_plain);
    free(t_collect);
    free(buf);
    MPI_Finalize();
    return 0;
}
