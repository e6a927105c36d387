/*
 * pvars: reads pml dr's MPI_T performance variables after some traffic.
 *
 *   pvars name [name ...]
 *
 * Every rank binds a handle to each named performance variable (e.g.
 * pml_dr_frames_sent, bound to MPI_COMM_WORLD: one value per rank), exchanges
 * 200 messages of 1 B .. 64 KiB with its neighbours in a ring, then reads the
 * handles (MPI_T counters count from when their handle was bound) and prints
 *   "pvar <name> rank R: v0 v1 ... v(n-1)"
 * and "pvars ok" on rank 0 at the end. A variable that does not exist, has
 * the wrong class or binding, or fails to read makes the program exit 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pvar {
    const char* name;
    MPI_T_pvar_handle handle;
    int count;
};

static MPI_T_pvar_session session;
static MPI_Comm world;

static int bind_pvar(struct pvar* p, int size) {
    int index = -1;
    if (MPI_T_pvar_get_index(p->name, MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS) {
        fprintf(stderr, "pvars: no counter named %s\n", p->name);
        return 1;
    }
    int bind = 0;
    char vname[256], desc[1024];
    int vlen = sizeof vname, dlen = sizeof desc, verbosity, var_class, readonly, continuous, atomic;
    MPI_Datatype dt;
    MPI_T_enum en;
    MPI_T_pvar_get_info(index, vname, &vlen, &verbosity, &var_class, &dt, &en, desc, &dlen, &bind,
                        &readonly, &continuous, &atomic);
    void* obj = bind == MPI_T_BIND_MPI_COMM ? (void*)&world : NULL;
    if (MPI_T_pvar_handle_alloc(session, index, obj, &p->handle, &p->count) != MPI_SUCCESS) {
        fprintf(stderr, "pvars: cannot bind %s\n", p->name);
        return 1;
    }
    if (bind == MPI_T_BIND_MPI_COMM && p->count != size) {
        fprintf(stderr, "pvars: %s has %d values for %d ranks\n", p->name, p->count, size);
        return 1;
    }
    if (!continuous && MPI_T_pvar_start(session, p->handle) != MPI_SUCCESS)
        return 1;
    return 0;
}

static int read_pvar(struct pvar* p, int rank) {
    unsigned long long* v = calloc((size_t)p->count, sizeof *v);
    if (MPI_T_pvar_read(session, p->handle, v) != MPI_SUCCESS) {
        fprintf(stderr, "pvars: cannot read %s\n", p->name);
        free(v);
        return 1;
    }
    printf("pvar %s rank %d:", p->name, rank);
    for (int i = 0; i < p->count; ++i)
        printf(" %llu", v[i]);
    printf("\n");
    free(v);
    MPI_T_pvar_handle_free(session, &p->handle);
    return 0;
}

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    world = MPI_COMM_WORLD;
    MPI_T_pvar_session_create(&session);
    const int n = argc - 1;
    struct pvar* vars = calloc((size_t)n + 1, sizeof *vars);
    int errors = 0;
    for (int i = 0; i < n; ++i) {
        vars[i].name = argv[i + 1];
        errors += bind_pvar(&vars[i], size);
    }
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const int max_len = 1 << 16;
    char* out = malloc(max_len);
    char* in = malloc(max_len);
    memset(out, rank, max_len);
    for (int i = 0; i < 200; ++i) {
        const int len = 1 << (i % 17);
        MPI_Sendrecv(out, len, MPI_BYTE, next, 1, in, len, MPI_BYTE, prev, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < n && errors == 0; ++i)
        errors += read_pvar(&vars[i], rank);
    MPI_T_pvar_session_free(&session);
    free(vars);
    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf("pvars ok\n");
    free(out);
    free(in);
    MPI_T_finalize();
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
