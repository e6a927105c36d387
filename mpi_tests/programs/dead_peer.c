/*
 * dead_peer: once a peer is known dead, every operation that names it ends
 * with an error at once, a receive that was a rank's only business with it
 * ends too, and the survivors get through MPI_Finalize.
 *
 *   dead_peer kill [max_seconds]      (3 ranks; default 20)
 *   dead_peer silent [max_seconds]    (2 ranks)
 *
 * Every rank sets MPI_ERRORS_RETURN on every communicator.
 *
 * kill: rank 0 posts, on MPI_COMM_WORLD and on `pair` (ranks 0 and 1), a
 * receive from rank 1 (its only business with rank 1: it never sends to
 * it), an MPI_ANY_SOURCE receive on `pair` and one on MPI_COMM_WORLD; then
 * rank 1 kills itself (SIGKILL). The job must go on (mpirun
 * --enable-recovery). Rank 0 checks that the receive from rank 1 fails
 * within max_seconds, that the wildcard on `pair` fails (nobody but rank 0
 * itself is left to send on it), and that the wildcard on MPI_COMM_WORLD
 * stays pending and then gets rank 2's message; then it runs the battery
 * below against rank 1, and a wildcard receive posted after the death on
 * MPI_COMM_WORLD still gets rank 2's next message.
 *
 * silent: the test launches rank 1 with pml_dr_fault_fail_btl, so its only
 * network dies after some frames while both ranks ping-pong; each rank goes
 * on until a call fails (its peer was declared dead), then runs the battery
 * against the other (`pair` is MPI_COMM_WORLD).
 *
 * The battery: MPI_Recv, MPI_Irecv + MPI_Wait, MPI_Recv_init + MPI_Start +
 * MPI_Wait, MPI_Probe, MPI_Iprobe, MPI_Mprobe, MPI_Improbe, MPI_Send and
 * MPI_Ssend naming the dead rank, and MPI_Recv from MPI_ANY_SOURCE on
 * `pair`: each must return an error within 1 s. One line per check:
 *   "dead_peer rank R: <what>: error <class> in X.XXX s"   (or "FAILED: ...")
 * and "dead_peer rank R ok" when all of a rank's checks passed; rank 0 adds
 * "dead_peer ok" once it also got through MPI_Finalize. Exit code 1 when a
 * check failed.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank = 0;
static int failures = 0;

static double now(void) { /* also after MPI_Finalize */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void report(const char* what, int rc, double seconds, double bound) {
    if (rc == MPI_SUCCESS) {
        printf("dead_peer rank %d: FAILED: %s succeeded\n", rank, what);
        ++failures;
    } else if (seconds > bound) {
        printf("dead_peer rank %d: FAILED: %s took %.3f s (bound %.1f s)\n", rank, what, seconds,
               bound);
        ++failures;
    } else {
        int cls = 0;
        MPI_Error_class(rc, &cls);
        printf("dead_peer rank %d: %s: error %d in %.3f s\n", rank, what, cls, seconds);
    }
    fflush(stdout);
}

static void expect(int ok, const char* what) {
    if (!ok) {
        printf("dead_peer rank %d: FAILED: %s\n", rank, what);
        ++failures;
    } else {
        printf("dead_peer rank %d: %s\n", rank, what);
    }
    fflush(stdout);
}

/* Every operation naming `dead` (a rank of `comm`) must fail at once. */
static void battery(MPI_Comm comm, int dead, MPI_Comm pair) {
    const double bound = 1.0;
    int buf[4] = {0, 0, 0, 0};
    MPI_Status st;
    MPI_Request req;
    MPI_Message msg;
    int flag = 0;
    double t = MPI_Wtime();
    int rc = MPI_Recv(buf, 4, MPI_INT, dead, 1, comm, &st);
    report("MPI_Recv", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Irecv(buf, 4, MPI_INT, dead, 2, comm, &req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, &st);
    report("MPI_Irecv+MPI_Wait", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Recv_init(buf, 4, MPI_INT, dead, 3, comm, &req);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Start(&req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&req, &st);
        MPI_Request_free(&req);
    }
    report("MPI_Recv_init+MPI_Start+MPI_Wait", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Probe(dead, 4, comm, &st);
    report("MPI_Probe", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Iprobe(dead, 5, comm, &flag, &st);
    report("MPI_Iprobe", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Mprobe(dead, 6, comm, &msg, &st);
    report("MPI_Mprobe", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Improbe(dead, 7, comm, &flag, &msg, &st);
    report("MPI_Improbe", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Send(buf, 4, MPI_INT, dead, 8, comm);
    report("MPI_Send", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Ssend(buf, 4, MPI_INT, dead, 9, comm);
    report("MPI_Ssend", rc, MPI_Wtime() - t, bound);

    t = MPI_Wtime();
    rc = MPI_Recv(buf, 4, MPI_INT, MPI_ANY_SOURCE, 10, pair, &st);
    report("MPI_Recv(MPI_ANY_SOURCE) with nobody else left", rc, MPI_Wtime() - t, bound);
}

static void kill_mode(double max_seconds) {
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        if (rank == 0)
            fprintf(stderr, "dead_peer kill needs exactly 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair != MPI_COMM_NULL)
        MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN);
    int only = -1, pair_any = -1, world_any = -1, later = -1;
    MPI_Request r_only, r_pair_any, r_world_any;
    if (rank == 0) {
        MPI_Irecv(&only, 1, MPI_INT, 1, 11, MPI_COMM_WORLD, &r_only);
        MPI_Irecv(&pair_any, 1, MPI_INT, MPI_ANY_SOURCE, 12, pair, &r_pair_any);
        MPI_Irecv(&world_any, 1, MPI_INT, MPI_ANY_SOURCE, 13, MPI_COMM_WORLD, &r_world_any);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* connections up, rank 0's receives posted */
    if (rank == 1) {
        usleep(200000); /* the barrier's last frames reach the others first */
        raise(SIGKILL);
    }
    if (rank == 2) {
        int go = 0, v = 2;
        MPI_Recv(&go, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&v, 1, MPI_INT, 0, 13, MPI_COMM_WORLD);
        MPI_Recv(&go, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        v = 3;
        MPI_Send(&v, 1, MPI_INT, 0, 15, MPI_COMM_WORLD);
        printf("dead_peer rank 2 ok\n");
        fflush(stdout);
        return;
    }
    /* rank 0 */
    const double start = MPI_Wtime();
    int rc = MPI_SUCCESS, flag = 0;
    MPI_Status st;
    /* Bounded: MPI_Wait would hang on the bug this program looks for. */
    while (!flag && MPI_Wtime() - start < max_seconds) {
        rc = MPI_Test(&r_only, &flag, &st);
        if (rc != MPI_SUCCESS)
            break;
        if (!flag)
            usleep(1000);
    }
    if (rc == MPI_SUCCESS && flag)
        rc = st.MPI_ERROR;
    if (!flag && rc == MPI_SUCCESS) {
        printf("dead_peer rank 0: FAILED: the receive posted before the death still pending "
               "after %.1f s\n",
               max_seconds);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    report("the receive posted before the death", rc, MPI_Wtime() - start, max_seconds);
    double t = MPI_Wtime();
    rc = MPI_Wait(&r_pair_any, &st);
    report("the MPI_ANY_SOURCE receive on the pair, posted before the death", rc,
           MPI_Wtime() - t, 1.0);
    flag = 1;
    MPI_Test(&r_world_any, &flag, &st);
    expect(!flag, "the MPI_ANY_SOURCE receive on MPI_COMM_WORLD waits (rank 2 lives)");
    int go = 1;
    MPI_Send(&go, 1, MPI_INT, 2, 14, MPI_COMM_WORLD);
    rc = MPI_Wait(&r_world_any, &st);
    expect(rc == MPI_SUCCESS && st.MPI_SOURCE == 2 && world_any == 2,
           "the MPI_ANY_SOURCE receive on MPI_COMM_WORLD got rank 2's message");
    battery(MPI_COMM_WORLD, 1, pair);
    MPI_Request r_later;
    MPI_Irecv(&later, 1, MPI_INT, MPI_ANY_SOURCE, 15, MPI_COMM_WORLD, &r_later);
    MPI_Send(&go, 1, MPI_INT, 2, 14, MPI_COMM_WORLD);
    rc = MPI_Wait(&r_later, &st);
    expect(rc == MPI_SUCCESS && st.MPI_SOURCE == 2 && later == 3,
           "an MPI_ANY_SOURCE receive posted after the death got rank 2's message");
    MPI_Comm_free(&pair);
}

static void silent_mode(double max_seconds) {
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "dead_peer silent needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int peer = 1 - rank;
    const double start = MPI_Wtime();
    int rc = MPI_SUCCESS, out = 0, in = 0;
    long exchanges = 0;
    while (rc == MPI_SUCCESS && MPI_Wtime() - start < max_seconds) {
        MPI_Request req;
        out = (int)exchanges;
        rc = MPI_Irecv(&in, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(&out, 1, MPI_INT, peer, 7, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        ++exchanges;
    }
    if (rc == MPI_SUCCESS) {
        printf("dead_peer rank %d: FAILED: no error in %.1f s\n", rank, max_seconds);
        fflush(stdout);
        ++failures;
        return;
    }
    report("the exchange with the peer", rc, MPI_Wtime() - start, max_seconds);
    battery(MPI_COMM_WORLD, peer, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char* mode = argc > 1 ? argv[1] : "kill";
    const double max_seconds = argc > 2 ? atof(argv[2]) : 20.0;
    if (strcmp(mode, "kill") == 0) {
        kill_mode(max_seconds);
    } else if (strcmp(mode, "silent") == 0) {
        silent_mode(max_seconds);
    } else {
        if (rank == 0)
            fprintf(stderr, "usage: dead_peer kill|silent [max_seconds]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (failures == 0 && rank != 2) {
        printf("dead_peer rank %d ok\n", rank);
        fflush(stdout);
    }
    const double t = now();
    MPI_Finalize();
    if (rank == 0 && failures == 0) {
        printf("dead_peer ok (MPI_Finalize took %.2f s)\n", now() - t);
        fflush(stdout);
    }
    return failures == 0 ? 0 : 1;
}
