/* The test programs' progress points: Metron's header, or Coz's with -DUSE_COZ (the same
 * program, unchanged, under `coz run` or `metron causal`). */
#ifndef CAUSAL_PROGRESS_H
#define CAUSAL_PROGRESS_H
#ifdef USE_COZ
#include <coz.h>
#define PROGRESS(name) COZ_PROGRESS_NAMED(name)
#define REGION_BEGIN(name)
#define REGION_END(name)
#else
#include <metron/metron.h>
#define PROGRESS(name) METRON_PROGRESS(name)
#define REGION_BEGIN(name) METRON_REGION_BEGIN(name)
#define REGION_END(name) METRON_REGION_END(name)
#endif
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Iterations of a `spin` loop per microsecond on this machine (the least time of a few
 * tries, so a preempted try does not count), or $CAUSAL_SPINS_PER_US when set: runs that are
 * compared with each other's baselines (compare-coz.sh's fixed mode) must spin the same. */
static inline long spins_per_us(void) {
    const char* fixed = getenv("CAUSAL_SPINS_PER_US");
    if (fixed && atol(fixed) > 0) return atol(fixed);
    volatile unsigned long s = 0;
    uint64_t best = UINT64_MAX;
    const long n = 2000000;
    for (int t = 0; t < 5; t++) {
        uint64_t t0 = now_ns();
        for (long i = 0; i < n; i++) s += i;
        uint64_t d = now_ns() - t0;
        if (d < best) best = d;
    }
    long per_us = (long)(n * 1000 / (best ? best : 1));
    return per_us > 0 ? per_us : 1;
}
#endif
