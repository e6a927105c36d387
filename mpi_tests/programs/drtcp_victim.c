/* A job that keeps moving verified data over btl drtcp while a test attacks
 * the ranks' drtcp listening ports from the outside (test_btl_drtcp.py: the
 * hostile-peer suite).
 *
 *   drtcp_victim INFO GO
 *
 * Every rank writes INFO.<rank>: "pid jobid vpid" (the job id from the
 * launch environment, which any process of the job can read). Then the ranks
 * exchange messages around a ring only (rank r talks to r-1 and r+1, never to
 * r+2: with 4 ranks, pairs 0-2 and 1-3 never connect, so a forged HELLO for
 * such a pair meets no established connection), 100 B to 1 MiB, every byte
 * checked, while rank 0 records the iteration in INFO.beat. Once GO exists
 * rank 0 announces a last iteration that travels around the ring; every rank
 * prints "drtcp victim ok RANK SIZE ITERATIONS BYTES" and finalizes.
 * Gives up after 200 s. No collective runs before MPI_Finalize. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void write_file(const char *path, const char *text) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static const int kSizes[] = {100, 4096, 65536, 200000, 1 << 20};
#define HEADER 2 /* int64: iteration, last iteration (-1: not yet) */

static unsigned char pattern(int src, int iter, size_t i) {
    return (unsigned char)(src * 131 + iter * 7 + i * 31 + (i >> 9));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: drtcp_victim INFO GO (2 ranks or more)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char path[4096], text[4096];
    const char *jobid = getenv("OMPI_MCA_ess_base_jobid");
    snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    snprintf(text, sizeof text, "%ld %s %d\n", (long)getpid(), jobid ? jobid : "0", rank);
    write_file(path, text);
    char beat[4096];
    snprintf(beat, sizeof beat, "%s.beat", argv[1]);

    const size_t max_bytes = sizeof(int64_t) * HEADER + (1 << 20);
    unsigned char *out = malloc(max_bytes), *in = malloc(max_bytes);
    if (out == NULL || in == NULL)
        MPI_Abort(MPI_COMM_WORLD, 3);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const time_t start = time(NULL);
    int64_t last = -1, iter = 0;
    unsigned long long verified = 0;
    for (;; ++iter) {
        const size_t n = (size_t)kSizes[iter % 5];
        int64_t head[HEADER] = {iter, last};
        memcpy(out, head, sizeof head);
        for (size_t i = 0; i < n; ++i)
            out[sizeof head + i] = pattern(rank, (int)iter, i);
        MPI_Status st;
        if (MPI_Sendrecv(out, (int)(sizeof head + n), MPI_BYTE, right, 7, in,
                         (int)max_bytes, MPI_BYTE, left, 7, MPI_COMM_WORLD, &st) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: sendrecv %lld failed\n", rank, (long long)iter);
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        memcpy(head, in, sizeof head);
        if ((size_t)got != sizeof head + n || head[0] != iter) {
            fprintf(stderr, "rank %d: iteration %lld: %d bytes of iteration %lld\n", rank,
                    (long long)iter, got, (long long)head[0]);
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
        for (size_t i = 0; i < n; ++i)
            if (in[sizeof head + i] != pattern(left, (int)iter, i)) {
                fprintf(stderr, "rank %d: iteration %lld: byte %zu wrong\n", rank,
                        (long long)iter, i);
                MPI_Abort(MPI_COMM_WORLD, 4);
            }
        verified += n;
        if (last < 0 && head[1] >= 0)
            last = head[1];  /* the announcement travels on around the ring */
        if (rank == 0) {
            snprintf(text, sizeof text, "%lld\n", (long long)iter + 1);
            write_file(beat, text);
            if (last < 0 && access(argv[2], F_OK) == 0)
                last = iter + size + 1;
            if (time(NULL) - start > 200) {
                fprintf(stderr, "never told to stop\n");
                MPI_Abort(MPI_COMM_WORLD, 5);
            }
        }
        if (last >= 0 && iter >= last)
            break;
        usleep(5000);
    }
    printf("drtcp victim ok %d %d %lld %llu\n", rank, size, (long long)iter + 1, verified);
    fflush(stdout);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
