/* Causal-profiling test program whose answer is known by construction.
 *
 * Two threads meet at a barrier every round. The "critical" thread spins for 2 units on one
 * line, the "slack" thread for 1 unit on another; a round ends when both arrive, so it lasts
 * 2 units. Making the critical line s % faster makes every round, and the program, s % faster
 * (up to 50 %, where the slack thread becomes critical); making the slack line faster changes
 * nothing. The progress point counts rounds.
 *
 * Usage: barrier SECONDS [UNIT_US]   (default unit 1000 us) */
#include "progress.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t barrier;
static long unit;           /* spin iterations per unit */
static uint64_t deadline;   /* ns */
static volatile int done;   /* written before a barrier, read after it */
static long rounds;

static void* critical(void* arg) {
    (void)arg;
    volatile unsigned long s = 0;
    for (;;) {
        for (long i = 0; i < 2 * unit; i++) s += i; /* CRITICAL: 2 units a round */
        if (now_ns() >= deadline) done = 1;
        pthread_barrier_wait(&barrier);
        PROGRESS("rounds");
        rounds++;
        if (done) return NULL;
    }
}

static void* slack(void* arg) {
    (void)arg;
    volatile unsigned long s = 0;
    for (;;) {
        for (long i = 0; i < unit; i++) s += i; /* SLACK: 1 unit a round */
        pthread_barrier_wait(&barrier);
        if (done) return NULL;
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
