/*
 * abort: one rank leaves the job abnormally while the others are blocked in
 * a receive that nothing will ever match.
 *
 *   abort [kill]
 *
 * Rank 1 (rank 0 when alone) goes after a barrier, so every rank is past
 * MPI_Init. By default it calls MPI_Abort(MPI_COMM_WORLD, 3): mpirun must
 * kill the blocked ranks and exit with code 3, quickly. With "kill" it dies
 * of SIGKILL instead, without a word to the runtime: mpirun must notice the
 * death and end the job with a non-zero code. A hang, or a receive that
 * completes, is a failure of the runtime. Prints
 * "abort: rank R calling MPI_Abort(3)" or "abort: rank R killing itself" first.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, np = 0, value = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const int aborter = np > 1 ? 1 : 0;
    const int kill_self = argc > 1 && strcmp(argv[1], "kill") == 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == aborter) {
        printf("abort: rank %d %s\n", rank, kill_self ? "killing itself" : "calling MPI_Abort(3)");
        fflush(stdout);
        if (kill_self)
            raise(SIGKILL);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 4243, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "abort FAILED: rank %d received a message nobody sent\n", rank);
    MPI_Finalize();
    return 1;
}
