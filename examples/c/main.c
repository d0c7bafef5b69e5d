/* A small "solver" instrumented with Metron's C API: nested regions, a perf marker with a
 * group, a region with typed annotations, a counter, a mark, and worker threads.
 *
 * Summary (merged over threads): setup 1; iteration 10 > solve 10 > kernel 10;
 * worker 4 > chunk 100; counter residual x10; mark converged x1. */
#include <metron/metron.h>

#include <pthread.h>
#include <stdio.h>

#define WORKERS 4
#define CHUNKS 25
#define ITERATIONS 10

static volatile double sink;

static double work(int n) {
    double acc = 0.0;
    int i;
    for (i = 1; i <= n; i++) {
        acc += 1.0 / (double)i;
    }
    return acc;
}

static void* worker(void* arg) {
    int id = *(const int*)arg;
    int c;
    char name[32];
    snprintf(name, sizeof name, "worker-%d", id);
    METRON_THREAD_NAME(name);
    METRON_REGION_BEGIN("worker");
    for (c = 0; c < CHUNKS; c++) {
        METRON_REGION_BEGIN("chunk");
        sink = work(2000);
        METRON_REGION_END("chunk");
    }
    METRON_REGION_END("worker");
    return NULL;
}

int main(void) {
    pthread_t threads[WORKERS];
    int ids[WORKERS];
    double residual = 1.0;
    int i;
    metron_init_args args = {0};
    args.struct_size = sizeof args;
    METRON_INIT(&args); /* optional: Metron also starts on the first call */

    METRON_REGION_BEGIN("setup");
    sink = work(10000);
    METRON_REGION_END("setup");

    for (i = 0; i < ITERATIONS; i++) {
        metron_annotation notes[3];
        notes[0].key = "iteration";
        notes[0].type = METRON_ANNOTATION_INT64;
        notes[0].reserved = 0;
        notes[0].value.int64 = i;
        notes[1].key = "method";
        notes[1].type = METRON_ANNOTATION_STRING;
        notes[1].reserved = 0;
        notes[1].value.string = "jacobi";
        notes[2].key = "tolerance";
        notes[2].type = METRON_ANNOTATION_DOUBLE;
        notes[2].reserved = 0;
        notes[2].value.float64 = 1e-6;

        METRON_REGION_BEGIN("iteration");
        METRON_PERF_MARKER_BEGIN("solve", "numerics");
        METRON_PUSH("kernel", notes, 3);
        sink = work(5000);
        residual *= 0.5;
        METRON_POP();
        METRON_PERF_MARKER_END();
        METRON_COUNTER("residual", residual);
        METRON_REGION_END("iteration");
    }
    METRON_MARK("converged");

    for (i = 0; i < WORKERS; i++) {
        ids[i] = i;
        pthread_create(&threads[i], NULL, worker, &ids[i]);
    }
    for (i = 0; i < WORKERS; i++) {
        pthread_join(threads[i], NULL);
    }
    printf("c_example: residual %g\n", residual);
    return 0;
}
