/* A program of many distinct call stacks: 24 functions call each other along paths chosen by a
 * deterministic pseudo-random generator (a fixed-seed LCG), 30 to 55 calls deep, and spin at the
 * bottom. Built with frame pointers, it gives a sampler thousands of distinct stacks.
 * Usage: deepstacks SECONDS (CPU seconds of work, default 2). */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t state = 0x9E3779B97F4A7C15ull;
static volatile uint64_t sink;

static unsigned next(void) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(state >> 33);
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

typedef void (*step_fn)(int depth, int target);
static step_fn steps[24];

static void work(void) {
    uint64_t x = state;
    for (int i = 0; i < 20000; i++) x = x * 2862933555777941757ull + 3037000493ull;
    sink += x;
}

#define STEP(N)                                                   \
    __attribute__((noinline)) static void f##N(int depth, int target) { \
        if (depth >= target) {                                    \
            work();                                               \
        } else {                                                  \
            steps[next() % 24](depth + 1, target);                \
        }                                                         \
        sink += (uint64_t)depth;                                  \
    }
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)
STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23)

int main(int argc, char **argv) {
    step_fn all[24] = {f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11,
                       f12, f13, f14, f15, f16, f17, f18, f19, f20, f21, f22, f23};
    for (int i = 0; i < 24; i++) steps[i] = all[i];
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    double start = cpu_seconds();
    unsigned long paths = 0;
    while (cpu_seconds() - start < seconds) {
        int target = 30 + (int)(next() % 26);
        steps[next() % 24](1, target);
        paths++;
    }
    printf("paths=%lu\n", paths);
    return 0;
}
