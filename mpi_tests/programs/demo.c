/*
 * demo: every rank exchanges messages of many sizes with the others and
 * verifies every byte.
 *
 *   demo [max_bytes [reps]]       (defaults: 4194304, 1)
 *   DEMO_CORRUPT_SIZE=n demo ...  (verifier self-test: must fail)
 *
 * Sizes: 1 B, then each power of two up to max_bytes together with its odd
 * neighbours (2^k - 1, 2^k + 1) so unaligned lengths and every protocol
 * threshold (eager, rendezvous, pipelining) are crossed. For each size and rep:
 *   ring      rank r sends to r+1 with MPI_Send, receives from r-1 (MPI_Irecv)
 *   ring-sync the same with MPI_Ssend, the other direction
 *   alltoall  every rank MPI_Isend's to every other rank; receives are posted
 *             with MPI_ANY_SOURCE and checked against the status' source
 * Payloads are a deterministic function of (phase, source, destination, size,
 * rep, offset). Rank 0 prints one line per rank and, if all is well,
 *   "demo ok: N messages, M bytes verified"
 * Any mismatch is reported on stderr and the program exits non-zero.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kPhaseRing = 1, kPhaseRingSync = 2, kPhaseAllToAll = 3 };

/* Self-test of the verifier: with DEMO_CORRUPT_SIZE=<n> in the environment,
 * rank 0 flips one bit of the ring message of size n after receiving it. */
static size_t g_corrupt_size = 0;

struct totals {
    long long sent_msgs, sent_bytes, recv_msgs, recv_bytes, errors;
};

static uint32_t seed_of(int phase, int src, int dst, size_t size, int rep) {
    uint32_t s = (uint32_t)phase * 0x9E3779B1u;
    s ^= (uint32_t)src * 0x85EBCA77u + (uint32_t)dst * 0xC2B2AE3Du;
    s ^= (uint32_t)size * 0x27D4EB2Fu + (uint32_t)rep * 0x165667B1u;
    return s;
}

static unsigned char byte_at(uint32_t seed, size_t i) {
    uint32_t x = seed ^ ((uint32_t)i * 0x9E3779B1u);
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (unsigned char)(x ^ (uint32_t)(i >> 8));
}

static void fill(unsigned char *buf, size_t size, uint32_t seed) {
    for (size_t i = 0; i < size; ++i) buf[i] = byte_at(seed, i);
}

/* Returns 0 if the buffer matches, otherwise reports the first bad byte. */
static int verify(const unsigned char *buf, size_t size, uint32_t seed, const char *what,
                  int me, int src, int rep) {
    for (size_t i = 0; i < size; ++i) {
        unsigned char want = byte_at(seed, i);
        if (buf[i] != want) {
            size_t bad = 0;
            for (size_t j = i; j < size; ++j) bad += buf[j] != byte_at(seed, j);
            fprintf(stderr,
                    "demo MISMATCH: %s rank %d from %d size %zu rep %d: byte %zu is 0x%02x, "
                    "expected 0x%02x (%zu bad bytes)\n",
                    what, me, src, size, rep, i, buf[i], want, bad);
            return 1;
        }
    }
    return 0;
}

static int check_status(const MPI_Status *st, size_t size, int want_src, int want_tag,
                        const char *what, int me) {
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    if ((size_t)count != size || (want_src >= 0 && st->MPI_SOURCE != want_src) ||
        st->MPI_TAG != want_tag) {
        fprintf(stderr,
                "demo BAD STATUS: %s rank %d: count %d src %d tag %d, expected %zu %d %d\n",
                what, me, count, st->MPI_SOURCE, st->MPI_TAG, size, want_src, want_tag);
        return 1;
    }
    return 0;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "demo: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return p;
}

/* Ring step: send to `to`, receive from `from`. */
static void ring(int phase, int me, int to, int from, size_t size, int rep, int tag,
                 unsigned char *sbuf, unsigned char *rbuf, struct totals *t) {
    const char *what = phase == kPhaseRing ? "ring" : "ring-sync";
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(rbuf, (int)size, MPI_BYTE, from, tag, MPI_COMM_WORLD, &req);
    fill(sbuf, size, seed_of(phase, me, to, size, rep));
    if (phase == kPhaseRing)
        MPI_Send(sbuf, (int)size, MPI_BYTE, to, tag, MPI_COMM_WORLD);
    else
        MPI_Ssend(sbuf, (int)size, MPI_BYTE, to, tag, MPI_COMM_WORLD);
    MPI_Wait(&req, &st);
    if (phase == kPhaseRing && me == 0 && size == g_corrupt_size) rbuf[size / 2] ^= 0x10;
    t->sent_msgs++;
    t->sent_bytes += (long long)size;
    t->errors += check_status(&st, size, from, tag, what, me);
    t->errors += verify(rbuf, size, seed_of(phase, from, me, size, rep), what, me, from, rep);
    t->recv_msgs++;
    t->recv_bytes += (long long)size;
}

static void alltoall(int me, int np, size_t size, int rep, int tag, unsigned char **sbufs,
                     unsigned char **rbufs, struct totals *t) {
    if (np < 2) return;
    int peers = np - 1;
    MPI_Request *reqs = xmalloc(sizeof(MPI_Request) * 2 * (size_t)peers);
    MPI_Status *sts = xmalloc(sizeof(MPI_Status) * 2 * (size_t)peers);
    for (int k = 0; k < peers; ++k)
        MPI_Irecv(rbufs[k], (int)size, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &reqs[k]);
    for (int k = 0; k < peers; ++k) {
        int to = (me + 1 + k) % np;
        fill(sbufs[k], size, seed_of(kPhaseAllToAll, me, to, size, rep));
        MPI_Isend(sbufs[k], (int)size, MPI_BYTE, to, tag, MPI_COMM_WORLD, &reqs[peers + k]);
    }
    MPI_Waitall(2 * peers, reqs, sts);
    int *seen = calloc((size_t)np, sizeof(int));
    if (seen == NULL) MPI_Abort(MPI_COMM_WORLD, 4);
    for (int k = 0; k < peers; ++k) {
        int src = sts[k].MPI_SOURCE;
        t->recv_msgs++;
        t->recv_bytes += (long long)size;
        if (check_status(&sts[k], size, -1, tag, "alltoall", me) || src < 0 || src >= np ||
            src == me || seen[src]++) {
            fprintf(stderr, "demo BAD SOURCE: alltoall rank %d got source %d (size %zu)\n", me,
                    src, size);
            t->errors++;
            continue;
        }
        t->errors += verify(rbufs[k], size, seed_of(kPhaseAllToAll, src, me, size, rep),
                            "alltoall", me, src, rep);
    }
    t->sent_msgs += peers;
    t->sent_bytes += (long long)size * peers;
    free(seen);
    free(sts);
    free(reqs);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    long max_arg = argc > 1 ? atol(argv[1]) : 4L << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 1;
    if (max_arg < 1 || max_arg > (1L << 30) || reps < 1) {
        if (me == 0) fprintf(stderr, "usage: demo [max_bytes (1..2^30) [reps>=1]]\n");
        MPI_Finalize();
        return 1;
    }
    size_t max_bytes = (size_t)max_arg;
    const char *corrupt = getenv("DEMO_CORRUPT_SIZE");
    if (corrupt != NULL) g_corrupt_size = (size_t)atol(corrupt);

    /* sizes: 1, then 2^k - 1, 2^k, 2^k + 1 up to max_bytes */
    size_t sizes[96];
    int nsizes = 0;
    sizes[nsizes++] = 1;
    for (size_t p = 2; p <= max_bytes && nsizes < 93; p <<= 1) {
        if (p - 1 > sizes[nsizes - 1]) sizes[nsizes++] = p - 1;
        sizes[nsizes++] = p;
        if (p + 1 <= max_bytes) sizes[nsizes++] = p + 1;
    }

    int peers = np > 1 ? np - 1 : 1;
    unsigned char *sbuf = xmalloc(max_bytes), *rbuf = xmalloc(max_bytes);
    unsigned char **sbufs = xmalloc(sizeof(unsigned char *) * (size_t)peers);
    unsigned char **rbufs = xmalloc(sizeof(unsigned char *) * (size_t)peers);
    for (int k = 0; k < peers; ++k) {
        sbufs[k] = xmalloc(max_bytes);
        rbufs[k] = xmalloc(max_bytes);
    }

    struct totals t = {0, 0, 0, 0, 0};
    const int next = (me + 1) % np, prev = (me + np - 1) % np;
    int tag = 0;
    for (int rep = 0; rep < reps; ++rep) {
        for (int s = 0; s < nsizes; ++s) {
            size_t size = sizes[s];
            /* tags stay below 32767, the smallest MPI_TAG_UB the standard allows */
            tag = tag % 16000 + 1;
            ring(kPhaseRing, me, next, prev, size, rep, tag, sbuf, rbuf, &t);
            ring(kPhaseRingSync, me, prev, next, size, rep, tag + 16000, sbuf, rbuf, &t);
            alltoall(me, np, size, rep, tag, sbufs, rbufs, &t);
        }
    }

    long long mine[5] = {t.sent_msgs, t.sent_bytes, t.recv_msgs, t.recv_bytes, t.errors};
    long long *all = me == 0 ? xmalloc(sizeof mine * (size_t)np) : NULL;
    MPI_Gather(mine, 5, MPI_LONG_LONG, all, 5, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (me == 0) {
        long long msgs = 0, bytes = 0, errors = 0;
        for (int r = 0; r < np; ++r) {
            const long long *v = all + 5 * r;
            printf("rank %d: sent %lld msgs %lld bytes, received %lld msgs %lld bytes, "
                   "%lld errors\n",
                   r, v[0], v[1], v[2], v[3], v[4]);
            msgs += v[2];
            bytes += v[3];
            errors += v[4];
        }
        if (errors == 0) {
            printf("demo ok: %lld messages, %lld bytes verified\n", msgs, bytes);
        } else {
            printf("demo FAILED: %lld errors in %lld messages\n", errors, msgs);
            rc = 1;
        }
        fflush(stdout);
        free(all);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int k = 0; k < peers; ++k) {
        free(sbufs[k]);
        free(rbufs[k]);
    }
    free(sbufs);
    free(rbufs);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return rc;
}
