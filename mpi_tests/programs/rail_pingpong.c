/*
 * rail_pingpong: a small-message ping-pong that measures the longest stall,
 * for tests and benchmarks that break a network link (a "rail") while it runs.
 *
 *   rail_pingpong [seconds [report_ms]]     defaults: 10 100
 *
 * Two ranks. Rank 0 sends an 8-byte ping (a value derived from the round
 * number) to rank 1, which checks it and answers with another value derived
 * from the round; rank 0 checks the answer. This goes on for `seconds`
 * seconds, then rank 0 tells rank 1 to stop. Every byte is checked.
 *
 * The stall is the time between two consecutive completed round trips (the
 * first one counts from the start): on a healthy link some microseconds, while
 * a link is lost as long as the messaging layer takes to notice and to carry
 * on over another one. Rank 0 prints every stall of report_ms or more as
 *   "rail_pingpong: stall ms=X from wall=A to wall=B round=N"
 * and at the end
 *   "RAIL_PINGPONG OK rounds=N max_stall_ms=X max_stall_wall=A mean_round_us=Y seconds=S wall=B"
 * (max_stall_wall: when that longest stall began; mean_round_us: the timed
 * part over the rounds, stalls included). wall= is Unix time, so a test or
 * script can place the events it caused (a black-holed rail) against the
 * stalls. A wrong byte prints "RAIL_PINGPONG MISMATCH ..." on stderr and the
 * job ends with "RAIL_PINGPONG FAILED errors=N" and exit status 1.
 *
 * RAIL_TRANSFER_STARTED=<path>: rank 0 creates that file as the timed part
 * starts (the same variable as rail_transfer), so a test can time a fault
 * from there, not from the launch. RAIL_PINGPONG_CORRUPT=<round> makes rank 1
 * flip one bit of its answer in that round (a self-test of the checks).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_PING = 1, TAG_STOP = 2 };

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t ping_value(uint64_t round) {
    return (round + 1) * 0x9e3779b97f4a7c15ull;
}
static uint64_t pong_value(uint64_t round) {
    return ~ping_value(round) ^ 0x504f4e47ull;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    const double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    const double report_ms = argc > 2 ? atof(argv[2]) : 100.0;
    if (np != 2 || seconds <= 0 || report_ms < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: rail_pingpong [seconds>0 [report_ms>=0]] with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }

    char host[256] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    printf("rail_pingpong: rank %d on %s\n", rank, host);
    fflush(stdout);

    MPI_Barrier(MPI_COMM_WORLD);
    int errors = 0;
    uint64_t rounds = 0;
    if (rank == 0) {
        const double t0 = MPI_Wtime(), w0 = wall_now();
        printf("rail_pingpong: start seconds=%.1f wall=%.3f\n", seconds, w0);
        fflush(stdout);
        const char* started = getenv("RAIL_TRANSFER_STARTED");
        FILE* f = started != NULL ? fopen(started, "w") : NULL;
        if (f != NULL)
            fclose(f);
        double last = t0, max_stall = 0, max_stall_at = t0;
        while (last - t0 < seconds) {
            uint64_t out = ping_value(rounds), in = 0;
            MPI_Sendrecv(&out, 8, MPI_BYTE, 1, TAG_PING, &in, 8, MPI_BYTE, 1, TAG_PING,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            const double now = MPI_Wtime();
            if (in != pong_value(rounds)) {
                fprintf(stderr,
                        "RAIL_PINGPONG MISMATCH rank 0 round %llu: got 0x%016llx, expected "
                        "0x%016llx\n",
                        (unsigned long long)rounds, (unsigned long long)in,
                        (unsigned long long)pong_value(rounds));
                ++errors;
            }
            const double stall = now - last;
            if (stall > max_stall) {
                max_stall = stall;
                max_stall_at = last;
            }
            if (stall * 1e3 >= report_ms) {
                printf("rail_pingpong: stall ms=%.1f from wall=%.3f to wall=%.3f round=%llu\n",
                       stall * 1e3, w0 + (last - t0), w0 + (now - t0), (unsigned long long)rounds);
                fflush(stdout);
            }
            last = now;
            ++rounds;
        }
        uint64_t stop = 0;
        MPI_Send(&stop, 8, MPI_BYTE, 1, TAG_STOP, MPI_COMM_WORLD);
        int peer_errors = 0;
        MPI_Recv(&peer_errors, 1, MPI_INT, 1, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        errors += peer_errors;
        const double dt = MPI_Wtime() - t0;
        if (errors == 0)
            printf(
                "RAIL_PINGPONG OK rounds=%llu max_stall_ms=%.1f max_stall_wall=%.3f "
                "mean_round_us=%.1f seconds=%.2f wall=%.3f\n",
                (unsigned long long)rounds, max_stall * 1e3, w0 + (max_stall_at - t0),
                rounds ? (last - t0) / rounds * 1e6 : 0.0, dt, wall_now());
        else
            printf("RAIL_PINGPONG FAILED errors=%d\n", errors);
        fflush(stdout);
    } else {
        const char* corrupt_env = getenv("RAIL_PINGPONG_CORRUPT");
        const long long corrupt_round = corrupt_env ? atoll(corrupt_env) : -1;
        for (;;) {
            uint64_t in = 0;
            MPI_Status st;
            MPI_Recv(&in, 8, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_STOP)
                break;
            if (in != ping_value(rounds)) {
                fprintf(stderr,
                        "RAIL_PINGPONG MISMATCH rank 1 round %llu: got 0x%016llx, expected "
                        "0x%016llx\n",
                        (unsigned long long)rounds, (unsigned long long)in,
                        (unsigned long long)ping_value(rounds));
                ++errors;
            }
            uint64_t out = pong_value(rounds);
            if ((long long)rounds == corrupt_round)
                out ^= 1ull << 17;
            MPI_Send(&out, 8, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
            ++rounds;
        }
        MPI_Send(&errors, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD);
    }
    int all_errors = errors;
    MPI_Bcast(&all_errors, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return all_errors == 0 ? 0 : 1;
}
