/* MPI_THREAD_MULTIPLE, one way: T threads of rank 0 each send N small
 * messages to rank 1 (tag = thread index), where T threads each take theirs
 * with MPI_Mprobe + MPI_Mrecv, or MPI_Improbe in a loop, and check every
 * value. Nothing flows back, so the receiver's ACKs go out on its ACK timer
 * while many threads spin in the progress loop: the timer's callback and a
 * thread polling the same timer under the PML's lock once deadlocked here
 * (libevent's event_del waits for a callback running in another thread).
 *
 *   threads_probe [messages per thread]   (default 2000)
 *
 * Prints "threads_probe ok" on rank 1; exits non-zero on any mismatch. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define T 4
static int rank, messages;
static int errors[T];

static int value(int th, int i) { return th * 1000003 + i; }

static void *worker(void *arg) {
    const int th = (int)(long)arg;
    for (int i = 0; i < messages; i++) {
        if (rank == 0) {
            int v = value(th, i);
            MPI_Send(&v, 1, MPI_INT, 1, th, MPI_COMM_WORLD);
            continue;
        }
        MPI_Message msg;
        MPI_Status st;
        if (i % 2 == 0) {
            MPI_Mprobe(0, th, MPI_COMM_WORLD, &msg, &st);
        } else {
            int flag = 0;
            while (!flag) MPI_Improbe(0, th, MPI_COMM_WORLD, &flag, &msg, &st);
        }
        int count = -1, v = -1;
        MPI_Get_count(&st, MPI_INT, &count);
        MPI_Mrecv(&v, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
        if (count != 1 || v != value(th, i) || msg != MPI_MESSAGE_NULL) {
            if (errors[th]++ < 5)
                fprintf(stderr, "thread %d message %d: count %d value %d, want %d\n", th, i,
                        count, v, value(th, i));
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "threads_probe: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    messages = argc > 1 ? atoi(argv[1]) : 2000;
    pthread_t tid[T];
    if (rank < 2) {
        for (long th = 0; th < T; th++) pthread_create(&tid[th], NULL, worker, (void *)th);
        for (int th = 0; th < T; th++) pthread_join(tid[th], NULL);
    }
    int mine = 0, total = 0;
    for (int th = 0; th < T; th++) mine += errors[th];
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 1 && total == 0) printf("threads_probe ok: %d threads x %d messages\n", T, messages);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
