/* A library that uses MPI, loaded by local_main.c with dlopen(RTLD_LOCAL): the MPI library
 * comes in as its dependency, outside the global symbol scope, where Metron's interposition
 * must still find the PMPI functions. Rank 0 sends 7 to rank 1 (tag 5). */
#include <mpi.h>

int run(void) {
    int rank, v = 0;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        v = 7;
        MPI_Send(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return rank == 1 && v != 7;
}
