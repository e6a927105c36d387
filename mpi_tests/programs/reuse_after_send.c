/*
 * reuse_after_send: a send buffer is the application's again once the send
 * completed, even though the PML may still have to resend its data.
 *
 *   reuse_after_send [rounds]     default 200
 *
 * Rank 0 sends rank 1 `rounds` messages of sizes cycling through 4 KiB to
 * 60000 bytes (eager over tcp), alternately with MPI_Send and with
 * MPI_Isend + MPI_Wait, and overwrites the buffer as soon as each send
 * completes. Rank 1 checks every byte against the pattern of its round.
 * Under frame loss (pml_dr_fault_drop) the resends must come from the PML's
 * own copy, not from the buffer. Prints "reuse ok: N messages" on rank 0;
 * a mismatch prints "reuse MISMATCH ..." and the job exits with status 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int kSizes[] = {4096, 8192, 16000, 30000, 60000};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0], kMaxSize = 60000 };

static unsigned char pattern(int round, int i) {
    return (unsigned char)(round * 131 + i * 7 + (i >> 8));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rounds = argc > 1 ? atoi(argv[1]) : 200;
    unsigned char *buf = malloc(kMaxSize);
    int errors = 0;
    if (size < 2) {
        fprintf(stderr, "reuse_after_send needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int r = 0; r < rounds && rank < 2; r++) {
        const int n = kSizes[r % kNumSizes];
        if (rank == 0) {
            for (int i = 0; i < n; i++)
                buf[i] = pattern(r, i);
            if (r % 2 == 0) {
                MPI_Send(buf, n, MPI_BYTE, 1, r, MPI_COMM_WORLD);
            } else {
                MPI_Request req;
                MPI_Isend(buf, n, MPI_BYTE, 1, r, MPI_COMM_WORLD, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            memset(buf, 0xEE, (size_t)n); /* the application's buffer again */
        } else {
            MPI_Status st;
            int count = 0;
            memset(buf, 0, kMaxSize);
            MPI_Recv(buf, kMaxSize, MPI_BYTE, 0, r, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            int bad = count != n ? -1 : 0;
            for (int i = 0; bad == 0 && i < n; i++)
                if (buf[i] != pattern(r, i))
                    bad = i + 1;
            if (bad != 0) {
                fprintf(stderr, "reuse MISMATCH round %d size %d count %d at byte %d\n", r, n,
                        count, bad - 1);
                errors++;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (errors == 0)
            printf("reuse ok: %d messages\n", rounds);
        else
            printf("reuse FAILED errors=%d\n", errors);
    }
    free(buf);
    MPI_Finalize();
    return errors == 0 ? 0 : 1;
}
