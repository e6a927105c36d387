/*
 * rest_wake: peers that go quiet while their processes stay in MPI go to
 * rest (pml dr drops their channel state for a rest record after an idle
 * period), and their next message must carry on where they left off.
 *
 *   rest_wake [rounds [idle_ms [bytes]]]     defaults: 3 1300 4096
 *
 * Three ranks. Each round ranks 0 and 1 exchange a message each way (the
 * bytes depend on the round, checked); then rank 2 computes for idle_ms
 * outside MPI and sends rank 0 a message, which rank 0 waits for in
 * MPI_Recv while rank 1 already waits in the next round's exchange: both
 * sit in MPI with nothing between them for idle_ms. Rank 0 prints
 * "rest_wake ok" when every message arrived intact; exit code 1 otherwise.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void fill(unsigned char *buf, int n, int round, int from) {
    for (int i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 7 + round * 13 + from);
}

static int check(const unsigned char *buf, int n, int round, int from) {
    for (int i = 0; i < n; i++)
        if (buf[i] != (unsigned char)(i * 7 + round * 13 + from)) {
            fprintf(stderr, "rest_wake: round %d, from %d: byte %d wrong\n", round, from, i);
            return 1;
        }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const int idle_ms = argc > 2 ? atoi(argv[2]) : 1300;
    const int n = argc > 3 ? atoi(argv[3]) : 4096;
    if (size != 3) {
        fprintf(stderr, "rest_wake needs 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *out = malloc((size_t)n), *in = malloc((size_t)n);
    int failed = 0;
    for (int r = 0; r < rounds && !failed; r++) {
        int rc = MPI_SUCCESS;
        if (rank < 2) {
            const int other = 1 - rank;
            fill(out, n, r, rank);
            rc = MPI_Sendrecv(out, n, MPI_BYTE, other, r, in, n, MPI_BYTE, other, r,
                              MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            failed = rc != MPI_SUCCESS || check(in, n, r, other);
        }
        if (rank == 2) {
            usleep((useconds_t)idle_ms * 1000u); /* computing: no MPI calls */
            fill(out, n, r, rank);
            rc = MPI_Send(out, n, MPI_BYTE, 0, 1000 + r, MPI_COMM_WORLD);
            failed = rc != MPI_SUCCESS;
        } else if (rank == 0 && !failed) {
            rc = MPI_Recv(in, n, MPI_BYTE, 2, 1000 + r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            failed = rc != MPI_SUCCESS || check(in, n, r, 2);
        }
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            fprintf(stderr, "rest_wake: rank %d, round %d: %s\n", rank, r, msg);
        }
    }
    int all_failed = 0;
    MPI_Reduce(&failed, &all_failed, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && !all_failed)
        printf("rest_wake ok: %d rounds, %d ms quiet each\n", rounds, idle_ms);
    free(out);
    free(in);
    MPI_Finalize();
    return rank == 0 ? all_failed : failed;
}
