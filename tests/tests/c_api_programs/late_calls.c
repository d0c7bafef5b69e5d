/* Metron calls from a thread's last moments: a pthread key destructor (which runs after the
 * thread's thread-local destructors, Metron's included) begins and ends regions through the
 * header's inline path and through the library, on 64 threads one after another (so that the
 * states of threads already gone are freed while later threads run).
 * Prints how many calls returned METRON_OK in the threads' bodies and in their last moments
 * (where a call may also be refused with an error code; it must never crash or touch freed
 * memory: the test runs this under valgrind too). */
#include <metron/metron.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 64

static pthread_key_t key;
static metron_id late_id;
static int ok_in_body, ok_at_end;
static __thread int at_end;

static void check(metron_status s) {
    if (s == METRON_OK) __atomic_add_fetch(at_end ? &ok_at_end : &ok_in_body, 1, __ATOMIC_RELAXED);
}

static void at_thread_end(void *arg) {
    (void)arg;
    at_end = 1;
    check(METRON_REGION_BEGIN_ID(late_id));
    check(METRON_REGION_END_ID(late_id));
    check(metron_region_begin("late-by-name"));
    check(metron_region_end("late-by-name"));
}

static void *worker(void *arg) {
    (void)arg;
    pthread_setspecific(key, (void *)1);
    check(METRON_REGION_BEGIN_ID(late_id));
    check(metron_region_begin("worker"));
    check(metron_region_end("worker"));
    check(METRON_REGION_END_ID(late_id));
    return NULL;
}

int main(void) {
    pthread_key_create(&key, at_thread_end);
    late_id = metron_region_id("late-by-id");
    for (int i = 0; i < THREADS; i++) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_join(t, NULL);
    }
    printf("ok_in_body=%d\nok_at_end=%d\n", ok_in_body, ok_at_end);
    return 0;
}
