/* An MPI program with a built-in 3:1 imbalance, for tests/tests/mpi_merge.rs.
 *
 * Every rank does STEPS steps of: `compute` (UNITS calls of `work_unit`, a fixed amount of
 * arithmetic; rank 2 makes 3x as many calls), `exchange` (a ring: MPI_Isend of BYTES bytes to
 * rank+1, MPI_Recv from rank-1, MPI_Wait) and `allreduce` (MPI_Allreduce of one double).
 * The work is deterministic CPU work, so its CPU time is 3:1 however loaded the machine is
 * (each rank ends with the counter `compute_cpu_ns`: the thread CPU time of its compute
 * regions); the region counts are exactly 3:1. Even steps post MPI_Isend, then MPI_Recv
 * and MPI_Wait on the send; odd steps post MPI_Irecv, then MPI_Send and MPI_Wait on the
 * receive. Before the loop: one MPI_Bcast (8 bytes from rank 0) and a warm-up ring of 64
 * bytes (tag 1000) posted with MPI_Irecv/MPI_Isend and completed by MPI_Waitall. One
 * MPI_Barrier after.
 *
 * Usage: imbalance [units-per-step]   (default 200) */
#include <metron/metron.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEPS 10
#define BYTES 4096
#define SPIN 20000

static volatile double sink;

static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void work_unit(void) {
    double x = 1.0;
    int i;
    metron_region_begin("work_unit");
    for (i = 0; i < SPIN; i++) {
        x = x * 1.0000001 + 1e-9;
    }
    sink = x;
    metron_region_end("work_unit");
}

int main(int argc, char **argv) {
    int rank, size, step, u, units;
    static char out_buf[BYTES], in_buf[BYTES];
    double local, global = 0.0, cpu_ns = 0.0, cpu0;
    MPI_Request request, warm[2];
    long seed = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    units = argc > 1 ? atoi(argv[1]) : 200;
    if (rank == 2) units *= 3;
    memset(out_buf, rank, sizeof out_buf);

    if (rank == 0) seed = 42;
    MPI_Bcast(&seed, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Irecv(in_buf, 64, MPI_BYTE, (rank + size - 1) % size, 1000, MPI_COMM_WORLD, &warm[0]);
    MPI_Isend(out_buf, 64, MPI_BYTE, (rank + 1) % size, 1000, MPI_COMM_WORLD, &warm[1]);
    MPI_Waitall(2, warm, MPI_STATUSES_IGNORE);
    metron_region_begin("main_loop");
    for (step = 0; step < STEPS; step++) {
        metron_region_begin("compute");
        cpu0 = thread_cpu_ns();
        for (u = 0; u < units; u++) work_unit();
        cpu_ns += thread_cpu_ns() - cpu0;
        metron_region_end("compute");

        metron_region_begin("exchange");
        if (step % 2 == 0) {
            MPI_Isend(out_buf, BYTES, MPI_BYTE, (rank + 1) % size, step, MPI_COMM_WORLD,
                      &request);
            MPI_Recv(in_buf, BYTES, MPI_BYTE, (rank + size - 1) % size, step, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Irecv(in_buf, BYTES, MPI_BYTE, MPI_ANY_SOURCE, step, MPI_COMM_WORLD, &request);
            MPI_Send(out_buf, BYTES, MPI_BYTE, (rank + 1) % size, step, MPI_COMM_WORLD);
        }
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        metron_region_end("exchange");

        metron_region_begin("allreduce");
        local = (double)in_buf[0];
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        metron_region_end("allreduce");
    }
    metron_region_end("main_loop");
    metron_counter("compute_cpu_ns", cpu_ns);
    MPI_Barrier(MPI_COMM_WORLD);
    if (seed != 42) return 1;
    if (rank == 0) printf("ranks %d sum %.0f\n", size, global);
    MPI_Finalize();
    return 0;
}
