/* Causal-profiling test program: lines that do their work in a function they call.
 *
 * The barrier program's construction (barrier.c), with both threads' spinning done by one
 * function, `spin`, that each calls from its own line: the critical thread calls it for 2
 * units a round (CRITICAL_CALL), the slack thread for 1 unit (SLACK_CALL). A call costs what
 * its callee costs, so making the critical thread's call s % faster makes the program s %
 * faster (up to 50 %), and making the slack thread's call faster changes nothing. A sample
 * inside `spin` is a sample of `spin`'s loop line, and it speeds up a selected call line that
 * is on its stack (Coz's rule); a profiler that looked only at the innermost line would never
 * see the call lines run.
 *
 * Usage: callee SECONDS [UNIT_US] */
#include "progress.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t barrier;
static long unit;
static uint64_t deadline;
static volatile long last_round = -1;
static long rounds;

__attribute__((noinline)) static void spin(long n) {
    volatile unsigned long s = 0;
    for (long i = 0; i < n; i++) s += i; /* SPIN: both threads' work */
    __asm__ volatile("" ::: "memory"); /* not a tail call: the caller's frame stays */
}

static void* critical(void* arg) {
    (void)arg;
    for (long r = 0;; r++) {
        spin(2 * unit); /* CRITICAL_CALL: 2 units a round */
        int stop = now_ns() >= deadline;
        if (stop) last_round = r;
        pthread_barrier_wait(&barrier);
        PROGRESS("rounds");
        rounds++;
        if (stop) return NULL;
    }
}

static void* slack(void* arg) {
    (void)arg;
    for (long r = 0;; r++) {
        spin(unit); /* SLACK_CALL: 1 unit a round */
        pthread_barrier_wait(&barrier);
        if (last_round == r) return NULL;
    }
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    long unit_us = argc > 2 ? atol(argv[2]) : 1000;
    unit = spins_per_us() * unit_us;
    deadline = now_ns() + (uint64_t)(seconds * 1e9);
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t a, b;
    pthread_create(&a, NULL, critical, NULL);
    pthread_create(&b, NULL, slack, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("rounds %ld\n", rounds);
    return 0;
}
