/* Causal-profiling test program whose answer is known by construction.
 *
 * Two threads meet at a barrier every round. The "critical" thread spins for 2 units on one
 * line, the "slack" thread for 1 unit on another; a round ends when both arrive, so it lasts
 * 2 units. Making the critical line s % faster makes every round, and the program, s % faster
 * (up to 50 %, where the slack thread becomes critical); making the slack line faster changes
 * nothing. The progress point counts rounds; the critical thread's round is also a Metron
 * region, "round" (a latency point with `--latency round`: one round always in flight, so its
 * latency is the round's length and follows the same construction).
 *
 * Usage: barrier SECONDS [UNIT_US [ROUNDS]]   (default unit 1000 us; with ROUNDS > 0, stop
 * after that many rounds instead, for overhead measurements), or barrier calibrate (prints
 * the spins per microsecond, which CAUSAL_SPINS_PER_US then fixes for several runs) */
#include "progress.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_barrier_t barrier;
static long unit;           /* spin iterations per unit */
static uint64_t deadline;   /* ns */
/* The round after which both threads stop, written by the critical thread before that round's
 * barrier (-1 until then). A round number rather than a flag: the slack thread may read it
 * late (after the critical thread has begun the next round, e.g. while it takes a delay). */
static volatile long last_round = -1;
static long rounds;
static long max_rounds;     /* 0: until the deadline */

static void* critical(void* arg) {
    (void)arg;
    volatile unsigned long s = 0;
    for (long r = 0;; r++) {
        REGION_BEGIN("round");
        for (long i = 0; i < 2 * unit; i++) s += i; /* CRITICAL: 2 units a round */
        int stop = max_rounds ? r + 1 >= max_rounds : now_ns() >= deadline;
        if (stop) last_round = r;
        pthread_barrier_wait(&barrier);
        REGION_END("round");
        PROGRESS("rounds");
        rounds++;
        if (stop) return NULL;
    }
}

static void* slack(void* arg) {
    (void)arg;
    volatile unsigned long s = 0;
    for (long r = 0;; r++) {
        for (long i = 0; i < unit; i++) s += i; /* SLACK: 1 unit a round */
        pthread_barrier_wait(&barrier);
        if (last_round == r) return NULL;
    }
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "calibrate") == 0) {
        printf("%ld\n", spins_per_us()); /* for CAUSAL_SPINS_PER_US */
        return 0;
    }
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    long unit_us = argc > 2 ? atol(argv[2]) : 1000;
    max_rounds = argc > 3 ? atol(argv[3]) : 0;
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
