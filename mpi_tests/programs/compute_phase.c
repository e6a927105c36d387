/*
 * compute_phase: a rank that computes outside MPI acknowledges nothing, and
 * its peer must not take that for a dead peer.
 *
 *   compute_phase [seconds [bytes]]     defaults: 2 1024
 *
 * Master-worker: rank 0 sends rank 1 its work (eager when small), a quarter
 * of the compute phase later a second part, then waits in MPI_Recv for the
 * result; rank 1 receives the first part, computes (sleeps) for `seconds`
 * without any MPI call - so nothing acknowledges the second part, which
 * arrives meanwhile, nor perhaps the first - then takes the second part and
 * sends the result back. Run with ACK timeouts far shorter than the compute
 * phase. Rank 0 prints "compute_phase ok" when every message arrived intact
 * and no call failed; exit code 1 otherwise.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int seconds = argc > 1 ? atoi(argv[1]) : 2;
    const int n = argc > 2 ? atoi(argv[2]) : 1024;
    unsigned char *buf = malloc((size_t)n);
    int failed = 0;
    if (size < 2) {
        fprintf(stderr, "compute_phase needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        for (int i = 0; i < n; i++)
            buf[i] = (unsigned char)i;
        int rc = MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        usleep((useconds_t)seconds * 250000u);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(buf, n, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(buf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; rc == MPI_SUCCESS && i < n; i++)
            if (buf[i] != (unsigned char)(i + 1)) {
                fprintf(stderr, "compute_phase: result byte %d wrong\n", i);
                failed = 1;
                break;
            }
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            fprintf(stderr, "compute_phase: rank 0 failed: %s\n", msg);
            failed = 1;
        }
        if (!failed)
            printf("compute_phase ok: %d s outside MPI, %d bytes\n", seconds, n);
    } else if (rank == 1) {
        int rc = MPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sleep((unsigned)seconds); /* the compute phase: no MPI calls */
        if (rc == MPI_SUCCESS)  /* the second part: the same bytes */
            rc = MPI_Recv(buf, n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++)
            buf[i] = (unsigned char)(buf[i] + 1);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(buf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        failed = rc != MPI_SUCCESS;
    }
    free(buf);
    MPI_Finalize();
    return failed;
}
