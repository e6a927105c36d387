/* Ping-pong latency and streaming bandwidth between ranks 0 and 1.
 *
 *   pingpong [max_bytes] [window]
 *
 * For each power-of-two size from 0 to max_bytes it prints one line
 *   size=<bytes> lat_us=<one-way latency> bw_MBps=<unidirectional bandwidth>
 * Latency: half the round-trip time of a blocking ping-pong. Bandwidth:
 * `window` non-blocking sends in flight, acknowledged by a zero-byte reply.
 * Iteration counts shrink with size so a full sweep stays short. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_for(size_t n) {
    if (n <= 4096) return 4000;
    if (n <= 65536) return 1000;
    if (n <= (1 << 20)) return 200;
    return 50;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t max = argc > 1 ? (size_t)atol(argv[1]) : (4u << 20);
    int window = argc > 2 ? atoi(argv[2]) : 16;
    char *buf = malloc(max > 0 ? max * (size_t)window : 1);
    memset(buf, 1, max > 0 ? max * (size_t)window : 1);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)window);
    for (size_t n = 0; n <= max; n = n ? n * 2 : 1) {
        int it = iters_for(n), warm = it / 10 + 1;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -warm; i < it; i++) {
            if (i == 0) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        double lat = (MPI_Wtime() - t0) / it / 2 * 1e6;
        int bit = it / 4 + 1;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -1; i < bit; i++) {
            if (i == 0) t0 = MPI_Wtime();
            if (rank == 0) {
                for (int w = 0; w < window; w++)
                    MPI_Isend(buf + (size_t)w * n, (int)n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &reqs[w]);
                MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int w = 0; w < window; w++)
                    MPI_Irecv(buf + (size_t)w * n, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &reqs[w]);
                MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
            }
        }
        double bw = (double)n * window * bit / (MPI_Wtime() - t0) / 1e6;
        if (rank == 0) printf("size=%zu lat_us=%.3f bw_MBps=%.1f\n", n, lat, bw);
        fflush(stdout);
        if (n == 0 && max == 0) break;
    }
    free(reqs);
    free(buf);
    MPI_Finalize();
    return 0;
}
