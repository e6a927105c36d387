/* Message rate of several sender/receiver pairs at once (run with an even np
 * >= 2; rank r < np/2 sends to rank r + np/2).
 *
 *   rate [-S max_bytes] [-f factor] [-t ms] [-w window]      (options: bench.h)
 *
 * One step: every sender posts `window` non-blocking sends to its receiver,
 * which answers the whole window with a zero-byte message. The rate counts the
 * messages of all pairs over the slowest rank's time. Prints
 *   size=<bytes> msgs_per_s=<all pairs> bw_MBps=<all pairs> pairs=<p> window=<w> */
#include "bench.h"

struct rate {
    int sender, peer, window, n;
    char *buf;
    MPI_Request *reqs;
};

static void window_step(void *arg) {
    struct rate *r = arg;
    if (r->peer < 0) return;  /* the odd rank out */
    for (int w = 0; w < r->window; w++) {
        char *p = r->buf + (size_t)w * r->n;
        if (r->sender)
            MPI_Isend(p, r->n, MPI_BYTE, r->peer, 4, MPI_COMM_WORLD, &r->reqs[w]);
        else
            MPI_Irecv(p, r->n, MPI_BYTE, r->peer, 4, MPI_COMM_WORLD, &r->reqs[w]);
    }
    MPI_Waitall(r->window, r->reqs, MPI_STATUSES_IGNORE);
    if (r->sender)
        MPI_Recv(NULL, 0, MPI_BYTE, r->peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(NULL, 0, MPI_BYTE, r->peer, 5, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    struct bench_opts o = bench_parse(argc, argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int pairs = size / 2;
    struct rate r = {rank < pairs, -1, 0, 0, NULL, malloc(sizeof(MPI_Request) * (size_t)o.window)};
    if (rank < 2 * pairs) r.peer = rank < pairs ? rank + pairs : rank - pairs;
    for (size_t n = o.min_bytes; n <= o.max_bytes; n = bench_next_size(&o, n)) {
        r.n = (int)n;
        r.window = bench_window(&o, n, 1);
        r.buf = bench_alloc(n * (size_t)r.window);
        double t = bench_time(window_step, &r, o.budget_s, MPI_COMM_WORLD);
        double msgs = (double)pairs * r.window;
        if (rank == 0)
            printf("size=%zu msgs_per_s=%.0f bw_MBps=%.2f pairs=%d window=%d\n", n, msgs / t,
                   msgs * (double)n / t / 1e6, pairs, r.window);
        fflush(stdout);
        free(r.buf);
    }
    free(r.reqs);
    MPI_Finalize();
    return 0;
}
