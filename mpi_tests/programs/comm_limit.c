/* How many communicators can be alive at once: duplicates MPI_COMM_WORLD
 * (errors returned, not fatal) until MPI_Comm_dup fails, checks that the last
 * one still carries messages, frees them all and duplicates once more.
 *
 *   comm_limit [max]     (default 200000: more than any PML allows)
 *
 * Prints "comm_limit N" on rank 0, N the duplicates that succeeded (max if
 * none failed), then "comm_limit ok"; a dup failing differently across ranks,
 * a lost message or a dup failing after the frees prints "comm_limit FAIL". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int max = argc > 1 ? atoi(argv[1]) : 200000;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm *comms = malloc(sizeof(MPI_Comm) * (size_t)max);
    int n = 0, ok = 1;
    while (n < max && MPI_Comm_dup(MPI_COMM_WORLD, &comms[n]) == MPI_SUCCESS)
        n++;
    int lo, hi;  /* every rank must have stopped at the same count */
    MPI_Allreduce(&n, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&n, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) ok = 0;
    if (n > 0 && lo == hi) {  /* the newest communicator works */
        int token = rank, got = -1;
        const int right = (rank + 1) % size, left = (rank + size - 1) % size;
        MPI_Sendrecv(&token, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, comms[n - 1],
                     MPI_STATUS_IGNORE);
        if (got != left) ok = 0;
    }
    for (int i = 0; i < n; i++)
        MPI_Comm_free(&comms[i]);
    MPI_Comm again;  /* the ids came back */
    if (MPI_Comm_dup(MPI_COMM_WORLD, &again) != MPI_SUCCESS)
        ok = 0;
    else
        MPI_Comm_free(&again);
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("comm_limit %d\n", n);
        printf(all_ok ? "comm_limit ok\n" : "comm_limit FAIL\n");
    }
    free(comms);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
