/* 4,000 threads one after another, each with a region by name and one through the header's
 * inline path: each makes its per-thread state (about 19 KB, on the heap), which must be freed
 * once the thread is gone. Prints the heap in use (mallinfo2) after 1,000 and 4,000 threads. */
#define _GNU_SOURCE
#include <malloc.h>
#include <metron/metron.h>
#include <pthread.h>
#include <stdio.h>

static void *worker(void *arg) {
    (void)arg;
    metron_region_begin("churn");
    metron_region_end("churn");
    METRON_REGION_BEGIN("churn-literal");
    METRON_REGION_END("churn-literal");
    return NULL;
}

int main(void) {
    for (int i = 1; i <= 4000; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
        pthread_join(t, NULL);
        if (i == 1000 || i == 4000) printf("heap_after_%d=%zu\n", i, mallinfo2().uordblks);
    }
    return 0;
}
