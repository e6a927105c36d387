/* A rank dies while the others wait in MPI_Finalize's fence: rank 1 kills
 * itself (SIGKILL) a second after MPI_Init, when the other ranks are
 * already inside MPI_Finalize. Run with --enable-recovery (ORTE then does not
 * kill the job itself): the PMIx server must fail the fence for the
 * survivors instead of letting them wait forever. Each survivor prints
 * "rank R finalize rc N" if it gets that far. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        usleep(1000000);
        printf("rank 1 dies mid-fence\n");
        fflush(stdout);
        kill(getpid(), SIGKILL);
    }
    int rc = MPI_Finalize();
    printf("rank %d finalize rc %d\n", rank, rc);
    return 0;
}
