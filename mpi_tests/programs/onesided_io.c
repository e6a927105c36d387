/* Upper layers over the PML: one-sided (run with --mca osc pt2pt, which is
 * built on point-to-point) and MPI-IO (collective writes/reads through the
 * PML for aggregation). Argument: a directory for the test file.
 * Prints "onesided_io ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* One-sided: every rank puts its rank into slot [rank] of every window,
     * accumulates 1 into slot [size], then gets its right neighbour's row. */
    const int n = size + 1;
    int *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int) * n, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < n; i++) base[i] = -1;
    base[size] = 0;
    MPI_Win_fence(0, win);
    int one = 1;
    for (int t = 0; t < size; t++) {
        MPI_Put(&rank, 1, MPI_INT, t, rank, 1, MPI_INT, win);
        MPI_Accumulate(&one, 1, MPI_INT, t, size, 1, MPI_INT, MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    for (int i = 0; i < size; i++)
        if (base[i] != i) errors++, fprintf(stderr, "rank %d: window[%d] = %d\n", rank, i, base[i]);
    if (base[size] != size) errors++, fprintf(stderr, "rank %d: accumulate gave %d\n", rank, base[size]);
    int *row = malloc(sizeof(int) * n);
    MPI_Win_lock(MPI_LOCK_SHARED, (rank + 1) % size, 0, win);
    MPI_Get(row, n, MPI_INT, (rank + 1) % size, 0, n, MPI_INT, win);
    MPI_Win_unlock((rank + 1) % size, win);
    for (int i = 0; i < size; i++)
        if (row[i] != i) errors++, fprintf(stderr, "rank %d: get[%d] = %d\n", rank, i, row[i]);
    free(row);
    MPI_Win_free(&win);

    /* MPI-IO: each rank writes 1 MiB at its offset collectively, reads all back. */
    const char *dir = argc > 1 ? argv[1] : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/dr_io_test.bin", dir);
    const int len = 1 << 20;
    unsigned char *w = malloc(len), *r = malloc((size_t)len * size);
    for (int i = 0; i < len; i++) w[i] = (unsigned char)(rank * 13 + i * 7);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "cannot open %s\n", path);
        errors++;
    } else {
        MPI_File_write_at_all(fh, (MPI_Offset)rank * len, w, len, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_read_at_all(fh, 0, r, len * size, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        for (int s = 0; s < size; s++)
            for (int i = 0; i < len; i++)
                if (r[(size_t)s * len + i] != (unsigned char)(s * 13 + i * 7)) {
                    errors++;
                    fprintf(stderr, "rank %d: file byte %d of rank %d's block wrong\n", rank, i, s);
                    break;
                }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    }
    free(w);
    free(r);
    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total ? "onesided_io FAILED: %d errors\n" : "onesided_io ok%.0d\n", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
