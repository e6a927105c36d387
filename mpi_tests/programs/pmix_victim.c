/* A job that stays busy while a test attacks its pmix dr server from the
 * outside (test_pmix_dr.py: the hostile-client suite).
 *
 *   pmix_victim INFO GO
 *
 * Rank 0 writes the server's socket path and its own name (from the
 * environment the server gave it) to INFO, one per line. Then every rank
 * loops: an allreduce, and a publish / lookup / unpublish of a name of its
 * own (requests that go through the pmix dr server), while rank 0 records
 * the iteration in INFO.beat, until GO exists (rank 0 looks, a broadcast
 * tells the others). It prints "victim ok N ITERATIONS" and finalizes
 * (a fence through the server). Gives up after 200 s.
 * Without a dr server (stock pmix) rank 0 writes "none" to INFO. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void write_file(const char *path, const char *text) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* One publish, lookup and unpublish: a round trip through the server each. */
static void name_round_trip(int rank, int iter) {
    char service[64], port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME];
    snprintf(service, sizeof service, "victim-%d-%d", rank, iter);
    snprintf(port, sizeof port, "port-%d-%d", rank, iter);
    if (MPI_Publish_name(service, MPI_INFO_NULL, port) != MPI_SUCCESS ||
        MPI_Lookup_name(service, MPI_INFO_NULL, found) != MPI_SUCCESS ||
        strcmp(found, port) != 0 ||
        MPI_Unpublish_name(service, MPI_INFO_NULL, port) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: name round trip %d failed (found '%s')\n", rank, iter, found);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: pmix_victim INFO GO\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *uri = getenv("DR_PMIX_SERVER_URI");
    const char *proc = getenv("DR_PMIX_PROC");
    char beat[4096], text[4096];
    snprintf(beat, sizeof beat, "%s.beat", argv[1]);
    if (rank == 0) {
        snprintf(text, sizeof text, "%s\n%s\n", uri ? uri : "none", proc ? proc : "none");
        write_file(argv[1], text);
    }
    const time_t start = time(NULL);
    int iter = 0, go = 0;
    while (!go) {
        int one = 1, sum = 0;
        if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
            sum != size) {
            fprintf(stderr, "rank %d: allreduce %d gave %d\n", rank, iter, sum);
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
        if (uri != NULL)
            name_round_trip(rank, iter);
        ++iter;
        if (rank == 0) {
            snprintf(text, sizeof text, "%d\n", iter);
            write_file(beat, text);
            go = access(argv[2], F_OK) == 0;
            if (time(NULL) - start > 200) {
                fprintf(stderr, "never told to stop\n");
                MPI_Abort(MPI_COMM_WORLD, 5);
            }
        }
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        usleep(20000);
    }
    if (rank == 0)
        printf("victim ok %d %d\n", size, iter);
    MPI_Finalize();
    return 0;
}
