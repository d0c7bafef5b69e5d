/* The cost of one metron_region_begin + metron_region_end pair from C through libmetron.so, by
 * name and by id (metron_region_begin_id + metron_region_end_id).
 * Usage: c_overhead [pairs] [both|enabled|stopped]   (default 10,000,000 pairs, both)
 * Prints ns per pair. For instruction counts, run two pair counts under
 * `valgrind --tool=callgrind` and divide the difference (docs/src/performance.md: "C call overhead"). */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */
#include <metron/metron.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Not inlined: callgrind counts this function alone (--toggle-collect=pairs_ns). */
#ifdef __GNUC__
__attribute__((noinline))
#endif
static double pairs_ns(long pairs) {
    long i;
    double t0 = now_ns();
    for (i = 0; i < pairs; i++) {
        metron_region_begin("pair");
        metron_region_end("pair");
    }
    return (now_ns() - t0) / (double)pairs;
}

/* The same by id: the name is interned once, outside the loop. */
#ifdef __GNUC__
__attribute__((noinline))
#endif
static double pairs_id_ns(long pairs) {
    long i;
    double t0;
    METRON_REGION_ID(pair_id, "pair");
    t0 = now_ns();
    for (i = 0; i < pairs; i++) {
        metron_region_begin_id(pair_id);
        metron_region_end_id(pair_id);
    }
    return (now_ns() - t0) / (double)pairs;
}

int main(int argc, char** argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 10000000L;
    const char* mode = argc > 2 ? argv[2] : "both";
    metron_init(NULL);
    pairs_ns(1000); /* warm up: intern the name, attach the thread's buffer */
    pairs_id_ns(1000);
    if (strcmp(mode, "stopped") != 0) {
        printf("c_overhead: enabled: %.2f ns/pair (%ld pairs)\n", pairs_ns(pairs), pairs);
        printf("c_overhead: enabled by id: %.2f ns/pair (%ld pairs)\n", pairs_id_ns(pairs),
               pairs);
    }
    if (strcmp(mode, "enabled") != 0) {
        metron_stop();
        printf("c_overhead: collection stopped: %.2f ns/pair (%ld pairs)\n", pairs_ns(pairs),
               pairs);
        printf("c_overhead: collection stopped, by id: %.2f ns/pair (%ld pairs)\n",
               pairs_id_ns(pairs), pairs);
    }
    return 0;
}
