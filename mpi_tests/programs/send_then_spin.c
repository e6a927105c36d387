/* A completed send must not need its sender's further MPI calls to arrive.
 *
 * MPI's progress rule: once a send completed and its receive is posted, the
 * receive completes whatever the sender does next. Open MPI's ob1 completes
 * an eager send only once the BTL has its data (for tcp: written to the
 * socket, or the descriptor's completion came back), so a sender that then
 * waits outside MPI (spinning on shared memory, as MPICH's mutex_bench does
 * with its MCS lock) still has its data on the way. pml dr once completed
 * eager sends as soon as it had copied them: a frame tcp had queued (its
 * socket full, or its connection not up yet) then waited for the sender's
 * next opal_progress, which never came.
 *
 *   send_then_spin [messages [bytes [delay_ms]]]   defaults: 400 60000 300
 *
 * Rank 1 stays out of MPI for delay_ms (so rank 0's socket fills: the default
 * messages are eager over tcp, 24 MB in all), then posts
 * receives for every message and checks them. Rank 0 sends the messages, waits
 * for its sends, raises a flag in a shared-memory window and spins on that
 * window, outside MPI, until rank 1 raises its own. Without the guarantee, rank
 * 1 waits for the queued tail forever (the harness's timeout). Prints
 * "SEND_THEN_SPIN OK" on rank 0; 2 ranks on one host. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = argc > 1 ? atoi(argv[1]) : 400;
    const int bytes = argc > 2 ? atoi(argv[2]) : 60000;
    const int delay_ms = argc > 3 ? atoi(argv[3]) : 300;
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "send_then_spin: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* flags[0]: rank 0 has sent; flags[1]: rank 1 has everything. */
    int *flags = NULL;
    MPI_Win win;
    MPI_Win_allocate_shared(rank == 0 ? 2 * sizeof(int) : 0, sizeof(int), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &flags, &win);
    MPI_Aint seg;
    int disp;
    MPI_Win_shared_query(win, 0, &seg, &disp, &flags);
    if (rank == 0) {
        __atomic_store_n(&flags[0], 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&flags[1], 0, __ATOMIC_SEQ_CST);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    char *buf = malloc((size_t)n * (size_t)bytes);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)n);
    int errors = 0;
    if (rank == 0) {
        for (int i = 0; i < n; i++) {
            memset(buf + (size_t)i * bytes, (i * 7 + 1) & 0xff, (size_t)bytes);
            MPI_Isend(buf + (size_t)i * bytes, bytes, MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        __atomic_store_n(&flags[0], 1, __ATOMIC_SEQ_CST);
        /* Outside MPI from here until rank 1 has every message. */
        while (__atomic_load_n(&flags[1], __ATOMIC_SEQ_CST) == 0)
            ;
    } else {
        sleep_ms(delay_ms);
        for (int i = 0; i < n; i++)
            MPI_Irecv(buf + (size_t)i * bytes, bytes, MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]);
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < n; i++)
            for (int b = 0; b < bytes; b++)
                if ((unsigned char)buf[(size_t)i * bytes + b] != ((i * 7 + 1) & 0xff)) {
                    errors++;
                    break;
                }
        __atomic_store_n(&flags[1], errors + 1, __ATOMIC_SEQ_CST);
    }
    const int seen = rank == 0 ? __atomic_load_n(&flags[1], __ATOMIC_SEQ_CST) - 1 : errors;
    MPI_Win_free(&win);
    if (rank == 0) {
        if (seen == 0)
            printf("SEND_THEN_SPIN OK messages=%d bytes=%d\n", n, bytes);
        else
            printf("SEND_THEN_SPIN FAILED corrupt_messages=%d\n", seen);
    }
    free(buf);
    free(reqs);
    MPI_Finalize();
    return seen == 0 ? 0 : 1;
}
