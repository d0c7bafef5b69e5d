/* 8 threads push and pop from C: per thread, 200 x work > (3 x step, 1 x leaf). Mirrors the
 * Rust half of c_api_threads.rs. */
#include <metron/metron.h>

#include <pthread.h>
#include <stdio.h>

#define THREADS 8

static void* body(void* arg) {
    int i, k;
    metron_annotation note;
    note.key = "thread";
    note.type = METRON_ANNOTATION_UINT64;
    note.reserved = 0;
    note.value.uint64 = (uint64_t)(size_t)arg;
    for (i = 0; i < 200; i++) {
        if (metron_push("work", &note, 1) != METRON_OK) return (void*)1;
        for (k = 0; k < 3; k++) {
            metron_push("step", NULL, 0);
            metron_pop();
        }
        metron_region_begin("leaf");
        metron_region_end("leaf");
        if (metron_pop() != METRON_OK) return (void*)1;
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    size_t i;
    void* result;
    int failed = 0;
    for (i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, body, (void*)i);
    for (i = 0; i < THREADS; i++) {
        pthread_join(t[i], &result);
        failed |= result != NULL;
    }
    return failed;
}
