/* Causal-profiling robustness program: every round starts a short-lived worker thread (its
 * work line runs only in threads created during experiments; 5 ms of work, as a thread must
 * run for at least one sampling period, 1 ms of CPU, to be sampled at all), joins it, and now and then
 * forks a child that works and exits. The run must end normally with experiments on the
 * worker's line; the children run without causal profiling.
 *
 * Usage: churn SECONDS */
#include "progress.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static long unit;

static void* worker(void* arg) {
    (void)arg;
    volatile unsigned long s = 0;
    for (long i = 0; i < unit; i++) s += i; /* WORKER: 5 ms per thread */
    return NULL;
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    unit = spins_per_us() * 5000;
    uint64_t deadline = now_ns() + (uint64_t)(seconds * 1e9);
    long rounds = 0, children = 0;
    while (now_ns() < deadline) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_join(t, NULL);
        PROGRESS("rounds");
        if (++rounds % 50 == 0) {
            pid_t pid = fork();
            if (pid == 0) {
                worker(NULL);
                _exit(0);
            }
            int status;
            waitpid(pid, &status, 0);
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0) children++;
        }
    }
    printf("rounds %ld children %ld\n", rounds, children);
    return 0;
}
