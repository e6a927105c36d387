/*
 * spawn: MPI_Comm_spawn of 2 more copies of this program, then traffic over
 * the intercommunicator, a merge and a disconnect on both sides.
 *
 *   mpirun -np 1|2 spawn
 *
 * Parents (no parent communicator) spawn 2 children collectively, rooted at
 * rank 0. Both sides: a barrier over the intercommunicator; parent rank 0
 * sends each child 1000 + child rank, each child replies with that value + 1
 * to parent rank 0; MPI_Intercomm_merge must give parents + children ranks,
 * with the parents first; then MPI_Comm_disconnect. Parent rank 0 prints
 * "spawn OK <parents> <children>". Any mismatch aborts with exit code 2.
 */
#include <mpi.h>
#include <stdio.h>

#define CHILDREN 2

static void fail(const char* who, int rank, const char* what, int got, int want) {
    fprintf(stderr, "spawn FAILED: %s rank %d: %s %d, expected %d\n", who, rank, what, got, want);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void merge_and_check(MPI_Comm inter, int high, const char* who, int rank) {
    int local = 0, remote = 0, merged_size = 0, merged_rank = -1;
    MPI_Comm merged;
    MPI_Comm_size(inter, &local);
    MPI_Comm_remote_size(inter, &remote);
    MPI_Intercomm_merge(inter, high, &merged);
    MPI_Comm_size(merged, &merged_size);
    MPI_Comm_rank(merged, &merged_rank);
    if (merged_size != local + remote)
        fail(who, rank, "merged size", merged_size, local + remote);
    int want_rank = high ? remote + rank : rank; /* parents low, children high */
    if (merged_rank != want_rank)
        fail(who, rank, "merged rank", merged_rank, want_rank);
    MPI_Comm_free(&merged);
}

static int child(MPI_Comm parent) {
    int rank = -1, np = 0, nparents = 0, value = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_remote_size(parent, &nparents);
    if (np != CHILDREN)
        fail("child", rank, "world size", np, CHILDREN);
    MPI_Barrier(parent);
    MPI_Recv(&value, 1, MPI_INT, 0, 11, parent, MPI_STATUS_IGNORE);
    if (value != 1000 + rank)
        fail("child", rank, "received", value, 1000 + rank);
    value += 1;
    MPI_Send(&value, 1, MPI_INT, 0, 12, parent);
    merge_and_check(parent, 1, "child", rank);
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        return child(parent);

    int rank = -1, np = 0, remote = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int errcodes[CHILDREN];
    MPI_Comm inter;
    MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, CHILDREN, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                   errcodes);
    for (int i = 0; i < CHILDREN; ++i)
        if (errcodes[i] != MPI_SUCCESS)
            fail("parent", rank, "spawn error code", errcodes[i], 0);
    MPI_Comm_remote_size(inter, &remote);
    if (remote != CHILDREN)
        fail("parent", rank, "remote size", remote, CHILDREN);
    MPI_Barrier(inter);
    if (rank == 0) {
        for (int c = 0; c < CHILDREN; ++c) {
            int value = 1000 + c;
            MPI_Send(&value, 1, MPI_INT, c, 11, inter);
        }
        for (int c = 0; c < CHILDREN; ++c) {
            int value = 0;
            MPI_Recv(&value, 1, MPI_INT, c, 12, inter, MPI_STATUS_IGNORE);
            if (value != 1001 + c)
                fail("parent", rank, "reply", value, 1001 + c);
        }
    }
    merge_and_check(inter, 0, "parent", rank);
    MPI_Comm_disconnect(&inter);
    if (rank == 0)
        printf("spawn OK %d %d\n", np, CHILDREN);
    MPI_Finalize();
    return 0;
}
