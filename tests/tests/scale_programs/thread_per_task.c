/* A thread per task: THREADS threads (default 20,000) created and joined one after another,
 * each recording 10 regions. Prints its own peak RSS (getrusage) in KiB at the end, so a test
 * can compare it with the same program's peak without Metron (METRON_DISABLE builds). */
#include <metron/metron.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static volatile unsigned long sink;

static void *task(void *arg) {
    (void)arg;
    METRON_REGION_BEGIN("task");
    for (int i = 0; i < 9; i++) {
        METRON_REGION_BEGIN("step");
        for (int k = 0; k < 200; k++) sink += (unsigned long)k;
        METRON_REGION_END("step");
    }
    METRON_REGION_END("task");
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 20000;
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, task, NULL) != 0) return 1;
        pthread_join(t, NULL);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("threads=%d peak_rss_kib=%ld\n", threads, usage.ru_maxrss);
    return 0;
}
