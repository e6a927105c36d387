/*
 * rail_transfer: stream large checksummed messages between all ranks, for
 * tests that cut a network link (a "rail") while the job runs.
 *
 *   rail_transfer [rounds [bytes [min_seconds]]]     defaults: 200 1048576 0
 *
 * In round i every rank sends `bytes` bytes to rank (r + s) and receives as
 * many from rank (r - s), with s = 1 + i % (np - 1): over np - 1 rounds each
 * rank exchanges with every other one, so with one rank per host every pair
 * of hosts carries traffic all the time. A message is a 32-byte header (magic,
 * round, source, destination, length, 64-bit checksum of the body) and a
 * body generated from (round, source, destination); the receiver checks the
 * header, the checksum and every byte against the regenerated body.
 *
 * With min_seconds > 0 the rounds are paced (round i starts no earlier than
 * i * min_seconds / rounds after the start), so a link cut at a given time
 * lands in the middle of the transfer.
 *
 * Output: each rank prints "rail_transfer: rank R on HOST"; rank 0 prints a
 * start line, progress lines (every tenth of the rounds) and at the end
 * "RAIL_TRANSFER OK ...". Lines carry wall=<Unix time> so a test can place an
 * event it caused (a link cut) relative to the transfer. Any mismatch prints
 * "RAIL_TRANSFER MISMATCH ..." on stderr; the job then ends with
 * "RAIL_TRANSFER FAILED errors=N" and every rank exits with status 1.
 *
 * RAIL_TRANSFER_CORRUPT=<round> makes rank 0 flip one body byte after
 * checksumming its message of that round (a self-test of the checks).
 * RAIL_TRANSFER_STARTED=<path>: rank 0 creates that file as the transfer
 * starts, so a test can time a link cut from there, not from the launch
 * (which takes seconds on a loaded machine).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x5241494cu /* "RAIL" */
#define HEADER_BYTES 32

struct header {
    uint32_t magic, round, src, dst;
    uint64_t length, checksum;
};
_Static_assert(sizeof(struct header) == HEADER_BYTES, "header layout");

/* FNV-1a style hash over 64-bit words (tail zero-padded): fast enough that
 * checking does not dominate the transfer time */
static uint64_t checksum64(const unsigned char* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

/* body of the message of `round` from src to dst: xorshift64* stream */
static void fill_body(unsigned char* p, size_t n, int round, int src, int dst) {
    uint64_t x =
        0x9e3779b97f4a7c15ull ^ ((uint64_t)round << 40) ^ ((uint64_t)src << 20) ^ (uint64_t)dst;
    if (x == 0)
        x = 1;
    size_t i = 0;
    while (i < n) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t v = x * 0x2545f4914f6cdd1dull;
        for (int k = 0; k < 8 && i < n; ++k, ++i)
            p[i] = (unsigned char)(v >> (8 * k));
    }
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until(double t) {
    for (;;) {
        double left = t - MPI_Wtime();
        if (left <= 0)
            return;
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Returns the number of problems found in the message of `round` from src. */
static int check_message(const unsigned char* msg, unsigned char* expect, size_t body, int round,
                         int src, int me) {
    struct header h;
    memcpy(&h, msg, sizeof h);
    const unsigned char* p = msg + HEADER_BYTES;
    if (h.magic != MAGIC || h.round != (uint32_t)round || h.src != (uint32_t)src ||
        h.dst != (uint32_t)me || h.length != body) {
        fprintf(stderr,
                "RAIL_TRANSFER MISMATCH rank %d round %d from %d: bad header magic 0x%08x "
                "round %u src %u dst %u length %llu\n",
                me, round, src, h.magic, h.round, h.src, h.dst, (unsigned long long)h.length);
        return 1;
    }
    int errors = 0;
    uint64_t sum = checksum64(p, body);
    if (sum != h.checksum) {
        fprintf(stderr,
                "RAIL_TRANSFER MISMATCH rank %d round %d from %d: checksum 0x%016llx, header "
                "says 0x%016llx\n",
                me, round, src, (unsigned long long)sum, (unsigned long long)h.checksum);
        ++errors;
    }
    fill_body(expect, body, round, src, me);
    if (memcmp(p, expect, body) != 0) {
        size_t i = 0;
        while (p[i] == expect[i])
            ++i;
        fprintf(stderr,
                "RAIL_TRANSFER MISMATCH rank %d round %d from %d: byte %zu is 0x%02x, expected "
                "0x%02x\n",
                me, round, src, i, p[i], expect[i]);
        ++errors;
    }
    return errors;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    long body_arg = argc > 2 ? atol(argv[2]) : 1L << 20;
    double min_seconds = argc > 3 ? atof(argv[3]) : 0.0;
    if (np < 2 || rounds < 1 || body_arg < 1 || min_seconds < 0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: rail_transfer [rounds>=1 [bytes>=1 [min_seconds>=0]]] "
                    "with at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    const size_t body = (size_t)body_arg, total = HEADER_BYTES + body;
    const char* corrupt_env = getenv("RAIL_TRANSFER_CORRUPT");
    const int corrupt_round = corrupt_env ? atoi(corrupt_env) : -1;

    char host[256] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    printf("rail_transfer: rank %d on %s\n", rank, host);
    fflush(stdout);

    unsigned char *out = malloc(total), *in = malloc(total), *expect = malloc(body);
    if (out == NULL || in == NULL || expect == NULL)
        MPI_Abort(MPI_COMM_WORLD, 4);

    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (rank == 0) {
        printf("rail_transfer: start np=%d rounds=%d bytes=%zu min_seconds=%.1f wall=%.3f\n", np,
               rounds, body, min_seconds, wall_now());
        fflush(stdout);
        const char* started = getenv("RAIL_TRANSFER_STARTED");
        FILE* f = started != NULL ? fopen(started, "w") : NULL;
        if (f != NULL)
            fclose(f);
    }
    const int every = rounds >= 10 ? rounds / 10 : 1;
    int errors = 0;
    for (int i = 0; i < rounds; ++i) {
        if (min_seconds > 0)
            sleep_until(t0 + min_seconds * i / rounds);
        const int shift = 1 + i % (np - 1);
        const int to = (rank + shift) % np, from = (rank - shift + np) % np;

        struct header h = {MAGIC, (uint32_t)i, (uint32_t)rank, (uint32_t)to, body, 0};
        fill_body(out + HEADER_BYTES, body, i, rank, to);
        h.checksum = checksum64(out + HEADER_BYTES, body);
        memcpy(out, &h, sizeof h);
        if (rank == 0 && i == corrupt_round)
            out[HEADER_BYTES + body / 2] ^= 0x20;

        MPI_Request req[2];
        const int tag = i % 32768; /* MPI_TAG_UB is at least 32767 */
        MPI_Irecv(in, (int)total, MPI_BYTE, from, tag, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out, (int)total, MPI_BYTE, to, tag, MPI_COMM_WORLD, &req[1]);
        MPI_Status st[2];
        MPI_Waitall(2, req, st);
        int count = -1;
        MPI_Get_count(&st[0], MPI_BYTE, &count);
        if (count != (int)total) {
            fprintf(stderr,
                    "RAIL_TRANSFER MISMATCH rank %d round %d from %d: %d bytes, expected %zu\n",
                    rank, i, from, count, total);
            ++errors;
        } else {
            errors += check_message(in, expect, body, i, from, rank);
        }
        if (rank == 0 && ((i + 1) % every == 0 || i + 1 == rounds)) {
            double dt = MPI_Wtime() - t0;
            printf("rail_transfer: round %d/%d elapsed %.2f s %.1f MiB/s per rank wall=%.3f\n",
                   i + 1, rounds, dt, (double)(i + 1) * total / (1 << 20) / (dt > 0 ? dt : 1e-9),
                   wall_now());
            fflush(stdout);
        }
    }

    int all_errors = 0;
    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const double dt = MPI_Wtime() - t0;
    if (rank == 0) {
        if (all_errors == 0)
            printf("RAIL_TRANSFER OK np=%d rounds=%d bytes=%zu seconds=%.2f wall=%.3f\n", np,
                   rounds, body, dt, wall_now());
        else
            printf("RAIL_TRANSFER FAILED errors=%d\n", all_errors);
        fflush(stdout);
    }
    free(out);
    free(in);
    free(expect);
    MPI_Finalize();
    return all_errors == 0 ? 0 : 1;
}
