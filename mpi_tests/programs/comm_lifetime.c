/* Communicators freed while the PML still has frames on them in flight.
 *
 * pml dr keeps a send request until its peer acknowledged every frame, well
 * after the application saw the send complete. Open MPI 4.1 destroys
 * communicators regardless of the references requests hold in two places:
 * MPI_Comm_free of an intercommunicator duplicate that got a lower context
 * id than its parent (OMPI_COMM_EXTRA_RETAIN: released until destroyed), and
 * MPI_Finalize (ompi_comm_finalize runs before the PML's del_procs). A
 * request that still pointed at such a communicator released freed memory
 * when its ACK came (a crash over tcp, heap corruption under valgrind).
 *
 *   comm_lifetime [rounds]     (default 200)
 *
 * Round: split the world in halves, build an intercommunicator, free the
 * halves (freeing a context id below the intercommunicator's), duplicate it
 * (the duplicate takes that lower id), send eagerly from one half to the
 * other's first rank, free both at once. Then, once: send on a duplicate of
 * MPI_COMM_WORLD, free it, finalize. Prints "COMM_LIFETIME OK" on rank 0;
 * needs an even number of ranks, at least 2. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rounds = argc > 1 ? atoi(argv[1]) : 200;
    if (size < 2 || size % 2 != 0) {
        if (rank == 0) fprintf(stderr, "comm_lifetime: needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char buf[1024];
    for (int round = 0; round < rounds; round++) {
        const int left = rank < size / 2;
        MPI_Comm half, inter, dup;
        MPI_Comm_split(MPI_COMM_WORLD, left, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, left ? size / 2 : 0, 77, &inter);
        MPI_Comm_free(&half);
        MPI_Comm_dup(inter, &dup);
        int local, remote_size;
        MPI_Comm_rank(dup, &local);
        MPI_Comm_remote_size(dup, &remote_size);
        if (left) {
            memset(buf, (local + round) & 0xff, sizeof buf);
            MPI_Send(buf, sizeof buf, MPI_CHAR, 0, round, dup);
        } else if (local == 0) {
            for (int src = 0; src < remote_size; src++) {
                MPI_Recv(buf, sizeof buf, MPI_CHAR, src, round, dup, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < sizeof buf; i++)
                    if (buf[i] != (char)((src + round) & 0xff)) {
                        errors++;
                        break;
                    }
            }
        }
        MPI_Comm_free(&dup);  /* the sends may wait for their ACKs still */
        MPI_Comm_free(&inter);
    }
    MPI_Comm world_dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &world_dup);
    char last[2048] = {0};
    if (rank != 0)
        MPI_Send(last, sizeof last, MPI_CHAR, 0, 1, world_dup);
    else
        for (int i = 1; i < size; i++)
            MPI_Recv(last, sizeof last, MPI_CHAR, i, 1, world_dup, MPI_STATUS_IGNORE);
    MPI_Comm_free(&world_dup);  /* legal: pending operations complete normally */
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (errors == 0) printf("COMM_LIFETIME OK rounds=%d np=%d\n", rounds, size);
        else printf("COMM_LIFETIME FAILED errors=%d\n", errors);
    }
    MPI_Finalize();
    return errors == 0 ? 0 : 1;
}
