/* Every kind of bad input, on the main thread, while a second thread records cleanly.
 * Checks each status; exits 1 on an unexpected one. Expected summary of the clean thread:
 * clean 1000 > inner 1000. Main thread: kept 1 (the region that stays valid). */
#include <metron/metron.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(metron_status got, metron_status want, const char* what) {
    if (got != want) {
        fprintf(stderr, "%s: got %d (%s), want %d; last error: %s\n", what, (int)got,
                metron_status_string(got), (int)want, metron_last_error());
        failures++;
    }
}

static void* clean(void* arg) {
    int i;
    (void)arg;
    for (i = 0; i < 1000; i++) {
        metron_region_begin("clean");
        metron_region_begin("inner");
        metron_region_end("inner");
        metron_region_end("clean");
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    metron_annotation bad;
    metron_init_args args;
    pthread_create(&t, NULL, clean, NULL);

    /* NULL arguments: 12 */
    expect(metron_region_begin(NULL), METRON_ERROR_NULL_ARGUMENT, "begin(NULL)");
    expect(metron_region_end(NULL), METRON_ERROR_NULL_ARGUMENT, "end(NULL)");
    expect(metron_perf_marker_begin(NULL, "g"), METRON_ERROR_NULL_ARGUMENT, "marker(NULL)");
    expect(metron_push(NULL, NULL, 0), METRON_ERROR_NULL_ARGUMENT, "push(NULL)");
    expect(metron_push("p", NULL, 2), METRON_ERROR_NULL_ARGUMENT, "push(annotations NULL)");
    expect(metron_mark(NULL), METRON_ERROR_NULL_ARGUMENT, "mark(NULL)");
    expect(metron_counter(NULL, 1.0), METRON_ERROR_NULL_ARGUMENT, "counter(NULL)");
    expect(metron_set_thread_name(NULL), METRON_ERROR_NULL_ARGUMENT, "thread name(NULL)");
    expect(metron_annotate(NULL), METRON_ERROR_NULL_ARGUMENT, "annotate(NULL)");
    expect(metron_annotate_int64(NULL, 1), METRON_ERROR_NULL_ARGUMENT, "annotate_int64(NULL)");
    expect(metron_annotate_string("k", NULL), METRON_ERROR_NULL_ARGUMENT, "annotate_string(k, NULL)");
    expect(metron_region_begin(NULL), METRON_ERROR_NULL_ARGUMENT, "begin(NULL) again");

    /* End without begin: 4 (+1 annotate with nothing open) */
    expect(metron_region_end("never"), METRON_ERROR_NO_OPEN_REGION, "end without begin");
    expect(metron_pop(), METRON_ERROR_NO_OPEN_REGION, "pop without push");
    expect(metron_perf_marker_end(), METRON_ERROR_NO_OPEN_REGION, "marker end without begin");
    expect(metron_region_end("never"), METRON_ERROR_NO_OPEN_REGION, "end without begin again");
    expect(metron_annotate_int64("k", 1), METRON_ERROR_NO_OPEN_REGION, "annotate with nothing open");

    /* Mismatched ends: 4 */
    expect(metron_region_begin("kept"), METRON_OK, "begin kept");
    expect(metron_region_end("other"), METRON_ERROR_MISMATCHED_END, "end other");
    expect(metron_pop(), METRON_ERROR_MISMATCHED_END, "pop on a region");
    expect(metron_perf_marker_end(), METRON_ERROR_MISMATCHED_END, "marker end on a region");
    expect(metron_push("p", NULL, 0), METRON_OK, "push");
    expect(metron_region_end("p"), METRON_ERROR_MISMATCHED_END, "region_end on a push");
    expect(metron_pop(), METRON_OK, "pop");
    expect(metron_region_end("kept"), METRON_OK, "end kept");

    /* Invalid arguments: 3 */
    memset(&args, 0, sizeof args);
    expect(metron_init(&args), METRON_ERROR_INVALID_ARGUMENT, "init struct_size 0");
    memset(&bad, 0, sizeof bad);
    bad.key = "k";
    bad.type = 99;
    expect(metron_push("p", &bad, 1), METRON_ERROR_INVALID_ARGUMENT, "push bad type");
    expect(metron_region_begin("x"), METRON_OK, "begin x");
    expect(metron_annotate(&bad), METRON_ERROR_INVALID_ARGUMENT, "annotate bad type");
    expect(metron_region_end("x"), METRON_OK, "end x");

    if (strlen(metron_status_string(METRON_ERROR_MISMATCHED_END)) == 0) failures++;
    if (strstr(metron_status_string(1234), "unknown") == NULL) failures++;

    pthread_join(t, NULL);
    printf("failures %d\n", failures);
    return failures ? 1 : 0;
}
