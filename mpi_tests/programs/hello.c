/*
 * hello: the smallest job that needs the whole start-up exchange to work.
 *
 * Every rank prints "hello from rank R of N on HOST", then checks that a
 * barrier completes and that an allgather of the ranks returns 0..N-1 in
 * order. Rank 0 prints "hello ok N". Any mismatch aborts with exit code 2.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = -1, np = 0, len = 0;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Get_processor_name(host, &len);
    if (np < 1 || rank < 0 || rank >= np) {
        fprintf(stderr, "hello FAILED: rank %d of %d\n", rank, np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    printf("hello from rank %d of %d on %s\n", rank, np, host);
    fflush(stdout);

    MPI_Barrier(MPI_COMM_WORLD);
    int* ranks = malloc(sizeof(int) * (size_t)np);
    if (ranks == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Allgather(&rank, 1, MPI_INT, ranks, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < np; ++i) {
        if (ranks[i] != i) {
            fprintf(stderr, "hello FAILED: rank %d: allgather slot %d holds %d\n", rank, i,
                    ranks[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    free(ranks);
    if (rank == 0)
        printf("hello ok %d\n", np);
    MPI_Finalize();
    return 0;
}
