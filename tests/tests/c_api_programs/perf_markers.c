/* Nested perf markers on two threads, for the .atp Perfmarker section (export_formats.rs).
 * Prints main_tid=N and worker_tid=N. The expected sequence of each thread is written out in
 * the test; keep the two in step. */
#include <metron/metron.h>

#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        if ((call) != METRON_OK) {                                                       \
            fprintf(stderr, "%s failed: %s\n", #call, metron_last_error());             \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

static long worker_tid;

static void* worker(void* arg) {
    int i;
    (void)arg;
    worker_tid = (long)syscall(SYS_gettid);
    if (metron_perf_marker_begin("worker", "compute") != METRON_OK) return (void*)1;
    for (i = 0; i < 3; i++) {
        if (metron_perf_marker_begin("step", NULL) != METRON_OK) return (void*)1;
        if (metron_perf_marker_end() != METRON_OK) return (void*)1;
    }
    if (metron_perf_marker_end() != METRON_OK) return (void*)1;
    return NULL;
}

int main(void) {
    int i;
    pthread_t t;
    void* result = NULL;
    for (i = 0; i < 2; i++) {
        CHECK(metron_perf_marker_begin("frame", "render"));
        CHECK(metron_perf_marker_begin("upload", "copy"));
        CHECK(metron_perf_marker_end());
        CHECK(metron_perf_marker_begin("draw", NULL));
        CHECK(metron_perf_marker_begin("draw inner \"quoted\"", "render pass"));
        CHECK(metron_perf_marker_end());
        CHECK(metron_perf_marker_end());
        CHECK(metron_perf_marker_end());
    }
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    if (pthread_join(t, &result) != 0 || result != NULL) return 1;
    printf("main_tid=%ld\n", (long)syscall(SYS_gettid));
    printf("worker_tid=%ld\n", worker_tid);
    return 0;
}
