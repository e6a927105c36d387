/* Hostile clients against the pmix dr server of this job: rank 0 opens
 * extra connections to its own server (DR_PMIX_SERVER_URI) and sends
 * malformed or forged requests. Each must be met by the server closing that
 * connection, while the job itself carries on: the program then runs a
 * barrier and an allreduce and prints "garbage ok N".
 * Without a dr server (stock pmix) it only prints "no dr server". */
#include <errno.h>
#include <mpi.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int open_server(const char *path) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof addr.sun_path)
        return -1;
    memcpy(addr.sun_path, path, n);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    if (path[0] == '@') {
        addr.sun_path[0] = '\0';
        len--;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, len) != 0) {
        perror("connect");
        exit(2);
    }
    return fd;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void header(uint8_t *h, uint8_t version, uint8_t type, uint32_t length) {
    put32(h, 0x44525058u); /* "DRPX" */
    h[4] = version;
    h[5] = type;
    h[6] = h[7] = 0;
    put32(h + 8, length);
    put32(h + 12, 1);
}

/* Sends the bytes and expects the server to hang up within 10 s. */
static void expect_closed(const char *path, const char *what, const uint8_t *msg, size_t n) {
    int fd = open_server(path);
    if (n > 0 && send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n) {
        perror("send");
        exit(2);
    }
    struct pollfd p = {fd, POLLIN, 0};
    char buf[256];
    int rc = poll(&p, 1, 10000);
    ssize_t got = rc > 0 ? recv(fd, buf, sizeof buf, 0) : -1;
    if (rc <= 0 || got > 0) {
        fprintf(stderr, "%s: the server did not close the connection (poll %d, recv %zd)\n", what,
                rc, got);
        exit(3);
    }
    printf("closed: %s\n", what);
    close(fd);
}

static void hello(uint8_t *m, uint32_t jobid, uint32_t vpid, uint64_t secret) {
    header(m, 1, 1, 16);
    put32(m + 16, jobid);
    put32(m + 20, vpid);
    put32(m + 24, (uint32_t)(secret >> 32));
    put32(m + 28, (uint32_t)secret);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *path = getenv("DR_PMIX_SERVER_URI");
    const char *proc = getenv("DR_PMIX_PROC");
    const char *secret_hex = getenv("DR_PMIX_SECRET");
    if (rank == 0 && path == NULL)
        printf("no dr server\n");
    if (rank == 0 && path != NULL && proc != NULL && secret_hex != NULL) {
        unsigned jobid, vpid;
        sscanf(proc, "%u.%u", &jobid, &vpid);
        uint64_t secret = strtoull(secret_hex, NULL, 16);
        uint8_t m[64];

        memset(m, 0xA5, sizeof m);
        expect_closed(path, "bad magic", m, 16);
        header(m, 9, 1, 16);
        expect_closed(path, "unknown version", m, 16);
        header(m, 1, 200, 0);
        expect_closed(path, "unknown type", m, 16);
        header(m, 1, 1, 0xFFFFFFF0u);
        expect_closed(path, "oversized length", m, 16);
        header(m, 1, 3, 0);
        expect_closed(path, "request before hello", m, 16);
        hello(m, jobid, vpid, secret ^ 1);
        expect_closed(path, "wrong secret", m, 32);
        hello(m, jobid, 4000000, secret);
        expect_closed(path, "unregistered process", m, 32);
        hello(m, jobid, vpid, secret);
        expect_closed(path, "second connection of a connected client", m, 32);
        hello(m, jobid, vpid, secret);
        put32(m + 8, 12);
        expect_closed(path, "truncated hello", m, 28);

        /* Silent callers: past the server's bound (64) the oldest is closed. */
        int silent[70];
        for (int i = 0; i < 70; ++i)
            silent[i] = open_server(path);
        struct pollfd p = {silent[0], POLLIN, 0};
        char c;
        if (poll(&p, 1, 10000) <= 0 || recv(silent[0], &c, 1, 0) != 0) {
            fprintf(stderr, "silent connections: the oldest was not closed\n");
            exit(3);
        }
        printf("closed: oldest of 70 silent connections\n");
        for (int i = 0; i < 70; ++i)
            close(silent[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size) {
        fprintf(stderr, "allreduce gave %d\n", sum);
        return 4;
    }
    if (rank == 0)
        printf("garbage ok %d\n", size);
    MPI_Finalize();
    return 0;
}
