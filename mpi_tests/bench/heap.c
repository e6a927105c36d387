/* Heap per process as a job's state grows (issue 27's memory bar): after
 * MPI_Init, after an all-to-all of 8-byte messages (every rank sends one to
 * and receives one from every other, point to point), after 50
 * MPI_Comm_dup of MPI_COMM_WORLD (each used once by an MPI_Barrier, so that
 * the PML sees traffic on it), and then after 1.5 s in MPI with no traffic
 * (polling MPI_Iprobe: a PML's timers run; pml dr's peers go to rest after
 * its 1 s idle period). Heap = glibc's mallinfo2: bytes in use from
 * the arena plus mmapped blocks; shared-memory segments are not heap.
 *
 * Prints one line on rank 0:
 *   heap np=P init=<avg B> alltoall=<avg B> dup50=<avg B> quiet=<avg B>
 * each the mean over the ranks. A benchmark: it checks nothing but the
 * messages' bytes.
 */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double heap_now(void) {
    struct mallinfo2 mi = mallinfo2();
    return (double)(mi.uordblks + mi.hblkhd);
}

static double mean_over_ranks(double v, MPI_Comm comm) {
    double sum = 0;
    int size = 0;
    MPI_Comm_size(comm, &size);
    MPI_Reduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    return sum / size;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    const double init = heap_now();

    unsigned char* out = malloc((size_t)size * 8);
    unsigned char* in = malloc((size_t)size * 8);
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)size);
    for (int p = 0; p < size; ++p)
        memset(out + 8 * p, (rank * 31 + p) & 0xFF, 8);
    int n = 0;
    for (int p = 0; p < size; ++p)
        if (p != rank)
            MPI_Irecv(in + 8 * p, 8, MPI_BYTE, p, 7, MPI_COMM_WORLD, &reqs[n++]);
    for (int p = 0; p < size; ++p)
        if (p != rank)
            MPI_Isend(out + 8 * p, 8, MPI_BYTE, p, 7, MPI_COMM_WORLD, &reqs[n++]);
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    int bad = 0;
    for (int p = 0; p < size; ++p)
        if (p != rank)
            for (int i = 0; i < 8; ++i)
                bad += in[8 * p + i] != ((p * 31 + rank) & 0xFF);
    MPI_Barrier(MPI_COMM_WORLD);
    const double alltoall = heap_now();

    MPI_Comm dups[50];
    for (int i = 0; i < 50; ++i) {
        MPI_Comm_dup(MPI_COMM_WORLD, &dups[i]);
        MPI_Barrier(dups[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double dup50 = heap_now();

    const double quiet_until = MPI_Wtime() + 1.5;
    while (MPI_Wtime() < quiet_until) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    const double quiet = heap_now();

    const double m_init = mean_over_ranks(init, MPI_COMM_WORLD);
    const double m_a2a = mean_over_ranks(alltoall, MPI_COMM_WORLD);
    const double m_quiet = mean_over_ranks(quiet, MPI_COMM_WORLD);
    const double m_dup = mean_over_ranks(dup50, MPI_COMM_WORLD);
    int all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_bad != 0)
            printf("heap: %d bytes wrong\n", all_bad);
        printf("heap np=%d init=%.0f alltoall=%.0f quiet=%.0f dup50=%.0f\n", size, m_init, m_a2a,
               m_quiet, m_dup);
    }
    for (int i = 0; i < 50; ++i)
        MPI_Comm_free(&dups[i]);
    free(out);
    free(in);
    free(reqs);
    MPI_Finalize();
    return all_bad != 0;
}
