/*
 * noop: MPI_Init and MPI_Finalize, nothing else, no output. The launch-time
 * benchmark times whole jobs of it: start-up exchange, barrier and teardown.
 */
#include <mpi.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
