/*
 * ring: pass a token around all ranks for a number of laps and check its
 * value at every hop.
 *
 *   ring [laps [bytes]]
 *
 * The token is a buffer of `bytes` (>= 8) bytes: an 8-byte running sum
 * followed by a fill pattern derived from the hop, so larger tokens exercise
 * the PML's large-message path. Each rank adds (rank + 1) to the sum; after
 * lap l rank 0 must see (l + 1) * np * (np + 1) / 2. Output is deterministic:
 * only rank 0 prints "ring ok <np> <laps>". Any mismatch prints a diagnostic
 * on stderr and aborts with a non-zero exit code.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern_byte(long long hop, size_t i) {
    uint32_t x = (uint32_t)(i + 1) * 2654435761u ^ (uint32_t)hop * 40503u;
    return (unsigned char)(x >> 24);
}

static void fill(unsigned char *buf, size_t bytes, long long hop, long long sum) {
    memcpy(buf, &sum, sizeof sum);
    for (size_t i = sizeof sum; i < bytes; ++i) buf[i] = pattern_byte(hop, i);
}

static void check(const unsigned char *buf, size_t bytes, long long hop, long long want,
                  int rank, int lap) {
    long long got;
    memcpy(&got, buf, sizeof got);
    if (got != want) {
        fprintf(stderr, "ring FAILED: rank %d lap %d: token %lld, expected %lld\n", rank, lap,
                got, want);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = sizeof got; i < bytes; ++i) {
        if (buf[i] != pattern_byte(hop, i)) {
            fprintf(stderr,
                    "ring FAILED: rank %d lap %d: byte %zu is 0x%02x, expected 0x%02x\n", rank,
                    lap, i, buf[i], pattern_byte(hop, i));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    int laps = argc > 1 ? atoi(argv[1]) : 10;
    long bytes_arg = argc > 2 ? atol(argv[2]) : 8;
    if (laps < 1 || bytes_arg < 8) {
        if (rank == 0) fprintf(stderr, "usage: ring [laps>=1 [bytes>=8]]\n");
        MPI_Finalize();
        return 1;
    }
    size_t bytes = (size_t)bytes_arg;
    unsigned char *buf = malloc(bytes);
    if (buf == NULL) MPI_Abort(MPI_COMM_WORLD, 4);

    const long long per_lap = (long long)np * (np + 1) / 2;
    const int next = (rank + 1) % np, prev = (rank + np - 1) % np;
    const int tag = 17;

    for (int lap = 0; lap < laps; ++lap) {
        /* hop number of the message this rank receives / sends in this lap */
        long long hop_in = (long long)lap * np + (rank == 0 ? np - 1 : rank - 1);
        long long hop_out = (long long)lap * np + rank;
        if (rank == 0) {
            MPI_Request req;
            MPI_Irecv(buf, (int)bytes, MPI_BYTE, prev, tag, MPI_COMM_WORLD, &req);
            unsigned char *out = malloc(bytes);
            if (out == NULL) MPI_Abort(MPI_COMM_WORLD, 4);
            fill(out, bytes, hop_out, (long long)lap * per_lap + 1);
            MPI_Send(out, (int)bytes, MPI_BYTE, next, tag, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            free(out);
            check(buf, bytes, hop_in, (long long)(lap + 1) * per_lap, rank, lap);
        } else {
            MPI_Status st;
            MPI_Recv(buf, (int)bytes, MPI_BYTE, prev, tag, MPI_COMM_WORLD, &st);
            int count = -1;
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (count != (int)bytes || st.MPI_SOURCE != prev || st.MPI_TAG != tag) {
                fprintf(stderr, "ring FAILED: rank %d lap %d: status count %d src %d tag %d\n",
                        rank, lap, count, st.MPI_SOURCE, st.MPI_TAG);
                MPI_Abort(MPI_COMM_WORLD, 5);
            }
            long long want = (long long)lap * per_lap + (long long)rank * (rank + 1) / 2;
            check(buf, bytes, hop_in, want, rank, lap);
            fill(buf, bytes, hop_out, want + rank + 1);
            MPI_Send(buf, (int)bytes, MPI_BYTE, next, tag, MPI_COMM_WORLD);
        }
    }
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("ring ok %d %d\n", np, laps);
    MPI_Finalize();
    return 0;
}
