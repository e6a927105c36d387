/* Streaming bandwidth between ranks 0 and 1, one- or both-directional.
 *
 *   bw [-b] [-S max_bytes] [-f factor] [-t ms] [-w window]   (options: bench.h)
 *
 * One step: the sender posts `window` non-blocking sends, the receiver as many
 * receives; the receiver then answers with a zero-byte message so the sender
 * never runs more than a window ahead. With -b both ranks send and receive a
 * window at once and the figure is the sum of both directions. Prints
 *   size=<bytes> bw_MBps=<payload MB/s> window=<sends in flight> */
#include "bench.h"

struct bw {
    int rank, bidirectional, window, n;
    char *sendbuf, *recvbuf;
    MPI_Request *reqs;
};

static void window_step(void *arg) {
    struct bw *b = arg;
    int peer = 1 - b->rank, posted = 0;
    int sends = b->bidirectional || b->rank == 0;
    int recvs = b->bidirectional || b->rank == 1;
    for (int w = 0; recvs && w < b->window; w++)
        MPI_Irecv(b->recvbuf + (size_t)w * b->n, b->n, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                  &b->reqs[posted++]);
    for (int w = 0; sends && w < b->window; w++)
        MPI_Isend(b->sendbuf + (size_t)w * b->n, b->n, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                  &b->reqs[posted++]);
    MPI_Waitall(posted, b->reqs, MPI_STATUSES_IGNORE);
    if (b->bidirectional) return;  /* each side waited for the other's window */
    if (b->rank == 1)
        MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    else
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    struct bench_opts o = bench_parse(argc, argv);
    struct bw b = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm sub; /* ranks 0 and 1 only */
    MPI_Comm_split(MPI_COMM_WORLD, b.rank < 2 ? 0 : MPI_UNDEFINED, b.rank, &sub);
    if (sub != MPI_COMM_NULL) {
        b.bidirectional = o.bidirectional;
        b.reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)o.window);
        for (size_t n = o.min_bytes; n <= o.max_bytes; n = bench_next_size(&o, n)) {
            b.n = (int)n;
            b.window = bench_window(&o, n, 1);
            b.sendbuf = bench_alloc(n * (size_t)b.window);
            b.recvbuf = bench_alloc(n * (size_t)b.window);
            double t = bench_time(window_step, &b, o.budget_s, sub);
            double bytes = (double)n * b.window * (b.bidirectional ? 2 : 1);
            if (b.rank == 0)
                printf("size=%zu bw_MBps=%.2f window=%d\n", n, bytes / t / 1e6, b.window);
            fflush(stdout);
            free(b.sendbuf);
            free(b.recvbuf);
        }
        free(b.reqs);
        MPI_Comm_free(&sub);
    }
    MPI_Finalize();
    return 0;
}
