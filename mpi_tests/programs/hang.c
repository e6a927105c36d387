/*
 * hang: deliberately never finishes (every rank waits for a message nobody
 * sends). Used to check that the harness' hard timeout kills a whole job.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, value = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        printf("hang: waiting forever\n");
        fflush(stdout);
    }
    MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
