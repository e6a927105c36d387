/*
 * peer_death: a peer that stops answering is declared dead within a bounded
 * time, and the survivor gets an error code instead of hanging.
 *
 *   peer_death [max_seconds]     (2 ranks; default 30)
 *
 * Both ranks set MPI_ERRORS_RETURN and ping-pong messages of growing size
 * (eager and rendezvous) until a call returns an error. The test launches
 * rank 1 with pml_dr_fault_fail_btl/fault_fail_after, so its only network to
 * rank 0 dies after a few frames: from then on neither side hears the other.
 * Each rank prints
 *   "peer_death rank R: error after N exchanges, X.X s: <error string>"
 * and rank 0 prints "peer_death ok" if it saw the error within max_seconds.
 * Exit code 1: no error within max_seconds (the failure was never noticed) or
 * a payload mismatch before it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "peer_death needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const double max_seconds = argc > 1 ? atof(argv[1]) : 30.0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    const int peer = 1 - rank;
    const size_t max_len = 1 << 20;
    unsigned char* out = malloc(max_len);
    unsigned char* in = malloc(max_len);
    const double start = MPI_Wtime();
    int rc = MPI_SUCCESS;
    long exchanges = 0;
    int bad = 0;
    while (MPI_Wtime() - start < max_seconds) {
        const size_t len = (size_t)1 << (exchanges % 21); /* 1 B .. 1 MiB */
        memset(out, (int)(exchanges & 0xFF), len);
        MPI_Request req;
        rc = MPI_Irecv(in, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req);
        if (rc != MPI_SUCCESS)
            break;
        rc = MPI_Send(out, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            break;
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            break;
        for (size_t i = 0; i < len; ++i)
            if (in[i] != (unsigned char)(exchanges & 0xFF)) {
                fprintf(stderr, "peer_death rank %d: payload mismatch at exchange %ld\n", rank,
                        exchanges);
                bad = 1;
                break;
            }
        if (bad)
            break;
        ++exchanges;
    }
    const double took = MPI_Wtime() - start;
    int ok = 0;
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(rc, msg, &n);
        printf("peer_death rank %d: error after %ld exchanges, %.1f s: %s\n", rank, exchanges,
               took, msg);
        ok = !bad;
    } else if (!bad) {
        printf("peer_death rank %d: no error in %.1f s (%ld exchanges)\n", rank, took, exchanges);
    }
    if (rank == 0 && ok)
        printf("peer_death ok\n");
    fflush(stdout);
    free(out);
    free(in);
    MPI_Finalize();
    return ok ? 0 : 1;
}
