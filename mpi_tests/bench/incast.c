/* Many-to-one: every rank but 0 streams to rank 0 at once (run with np >= 2).
 *
 *   incast [-S max_bytes] [-f factor] [-t ms] [-w window]    (options: bench.h)
 *
 * One step: each sender posts `window` non-blocking sends to rank 0, which
 * posts a window of receives per sender and, once all arrived, releases every
 * sender with a zero-byte message. Prints what rank 0 took in:
 *   size=<bytes> bw_MBps=<total> msgs_per_s=<total> senders=<np-1> window=<w> */
#include "bench.h"

struct incast {
    int rank, senders, window, n;
    char *buf;
    MPI_Request *reqs;
};

static void window_step(void *arg) {
    struct incast *c = arg;
    if (c->rank == 0) {
        int k = 0;
        for (int s = 1; s <= c->senders; s++)
            for (int w = 0; w < c->window; w++, k++)
                MPI_Irecv(c->buf + (size_t)k * c->n, c->n, MPI_BYTE, s, 6, MPI_COMM_WORLD,
                          &c->reqs[k]);
        MPI_Waitall(k, c->reqs, MPI_STATUSES_IGNORE);
        for (int s = 1; s <= c->senders; s++)
            MPI_Isend(NULL, 0, MPI_BYTE, s, 7, MPI_COMM_WORLD, &c->reqs[s - 1]);
        MPI_Waitall(c->senders, c->reqs, MPI_STATUSES_IGNORE);
    } else {
        for (int w = 0; w < c->window; w++)
            MPI_Isend(c->buf + (size_t)w * c->n, c->n, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &c->reqs[w]);
        MPI_Waitall(c->window, c->reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    struct bench_opts o = bench_parse(argc, argv);
    struct incast c = {0};
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    c.senders = size - 1;
    c.reqs = malloc(sizeof(MPI_Request) * (size_t)o.window * (size_t)(size > 1 ? c.senders : 1));
    for (size_t n = o.min_bytes; n <= o.max_bytes && c.senders > 0; n = bench_next_size(&o, n)) {
        c.n = (int)n;
        /* the same window everywhere, sized for rank 0's receive buffers */
        c.window = bench_window(&o, n, (size_t)c.senders);
        c.buf = bench_alloc(n * (size_t)c.window * (size_t)(c.rank == 0 ? c.senders : 1));
        double t = bench_time(window_step, &c, o.budget_s, MPI_COMM_WORLD);
        double msgs = (double)c.senders * c.window;
        if (c.rank == 0)
            printf("size=%zu bw_MBps=%.2f msgs_per_s=%.0f senders=%d window=%d\n", n,
                   msgs * (double)n / t / 1e6, msgs / t, c.senders, c.window);
        fflush(stdout);
        free(c.buf);
    }
    free(c.reqs);
    MPI_Finalize();
    return 0;
}
