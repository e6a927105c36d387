/*
 * connect_accept: MPI_Comm_connect / MPI_Comm_accept between the two halves
 * of one job, in two rounds.
 *
 *   mpirun -np N connect_accept [lookup_seconds]     (N >= 2; default 30)
 *
 * MPI_COMM_WORLD is split into half A (even ranks, accepting) and half B
 * (odd ranks, connecting); the resulting intercommunicator is used for data
 * in both directions, merged (A low, B high) and disconnected.
 *   round 1 "publish": A's root opens a port and publishes it as
 *     "dr-test-svc"; B's root polls MPI_Lookup_name until it is found (at
 *     most lookup_seconds); afterwards A unpublishes the name.
 *   round 2 "bcast": the port string goes from A's root to B over
 *     MPI_COMM_WORLD, no name service.
 * Each round: every A rank sends its world rank to every B rank and the
 * other way round, both check what they got. Rank 0 prints
 * "connect/accept OK <round>" per round and "connect/accept OK" at the end.
 * Any mismatch aborts with exit code 2; lookup timing out exits with 3.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char kService[] = "dr-test-svc";

static void fail(int rank, const char* what, int got, int want) {
    fprintf(stderr, "connect_accept FAILED: world rank %d: %s %d, expected %d\n", rank, what, got,
            want);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Every rank of one side sends its world rank to every rank of the other. */
static void exchange(MPI_Comm inter, int wrank, int is_a) {
    int local = 0, remote = 0, lrank = 0;
    MPI_Comm_size(inter, &local);
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_remote_size(inter, &remote);
    int* got = malloc(sizeof(int) * (size_t)remote);
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)remote);
    if (got == NULL || reqs == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int r = 0; r < remote; ++r) {
        MPI_Irecv(&got[r], 1, MPI_INT, r, 21, inter, &reqs[r]);
        MPI_Isend(&wrank, 1, MPI_INT, r, 21, inter, &reqs[remote + r]);
    }
    MPI_Waitall(2 * remote, reqs, MPI_STATUSES_IGNORE);
    /* A holds the even world ranks, B the odd ones, both in order. */
    for (int r = 0; r < remote; ++r) {
        int want = 2 * r + (is_a ? 1 : 0);
        if (got[r] != want)
            fail(wrank, "peer sent world rank", got[r], want);
    }
    MPI_Comm merged;
    int msize = 0, mrank = -1;
    MPI_Intercomm_merge(inter, is_a ? 0 : 1, &merged);
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    if (msize != local + remote)
        fail(wrank, "merged size", msize, local + remote);
    int want_rank = is_a ? lrank : remote + lrank;
    if (mrank != want_rank)
        fail(wrank, "merged rank", mrank, want_rank);
    MPI_Comm_free(&merged);
    free(got);
    free(reqs);
}

/* B's root: poll the name service for the port, at most `seconds`. */
static int lookup(char* port, double seconds) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double start = MPI_Wtime();
    int rc;
    while ((rc = MPI_Lookup_name(kService, MPI_INFO_NULL, port)) != MPI_SUCCESS &&
           MPI_Wtime() - start < seconds) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return rc;
}

static void round_trip(MPI_Comm half, int wrank, int is_a, int publish, double seconds) {
    char port[MPI_MAX_PORT_NAME] = "";
    int hrank = 0;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm inter;
    if (is_a) {
        if (hrank == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            if (publish)
                MPI_Publish_name(kService, MPI_INFO_NULL, port);
        }
        /* world rank 0 is A's root; B's ranks take part in the bcast only */
        if (!publish)
            MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter);
    } else {
        if (publish) {
            if (hrank == 0 && lookup(port, seconds) != MPI_SUCCESS) {
                fprintf(stderr, "connect_accept FAILED: %s not found in %.0f s\n", kService,
                        seconds);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        } else {
            MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
        }
        MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter);
    }
    exchange(inter, wrank, is_a);
    MPI_Comm_disconnect(&inter);
    if (is_a && hrank == 0) {
        if (publish)
            MPI_Unpublish_name(kService, MPI_INFO_NULL, port);
        MPI_Close_port(port);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0) {
        printf("connect/accept OK %s\n", publish ? "publish" : "bcast");
        fflush(stdout);
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int wrank = 0, np = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        if (wrank == 0)
            fprintf(stderr, "connect_accept needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double seconds = argc > 1 ? atof(argv[1]) : 30.0;
    int is_a = wrank % 2 == 0;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, is_a ? 0 : 1, wrank, &half);
    round_trip(half, wrank, is_a, 1, seconds);
    round_trip(half, wrank, is_a, 0, seconds);
    MPI_Comm_free(&half);
    if (wrank == 0)
        printf("connect/accept OK\n");
    MPI_Finalize();
    return 0;
}
