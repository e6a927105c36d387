/* MPI point-to-point semantics, one subtest at a time. Every rank prints
 * nothing on success; rank 0 prints "p2p ok: N subtests" at the end. Any
 * failure prints "FAIL <subtest>: <why>" and the exit code is non-zero.
 * Usage: p2p_semantics [big_mib]   (size of the large-message subtest) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, failures, subtests;
static const char *current = "";

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL %s (rank %d): ", current, rank);             \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static void begin(const char *name) {
    current = name;
    subtests++;
    if (getenv("P2P_TRACE") && rank == 0) fprintf(stderr, "[p2p] %s\n", name);
    MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned char pattern(int src, int msg, size_t i) {
    return (unsigned char)(src * 131 + msg * 31 + i * 7 + (i >> 9));
}
static void fill(unsigned char *b, size_t n, int src, int msg) {
    for (size_t i = 0; i < n; i++) b[i] = pattern(src, msg, i);
}
static size_t bad_byte(const unsigned char *b, size_t n, int src, int msg) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(src, msg, i)) return i;
    return (size_t)-1;
}

/* Sizes across inline, eager, rendezvous and multi-frag boundaries. */
static const size_t kSizes[] = {0, 1, 7, 256, 257, 4000, 4096, 5000, 65536, 65537, 200000, 1 << 20, 3 << 20};
#define NSIZES (sizeof kSizes / sizeof kSizes[0])

static void test_ordering(void) {
    begin("ordering");
    if (size < 2) return;
    if (rank == 0) {
        MPI_Request reqs[NSIZES];
        unsigned char *bufs[NSIZES];
        for (size_t m = 0; m < NSIZES; m++) {
            bufs[m] = malloc(kSizes[m] + 1);
            fill(bufs[m], kSizes[m], 0, (int)m);
            MPI_Isend(bufs[m], (int)kSizes[m], MPI_BYTE, 1, 42, MPI_COMM_WORLD, &reqs[m]);
        }
        MPI_Waitall(NSIZES, reqs, MPI_STATUSES_IGNORE);
        for (size_t m = 0; m < NSIZES; m++) free(bufs[m]);
    } else if (rank == 1) {
        /* Same tag, posted after arrival for most: order must be send order. */
        usleep(100000);
        for (size_t m = 0; m < NSIZES; m++) {
            unsigned char *b = malloc(kSizes[m] + 1);
            MPI_Status st;
            MPI_Recv(b, (int)kSizes[m], MPI_BYTE, 0, 42, MPI_COMM_WORLD, &st);
            int count;
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK((size_t)count == kSizes[m], "message %zu: count %d, want %zu", m, count, kSizes[m]);
            size_t bad = bad_byte(b, kSizes[m], 0, (int)m);
            CHECK(bad == (size_t)-1, "message %zu: byte %zu wrong (out of order or corrupt)", m, bad);
            free(b);
        }
    }
}

static void test_any_source_any_tag(void) {
    begin("any_source_any_tag");
    const int per = 20;
    if (rank != 0) {
        for (int i = 0; i < per; i++) {
            int v[2] = {rank, i};
            MPI_Send(v, 2, MPI_INT, 0, i % 3, MPI_COMM_WORLD);
        }
    } else {
        int *next = calloc((size_t)size, sizeof(int));
        for (int n = 0; n < per * (size - 1); n++) {
            int v[2];
            MPI_Status st;
            MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE == v[0], "status source %d, payload says %d", st.MPI_SOURCE, v[0]);
            CHECK(st.MPI_TAG == v[1] % 3, "status tag %d, want %d", st.MPI_TAG, v[1] % 3);
            CHECK(v[1] == next[v[0]], "from %d got #%d, want #%d (non-overtaking)", v[0], v[1], next[v[0]]);
            next[v[0]] = v[1] + 1;
        }
        free(next);
    }
}

static void test_tag_selective(void) {
    begin("tag_selective");
    if (size < 2) return;
    if (rank == 0) {
        int a = 1, b = 2;
        MPI_Send(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
    } else if (rank == 1) {
        int x = 0, y = 0;
        MPI_Recv(&y, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(x == 1 && y == 2, "tag matching mixed payloads: x=%d y=%d", x, y);
    }
}

static void test_truncation(void) {
    begin("truncation");
    if (size < 2) return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const size_t lens[] = {100 * sizeof(int), 2 << 20};
    for (int k = 0; k < 2; k++) {
        size_t n = lens[k];
        unsigned char *b = malloc(n);
        if (rank == 0) {
            fill(b, n, 0, k);
            MPI_Send(b, (int)n, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Status st;
            memset(b, 0, n);
            int rc = MPI_Recv(b, (int)(n / 2), MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "size %zu: error class %d, want MPI_ERR_TRUNCATE", n, cls);
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7, "status source/tag %d/%d", st.MPI_SOURCE, st.MPI_TAG);
            size_t bad = bad_byte(b, n / 2, 0, k);
            CHECK(bad == (size_t)-1, "size %zu: received prefix wrong at %zu", n, bad);
        }
        free(b);
    }
    /* A long message into a zero-sized receive buffer. */
    size_t n = 1 << 20;
    unsigned char *b = malloc(n);
    if (rank == 0) {
        fill(b, n, 0, 9);
        MPI_Send(b, (int)n, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        int rc = MPI_Recv(b, 0, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "zero-byte buffer: error class %d", cls);
    }
    free(b);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void test_zero_and_self(void) {
    begin("zero_and_self");
    MPI_Request r[2];
    int out = 12345 + rank, in = -1;
    MPI_Irecv(&in, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(in == out, "self send got %d", in);
    /* big self send (rendezvous through btl self) */
    size_t n = 3 << 20;
    unsigned char *s = malloc(n), *d = malloc(n);
    fill(s, n, rank, 77);
    MPI_Sendrecv(s, (int)n, MPI_BYTE, rank, 10, d, (int)n, MPI_BYTE, rank, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(bad_byte(d, n, rank, 77) == (size_t)-1, "large self sendrecv corrupt");
    free(s);
    free(d);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Status st;
    MPI_Sendrecv(NULL, 0, MPI_BYTE, next, 11, NULL, 0, MPI_BYTE, prev, 11, MPI_COMM_WORLD, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 0 && st.MPI_SOURCE == prev, "zero-byte: count %d source %d", count, st.MPI_SOURCE);
    /* MPI_PROC_NULL */
    MPI_Sendrecv(&out, 1, MPI_INT, MPI_PROC_NULL, 1, &in, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "proc null source %d", st.MPI_SOURCE);
}

static void test_ssend(void) {
    begin("ssend");
    if (size < 2) return;
    int v = 5, go = 1;
    if (rank == 0) {
        MPI_Request r;
        MPI_Issend(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &r);
        int done = 0;
        for (int i = 0; i < 50 && !done; i++) {
            MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            usleep(2000);
        }
        CHECK(!done, "Issend completed before the receive was posted");
        MPI_Send(&go, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        /* large synchronous send */
        size_t n = 2 << 20;
        unsigned char *b = malloc(n);
        fill(b, n, 0, 5);
        MPI_Ssend(b, (int)n, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
        free(b);
    } else if (rank == 1) {
        int x = 0;
        MPI_Recv(&go, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&x, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(x == 5, "ssend payload %d", x);
        size_t n = 2 << 20;
        unsigned char *b = malloc(n);
        MPI_Recv(b, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(bad_byte(b, n, 0, 5) == (size_t)-1, "large ssend corrupt");
        free(b);
    }
}

static void test_bsend_rsend(void) {
    begin("bsend_rsend");
    if (size < 2) return;
    const int n = 8, len = 3000;
    if (rank == 0) {
        int bufsize = n * (len + MPI_BSEND_OVERHEAD) + 1000000 + MPI_BSEND_OVERHEAD;
        void *attach = malloc((size_t)bufsize);
        MPI_Buffer_attach(attach, bufsize);
        unsigned char *b = malloc(1000000);
        for (int i = 0; i < n; i++) {
            fill(b, len, 0, i);
            MPI_Bsend(b, len, MPI_BYTE, 1, 20 + i, MPI_COMM_WORLD);
        }
        fill(b, 1000000, 0, 99);
        MPI_Bsend(b, 1000000, MPI_BYTE, 1, 30, MPI_COMM_WORLD);
        memset(b, 0, 1000000); /* the buffer is ours again */
        void *p;
        int sz;
        MPI_Buffer_detach(&p, &sz);
        free(attach);
        free(b);
    } else if (rank == 1) {
        unsigned char *b = malloc(1000000);
        for (int i = n - 1; i >= 0; i--) {
            MPI_Recv(b, len, MPI_BYTE, 0, 20 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(bad_byte(b, len, 0, i) == (size_t)-1, "bsend message %d corrupt", i);
        }
        MPI_Recv(b, 1000000, MPI_BYTE, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(bad_byte(b, 1000000, 0, 99) == (size_t)-1, "large bsend corrupt");
        free(b);
    }
    /* Rsend: the receive is posted before the barrier. */
    int v = rank, x = -1;
    MPI_Request r;
    if (rank == 1) MPI_Irecv(&x, 1, MPI_INT, 0, 31, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPI_Rsend(&v, 1, MPI_INT, 1, 31, MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(x == 0, "rsend payload %d", x);
    }
}

static void test_probe(void) {
    begin("probe");
    if (size < 2) return;
    const int n = 300000;
    if (rank == 0) {
        unsigned char *b = malloc(n);
        fill(b, n, 0, 1);
        MPI_Send(b, 1000, MPI_BYTE, 1, 50, MPI_COMM_WORLD);
        MPI_Send(b, n, MPI_BYTE, 1, 51, MPI_COMM_WORLD);
        MPI_Send(b, 10, MPI_BYTE, 1, 52, MPI_COMM_WORLD);
        free(b);
    } else if (rank == 1) {
        MPI_Status st;
        int count, flag = 0;
        MPI_Probe(0, 50, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == 1000 && st.MPI_TAG == 50, "probe: count %d tag %d", count, st.MPI_TAG);
        unsigned char *b = malloc(n);
        MPI_Recv(b, count, MPI_BYTE, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, &flag, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == n && st.MPI_SOURCE == 0, "iprobe: count %d source %d", count, st.MPI_SOURCE);
        MPI_Message msg;
        MPI_Mprobe(0, 51, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(b, n, MPI_BYTE, &msg, &st);
        CHECK(msg == MPI_MESSAGE_NULL, "mrecv did not reset the message handle");
        CHECK(bad_byte(b, n, 0, 1) == (size_t)-1, "mrecv of a rendezvous message corrupt");
        flag = 0;
        while (!flag) MPI_Improbe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
        CHECK(st.MPI_TAG == 52, "improbe tag %d", st.MPI_TAG);
        MPI_Request r;
        MPI_Imrecv(b, 10, MPI_BYTE, &msg, &r);
        MPI_Wait(&r, &st);
        CHECK(bad_byte(b, 10, 0, 1) == (size_t)-1, "imrecv corrupt");
        free(b);
    }
}

/* Single-completion calls leave status.MPI_ERROR as it was (MPI 4.0 3.2.5):
 * only the multiple-completion calls set it. */
static void test_status_error_untouched(void) {
    begin("status_error_untouched");
    if (size < 2) return;
    char b[64] = {0};
    if (rank == 0) {
        for (int i = 0; i < 5; i++) MPI_Send(b, 8, MPI_BYTE, 1, 60 + i, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        int flag = 0;
        MPI_Message msg;
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Probe(0, 60, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "MPI_Probe set MPI_ERROR to %d", st.MPI_ERROR);
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Recv(b, 8, MPI_BYTE, 0, 60, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "MPI_Recv set MPI_ERROR to %d", st.MPI_ERROR);
        st.MPI_ERROR = MPI_ERR_TOPOLOGY;
        while (!flag) MPI_Iprobe(0, 61, MPI_COMM_WORLD, &flag, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY, "MPI_Iprobe set MPI_ERROR to %d", st.MPI_ERROR);
        MPI_Recv(b, 8, MPI_BYTE, 0, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Mprobe(0, 62, MPI_COMM_WORLD, &msg, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "MPI_Mprobe set MPI_ERROR to %d", st.MPI_ERROR);
        st.MPI_ERROR = MPI_ERR_TOPOLOGY;
        MPI_Mrecv(b, 8, MPI_BYTE, &msg, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY, "MPI_Mrecv set MPI_ERROR to %d", st.MPI_ERROR);
        flag = 0;
        st.MPI_ERROR = MPI_ERR_DIMS;
        while (!flag) MPI_Improbe(0, 63, MPI_COMM_WORLD, &flag, &msg, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "MPI_Improbe set MPI_ERROR to %d", st.MPI_ERROR);
        MPI_Mrecv(b, 8, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        MPI_Request r;
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Irecv(b, 8, MPI_BYTE, 0, 64, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "MPI_Wait set MPI_ERROR to %d", st.MPI_ERROR);
    }
}

static void test_cancel(void) {
    begin("cancel");
    int x;
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled, "receive was not cancelled");
    /* A cancelled receive must not swallow a later message with that tag. */
    int v = rank, got = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, rank, 999, &got, 1, MPI_INT, rank, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got == rank, "message after cancel: %d", got);
    /* Cancelling a send may fail ("not cancelled") but must not lose or
     * corrupt the message. */
    if (size >= 2 && rank <= 1) {
        size_t n = 300000;
        unsigned char *b = malloc(n);
        if (rank == 0) {
            fill(b, n, 0, 55);
            MPI_Request sr;
            MPI_Isend(b, (int)n, MPI_BYTE, 1, 998, MPI_COMM_WORLD, &sr);
            MPI_Cancel(&sr);
            MPI_Status sst;
            MPI_Wait(&sr, &sst);
            int sc = 0;
            MPI_Test_cancelled(&sst, &sc);
            int tell = sc;
            MPI_Send(&tell, 1, MPI_INT, 1, 997, MPI_COMM_WORLD);
        } else {
            /* Posted first: a rendezvous send completes only once matched. */
            MPI_Request rr;
            MPI_Irecv(b, (int)n, MPI_BYTE, 0, 998, MPI_COMM_WORLD, &rr);
            int was_cancelled = 0;
            MPI_Recv(&was_cancelled, 1, MPI_INT, 0, 997, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (was_cancelled) MPI_Cancel(&rr);
            MPI_Wait(&rr, MPI_STATUS_IGNORE);
            if (!was_cancelled)
                CHECK(bad_byte(b, n, 0, 55) == (size_t)-1, "message whose send cancel failed is corrupt");
        }
        free(b);
    }
}

static void test_persistent(void) {
    begin("persistent");
    if (size < 2) return;
    size_t n = 1 << 20;
    unsigned char *b = malloc(n);
    MPI_Request r;
    if (rank == 0) MPI_Send_init(b, (int)n, MPI_BYTE, 1, 60, MPI_COMM_WORLD, &r);
    if (rank == 1) MPI_Recv_init(b, (int)n, MPI_BYTE, 0, 60, MPI_COMM_WORLD, &r);
    for (int it = 0; it < 6; it++) {
        size_t len = it % 2 ? n : 100;
        if (rank == 0) fill(b, n, 0, it);
        if (rank <= 1) {
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (rank == 1) CHECK(bad_byte(b, n, 0, it) == (size_t)-1, "iteration %d corrupt", it);
        (void)len;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank <= 1) MPI_Request_free(&r);
    free(b);

    /* A persistent Bsend restarted while its previous round may still be in
     * flight; the receiver takes a later message first, and every round must
     * carry that round's data. */
    if (rank == 0) {
        int bufsize = 4 * (2000 + MPI_BSEND_OVERHEAD) + 4 * ((2 << 20) + MPI_BSEND_OVERHEAD);
        void *attach = malloc((size_t)bufsize);
        MPI_Buffer_attach(attach, bufsize);
        size_t len = 2 << 20;
        unsigned char *d = malloc(len);
        MPI_Request pr;
        MPI_Bsend_init(d, (int)len, MPI_BYTE, 1, 61, MPI_COMM_WORLD, &pr);
        for (int round = 0; round < 3; round++) {
            fill(d, len, 0, 100 + round);
            MPI_Start(&pr);
            MPI_Wait(&pr, MPI_STATUS_IGNORE);
        }
        int marker = 7;
        MPI_Send(&marker, 1, MPI_INT, 1, 62, MPI_COMM_WORLD);
        MPI_Request_free(&pr);
        void *p;
        int sz;
        MPI_Buffer_detach(&p, &sz);
        free(attach);
        free(d);
    } else if (rank == 1) {
        size_t len = 2 << 20;
        unsigned char *d = malloc(len);
        int marker = 0;
        MPI_Recv(&marker, 1, MPI_INT, 0, 62, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(marker == 7, "marker %d", marker);
        for (int round = 0; round < 3; round++) {
            MPI_Recv(d, (int)len, MPI_BYTE, 0, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            size_t bad = bad_byte(d, len, 0, 100 + round);
            CHECK(bad == (size_t)-1, "persistent bsend round %d: byte %zu wrong", round, bad);
        }
        free(d);
    }
}

static void test_datatypes(void) {
    begin("datatypes");
    if (size < 2) return;
    /* Strided vector of doubles: every other element, both below and above
     * the eager limit; received into a contiguous buffer and vice versa. */
    const int counts[] = {10, 100000};
    for (int k = 0; k < 2; k++) {
        int c = counts[k];
        MPI_Datatype vec;
        MPI_Type_vector(c, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        double *strided = calloc((size_t)c * 2, sizeof(double));
        double *flat = calloc((size_t)c, sizeof(double));
        if (rank == 0) {
            for (int i = 0; i < c; i++) strided[2 * i] = i * 1.5 + k;
            MPI_Send(strided, 1, vec, 1, 70, MPI_COMM_WORLD);
            for (int i = 0; i < c; i++) flat[i] = i * 2.5 + k;
            MPI_Send(flat, c, MPI_DOUBLE, 1, 71, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(flat, c, MPI_DOUBLE, 0, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int bad = -1;
            for (int i = 0; i < c && bad < 0; i++)
                if (flat[i] != i * 1.5 + k) bad = i;
            CHECK(bad < 0, "vector->contiguous (%d) wrong at %d", c, bad);
            MPI_Recv(strided, 1, vec, 0, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad = -1;
            for (int i = 0; i < c && bad < 0; i++)
                if (strided[2 * i] != i * 2.5 + k || strided[2 * i + 1] != 0.0) bad = i;
            CHECK(bad < 0, "contiguous->vector (%d) wrong at %d", c, bad);
        }
        free(strided);
        free(flat);
        MPI_Type_free(&vec);
    }
    /* struct with a gap */
    struct rec { int i; double d; char c; };
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(struct rec, i), offsetof(struct rec, d), offsetof(struct rec, c)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st, rt;
    MPI_Type_create_struct(3, bl, disp, types, &st);
    MPI_Type_create_resized(st, 0, sizeof(struct rec), &rt);
    MPI_Type_commit(&rt);
    struct rec recs[50];
    if (rank == 0) {
        for (int i = 0; i < 50; i++) recs[i] = (struct rec){i, i * 0.25, (char)('a' + i % 26)};
        MPI_Send(recs, 50, rt, 1, 72, MPI_COMM_WORLD);
    } else if (rank == 1) {
        memset(recs, 0, sizeof recs);
        MPI_Recv(recs, 50, rt, 0, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int bad = -1;
        for (int i = 0; i < 50 && bad < 0; i++)
            if (recs[i].i != i || recs[i].d != i * 0.25 || recs[i].c != (char)('a' + i % 26)) bad = i;
        CHECK(bad < 0, "struct type wrong at %d", bad);
    }
    MPI_Type_free(&st);
    MPI_Type_free(&rt);
}

static void test_large(size_t mib) {
    begin("large");
    if (size < 2 || mib == 0) return;
    size_t n = mib << 20;
    unsigned char *b = malloc(n);
    if (!b) {
        CHECK(0, "cannot allocate %zu MiB", mib);
        return;
    }
    /* counts are int: send as 1 KiB elements so counts stay small */
    MPI_Datatype kib;
    MPI_Type_contiguous(1024, MPI_BYTE, &kib);
    MPI_Type_commit(&kib);
    if (rank == 0) {
        fill(b, n, 0, 3);
        MPI_Send(b, (int)(n / 1024), kib, 1, 80, MPI_COMM_WORLD);
    } else if (rank == 1) {
        memset(b, 0, n);
        MPI_Status st;
        MPI_Recv(b, (int)(n / 1024), kib, 0, 80, MPI_COMM_WORLD, &st);
        MPI_Count cnt = 0;
        MPI_Get_elements_x(&st, MPI_BYTE, &cnt);
        CHECK((size_t)cnt == n, "large: %lld bytes, want %zu", (long long)cnt, n);
        size_t bad = bad_byte(b, n, 0, 3);
        CHECK(bad == (size_t)-1, "large message corrupt at %zu", bad);
    }
    MPI_Type_free(&kib);
    free(b);
}

static void test_communicators(void) {
    begin("communicators");
    MPI_Comm dup, half, inter;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int v = rank * 10, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup);
    CHECK(sum == 10 * size * (size - 1) / 2, "allreduce on dup: %d", sum);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    int tok = hr, from = -1;
    MPI_Sendrecv(&tok, 1, MPI_INT, (hr + 1) % hs, 1, &from, 1, MPI_INT, (hr + hs - 1) % hs, 1, half,
                 MPI_STATUS_IGNORE);
    CHECK(from == (hr + hs - 1) % hs, "ring on split: %d", from);
    if (size >= 2) {
        /* intercommunicator between the even and odd halves */
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 5, &inter);
        int rsize;
        MPI_Comm_remote_size(inter, &rsize);
        if (hr < rsize) {
            int mine = rank, theirs = -1;
            MPI_Sendrecv(&mine, 1, MPI_INT, hr, 2, &theirs, 1, MPI_INT, hr, 2, inter, MPI_STATUS_IGNORE);
            CHECK(theirs % 2 != rank % 2, "intercomm partner %d has my parity", theirs);
        }
        MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
}

/* Many unexpected messages: with a small pml_dr_unexpected_limit the sender
 * runs out of eager credit and must fall back to data-less rendezvous. */
static void test_flood(void) {
    begin("flood");
    if (size < 2) return;
    const int n = 3000, len = 2000;
    unsigned char *b = malloc((size_t)n * len);
    if (rank == 0) {
        MPI_Request *r = malloc(sizeof(MPI_Request) * n);
        for (int i = 0; i < n; i++) {
            fill(b + (size_t)i * len, len, 0, i);
            MPI_Isend(b + (size_t)i * len, len, MPI_BYTE, 1, 90, MPI_COMM_WORLD, &r[i]);
        }
        MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
        free(r);
    } else if (rank == 1) {
        usleep(300000);
        int bad = -1;
        for (int i = 0; i < n; i++) {
            MPI_Recv(b, len, MPI_BYTE, 0, 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (bad < 0 && bad_byte(b, len, 0, i) != (size_t)-1) bad = i;
        }
        CHECK(bad < 0, "flood message %d wrong (order or data)", bad);
    }
    free(b);
}

static void test_collectives(void) {
    begin("collectives");
    int n = 100000;
    int *a = malloc(sizeof(int) * (size_t)n * (size_t)size), *b = malloc(sizeof(int) * (size_t)n * (size_t)size);
    for (int i = 0; i < n; i++) a[i] = rank == 0 ? i : -1;
    MPI_Bcast(a, n, MPI_INT, 0, MPI_COMM_WORLD);
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (a[i] != i) bad = i;
    CHECK(bad < 0, "bcast wrong at %d", bad);
    for (int i = 0; i < n; i++) a[i] = rank + i;
    MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (b[i] != size * i + size * (size - 1) / 2) bad = i;
    CHECK(bad < 0, "allreduce wrong at %d", bad);
    int per = 5000;
    for (int d = 0; d < size; d++)
        for (int i = 0; i < per; i++) a[d * per + i] = rank * 1000000 + d * 10000 + i % 10000;
    MPI_Alltoall(a, per, MPI_INT, b, per, MPI_INT, MPI_COMM_WORLD);
    bad = -1;
    for (int s = 0; s < size && bad < 0; s++)
        for (int i = 0; i < per && bad < 0; i++)
            if (b[s * per + i] != s * 1000000 + rank * 10000 + i % 10000) bad = s * per + i;
    CHECK(bad < 0, "alltoall wrong at %d", bad);
    MPI_Request r;
    int x = rank == size - 1 ? 4242 : 0;
    MPI_Ibcast(&x, 1, MPI_INT, size - 1, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(x == 4242, "ibcast %d", x);
    int one = 1, total = 0;
    MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(total == size, "iallreduce %d", total);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int s = 0, off = 0; s < size; s++) {
        counts[s] = 10 + s;
        displs[s] = off;
        off += counts[s];
    }
    for (int i = 0; i < counts[rank]; i++) a[i] = rank * 100 + i;
    MPI_Allgatherv(a, counts[rank], MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
    bad = -1;
    for (int s = 0; s < size && bad < 0; s++)
        for (int i = 0; i < counts[s] && bad < 0; i++)
            if (b[displs[s] + i] != s * 100 + i) bad = s;
    CHECK(bad < 0, "allgatherv wrong for source %d", bad);
    free(counts);
    free(displs);
    free(a);
    free(b);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t big = argc > 1 ? (size_t)atol(argv[1]) : 64;
    test_ordering();
    test_any_source_any_tag();
    test_tag_selective();
    test_truncation();
    test_zero_and_self();
    test_ssend();
    test_bsend_rsend();
    test_probe();
    test_status_error_untouched();
    test_cancel();
    test_persistent();
    test_datatypes();
    test_large(big);
    test_communicators();
    test_flood();
    test_collectives();
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0) printf("p2p ok: %d subtests on %d ranks\n", subtests, size);
        else printf("p2p FAILED: %d failures\n", total);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
