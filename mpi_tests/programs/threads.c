/* MPI_THREAD_MULTIPLE: T threads per rank each exchange messages with the
 * same thread index on every other rank (tag = thread index), mixing eager
 * and rendezvous sizes, blocking and non-blocking calls, and ANY_SOURCE.
 * Every byte is verified. Prints "threads ok" on rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T 4
#define ITERS 40
static int rank, size;
static int errors[T];

static unsigned char pat(int src, int th, int it, size_t i) { return (unsigned char)(src * 17 + th * 5 + it * 3 + i); }

static void *worker(void *arg) {
    int th = (int)(long)arg;
    size_t max = 300000;
    unsigned char *s = malloc(max), *r = malloc(max * (size_t)size);
    for (int it = 0; it < ITERS; it++) {
        size_t n = (it % 4 == 3) ? max : (size_t)(1 + it * 97 % 6000);
        for (size_t i = 0; i < n; i++) s[i] = pat(rank, th, it, i);
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)size);
        int k = 0;
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            MPI_Irecv(r + (size_t)p * max, (int)n, MPI_BYTE, it % 2 ? MPI_ANY_SOURCE : p, th * 1000 + it * 10 + (it % 2 ? 0 : p % 10),
                      MPI_COMM_WORLD, &reqs[k++]);
        }
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            int tag = th * 1000 + it * 10 + (it % 2 ? 0 : rank % 10);
            if (it % 3 == 0)
                MPI_Send(s, (int)n, MPI_BYTE, p, tag, MPI_COMM_WORLD);
            else
                MPI_Isend(s, (int)n, MPI_BYTE, p, tag, MPI_COMM_WORLD, &reqs[k++]);
        }
        MPI_Status *st = malloc(sizeof(MPI_Status) * 2 * (size_t)size);
        MPI_Waitall(k, reqs, st);
        /* With ANY_SOURCE the buffer slot does not name the sender: use the status. */
        int nrecv = size - 1;
        for (int q = 0; q < nrecv; q++) {
            int src = st[q].MPI_SOURCE;
            int slot = q < rank ? q : q + 1;
            if (it % 2 == 0) src = slot;
            const unsigned char *b = r + (size_t)slot * max;
            for (size_t i = 0; i < n; i++) {
                if (b[i] != pat(src, th, it, i)) {
                    errors[th]++;
                    fprintf(stderr, "rank %d thread %d iter %d: byte %zu from %d wrong\n", rank, th, it, i, src);
                    break;
                }
            }
        }
        free(st);
        free(reqs);
    }
    free(s);
    free(r);
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        printf("threads skipped: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    pthread_t tid[T];
    for (long t = 0; t < T; t++) pthread_create(&tid[t], NULL, worker, (void *)t);
    for (int t = 0; t < T; t++) pthread_join(tid[t], NULL);
    int local = 0, total = 0;
    for (int t = 0; t < T; t++) local += errors[t];
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "threads FAILED: %d errors\n" : "threads ok%.0d\n", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
