/* Ping-pong latency between ranks 0 and 1 (other ranks idle).
 *
 *   pingpong [-S max_bytes] [-f factor] [-t ms] [-p pad]   (options: bench.h)
 *
 * For each size it prints one line
 *   size=<bytes> lat_us=<one-way latency> bw_MBps=<size / latency>
 * Latency is half the round-trip time of a blocking send/receive pair; the
 * bandwidth is NetPIPE's ping-pong figure, not a streaming one (see bw.c).
 * With -p every message is pad bytes longer than the size it is reported at:
 * ob1 carrying another PML's extra header bytes as payload shows what that
 * header's size alone costs (scripts/bench: the +dr-header configurations). */
#include "bench.h"

struct pingpong {
    int rank;
    char *buf;
    int n;
};

static void round_trip(void *arg) {
    struct pingpong *p = arg;
    if (p->rank == 0) {
        MPI_Send(p->buf, p->n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(p->buf, p->n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (p->rank == 1) {
        MPI_Recv(p->buf, p->n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(p->buf, p->n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    struct bench_opts o = bench_parse(argc, argv);
    struct pingpong p = {0, bench_alloc(o.max_bytes + o.pad), 0};
    MPI_Comm_rank(MPI_COMM_WORLD, &p.rank);
    for (size_t n = o.min_bytes; n <= o.max_bytes; n = bench_next_size(&o, n)) {
        p.n = (int)(n + o.pad);
        double lat = bench_time(round_trip, &p, o.budget_s, MPI_COMM_WORLD) / 2;
        if (p.rank == 0) printf("size=%zu lat_us=%.3f bw_MBps=%.2f\n", n, lat * 1e6, n / lat / 1e6);
        fflush(stdout);
    }
    free(p.buf);
    MPI_Finalize();
    return 0;
}
