/* The start and the end of a run, as a program linked with libmetron.so sees them.
 *
 *   start_end first    8 threads released together by a barrier; each times its first
 *                      metron_region_begin (CLOCK_MONOTONIC around the call), spins 20 us and
 *                      ends the region; prints the slowest thread's begin in ns.
 *   start_end regions N   records N regions on the main thread and exits (the fixed cost of a
 *                      small process).
 *
 * Built and run by scripts/bench-start-end.sh. */
#include <metron/metron.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 8
#define SPIN_NS 20000

static pthread_barrier_t start_line;
static uint64_t begin_ns[THREADS];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin(uint64_t ns) {
    uint64_t until = now_ns() + ns;
    while (now_ns() < until) {
    }
}

static void* first_region(void* arg) {
    int i = (int)(intptr_t)arg;
    pthread_barrier_wait(&start_line);
    uint64_t before = now_ns();
    metron_region_begin("first");
    uint64_t after = now_ns();
    spin(SPIN_NS);
    metron_region_end("first");
    begin_ns[i] = after - before;
    return NULL;
}

static int first(void) {
    pthread_t threads[THREADS];
    pthread_barrier_init(&start_line, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        if (pthread_create(&threads[i], NULL, first_region, (void*)(intptr_t)i) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    uint64_t slowest = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        if (begin_ns[i] > slowest) slowest = begin_ns[i];
    }
    printf("%llu\n", (unsigned long long)slowest);
    return 0;
}

static int regions(long n) {
    for (long i = 0; i < n; i++) {
        metron_region_begin("work");
        metron_region_end("work");
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc >= 2 && strcmp(argv[1], "first") == 0) return first();
    if (argc >= 3 && strcmp(argv[1], "regions") == 0) return regions(atol(argv[2]));
    fprintf(stderr, "usage: %s first | regions N\n", argv[0]);
    return 2;
}
