/* The header's inline begin/end by id (METRON_REGION_BEGIN_ID, METRON_REGION_BEGIN with a
 * literal): its ABI against the library, and every case it must leave to the library.
 * Usage: inline_path layout | misuse | deep | fork | calls
 *   layout  offsetof() of each metron_fast_thread field against metron_fast_layout(), and a
 *           header of another version or size refused (its inline path always calls).
 *   misuse  bad ids, ends without begin, mismatched ends, too deep, mixing inline and library
 *           calls, collection stopped, the thread paused: each status as the library's; then
 *           the expected summary (see tests/tests/c_api_fast_path.rs).
 *   deep    256 regions open by id, the 257th refused (inline and by literal), all closed.
 *   fork    a child forked with a region open (inline) begins and ends 1000 regions inline
 *           and ends the inherited one: every call succeeds; Metron is off in the child, so
 *           only the parent's 11 "parent" regions are recorded.
 *   calls   (built with -DCOUNT_CALLS -Wl,--wrap=metron_region_begin_id,--wrap=
 *           metron_region_end_id) prints how many begin/end calls reached the library in
 *           10^5 pairs by id and 10^5 by literal after a warm-up: the inline path's share.
 * Exits 1 on the first unexpected result. */
#include <metron/metron.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void expect(metron_status got, metron_status want, const char* what) {
    if (got != want) {
        fprintf(stderr, "inline_path: %s: got %d (%s), want %d; last error: %s\n", what, (int)got,
                metron_status_string(got), (int)want, metron_last_error());
        exit(1);
    }
}

static int layout(void) {
    size_t want[] = {
        offsetof(metron_fast_thread, struct_size), offsetof(metron_fast_thread, abi),
        offsetof(metron_fast_thread, open_limit),  offsetof(metron_fast_thread, depth),
        offsetof(metron_fast_thread, cursor),      offsetof(metron_fast_thread, ids),
        offsetof(metron_fast_thread, open),        offsetof(metron_fast_thread, open) + 8,
        sizeof(metron_fast_thread)};
    size_t i;
    metron_fast_thread* f;
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (metron_fast_layout((uint32_t)i) != want[i]) {
            fprintf(stderr, "inline_path: field %u at %u in the library, %u in the header\n",
                    (unsigned)i, (unsigned)metron_fast_layout((uint32_t)i), (unsigned)want[i]);
            return 1;
        }
    }
    if (metron_fast_layout((uint32_t)i) != UINT32_MAX) return 1;
    if (offsetof(metron_fast_cursor, end) != 0 || offsetof(metron_fast_cursor, limit) != 8) return 1;
    f = metron_fast_thread_get(METRON_FAST_ABI + 1, (uint32_t)sizeof(metron_fast_thread));
    if (f == NULL || f->open_limit != 0 || f->depth != 0 || f->open[0] != 0) {
        fprintf(stderr, "inline_path: another ABI version is not refused\n");
        return 1;
    }
    f = metron_fast_thread_get(METRON_FAST_ABI, (uint32_t)sizeof(metron_fast_thread) - 8);
    if (f == NULL || f->open_limit != 0) {
        fprintf(stderr, "inline_path: another struct size is not refused\n");
        return 1;
    }
    f = metron_fast_thread_get(METRON_FAST_ABI, (uint32_t)sizeof(metron_fast_thread));
    if (f == NULL || f->open_limit != 256 || f->struct_size != sizeof(metron_fast_thread) ||
        f->abi != METRON_FAST_ABI || f->ids == NULL || *f->ids == NULL) {
        fprintf(stderr, "inline_path: this header's state is not set up\n");
        return 1;
    }
    printf("layout ok\n");
    return 0;
}

static int misuse(void) {
    int i;
    metron_id a = metron_region_id("a");
    metron_id b = metron_region_id("b");
    metron_id stopped = metron_region_id("stopped");
    metron_id paused = metron_region_id("paused");
    metron_id straddle = metron_region_id("straddle");
    metron_id ok = metron_region_id("ok");

    /* Bad ids and ends with nothing open: errors, nothing opened. */
    expect(METRON_REGION_END_ID(a), METRON_ERROR_NO_OPEN_REGION, "end with nothing open");
    expect(METRON_REGION_BEGIN_ID(0), METRON_ERROR_INVALID_ARGUMENT, "begin id 0");
    expect(METRON_REGION_BEGIN_ID(123456789), METRON_ERROR_INVALID_ARGUMENT, "begin unknown id");
    expect(METRON_REGION_BEGIN_ID(a + 1000), METRON_ERROR_INVALID_ARGUMENT, "begin unseen id");
    expect(METRON_REGION_END_ID(a), METRON_ERROR_NO_OPEN_REGION, "still nothing open");

    /* A mismatched end leaves the region open; the right one closes it. */
    expect(METRON_REGION_BEGIN_ID(a), METRON_OK, "begin a");
    expect(METRON_REGION_END_ID(b), METRON_ERROR_MISMATCHED_END, "end b inside a");
    expect(METRON_REGION_END_ID(0), METRON_ERROR_INVALID_ARGUMENT, "end 0 inside a");
    /* Mixing: inline begin, library end by name; library begin by name, inline end. */
    expect(METRON_REGION_BEGIN("b"), METRON_OK, "begin b by literal");
    expect(metron_region_end("b"), METRON_OK, "end b by name");
    expect(metron_region_begin("b"), METRON_OK, "begin b by name");
    expect(METRON_REGION_END_ID(b), METRON_OK, "end b by id");
    expect(METRON_REGION_END_ID(a), METRON_OK, "end a");
    expect(METRON_REGION_END("a"), METRON_ERROR_NO_OPEN_REGION, "end a again");

    /* Collection stopped: calls succeed, nothing is recorded; a region open across the stop
     * still ends. */
    expect(METRON_REGION_BEGIN_ID(straddle), METRON_OK, "begin straddle");
    expect(metron_stop(), METRON_OK, "stop");
    for (i = 0; i < 100; i++) {
        expect(METRON_REGION_BEGIN_ID(stopped), METRON_OK, "begin while stopped");
        expect(METRON_REGION_END_ID(stopped), METRON_OK, "end while stopped");
    }
    expect(METRON_REGION_END_ID(straddle), METRON_OK, "end straddle");
    expect(metron_start(), METRON_OK, "start");

    /* This thread paused: the same. */
    expect(metron_thread_stop(), METRON_OK, "thread stop");
    for (i = 0; i < 100; i++) {
        expect(METRON_REGION_BEGIN_ID(paused), METRON_OK, "begin while paused");
        expect(METRON_REGION_END_ID(paused), METRON_OK, "end while paused");
    }
    expect(metron_thread_start(), METRON_OK, "thread start");

    for (i = 0; i < 1000; i++) {
        expect(METRON_REGION_BEGIN_ID(ok), METRON_OK, "begin ok");
        expect(METRON_REGION_END_ID(ok), METRON_OK, "end ok");
    }
    printf("misuse ok\n");
    return 0;
}

#ifdef COUNT_CALLS
static long library_calls;
metron_status __real_metron_region_begin_id(metron_id id);
metron_status __real_metron_region_end_id(metron_id id);
metron_status __wrap_metron_region_begin_id(metron_id id) {
    library_calls++;
    return __real_metron_region_begin_id(id);
}
metron_status __wrap_metron_region_end_id(metron_id id) {
    library_calls++;
    return __real_metron_region_end_id(id);
}

static void pairs(long n) {
    long i;
    METRON_REGION_ID(id, "counted");
    for (i = 0; i < n; i++) {
        expect(METRON_REGION_BEGIN_ID(id), METRON_OK, "begin counted");
        expect(METRON_REGION_BEGIN("literal"), METRON_OK, "begin literal");
        expect(METRON_REGION_END("literal"), METRON_OK, "end literal");
        expect(METRON_REGION_END_ID(id), METRON_OK, "end counted");
    }
}

static int calls(void) {
    long warm;
    pairs(10);
    warm = library_calls;
    library_calls = 0;
    pairs(100000);
    printf("library calls: warm-up %ld, then %ld\n", warm, library_calls);
    return 0;
}
#endif

/* 256 open, the 257th refused, all closed (its own run: the summary's tree is 256 deep). */
static int deep(void) {
    int i;
    metron_id deep = metron_region_id("deep");
    for (i = 0; i < 256; i++) expect(METRON_REGION_BEGIN_ID(deep), METRON_OK, "begin deep");
    expect(METRON_REGION_BEGIN_ID(deep), METRON_ERROR_TOO_DEEP, "begin 257th");
    expect(METRON_REGION_BEGIN("deep"), METRON_ERROR_TOO_DEEP, "begin 257th by literal");
    for (i = 0; i < 256; i++) expect(METRON_REGION_END_ID(deep), METRON_OK, "end deep");
    expect(METRON_REGION_END_ID(deep), METRON_ERROR_NO_OPEN_REGION, "end 257th");
    printf("deep ok\n");
    return 0;
}

static int forked(void) {
    int i, status = 0;
    pid_t child;
    metron_id parent = metron_region_id("parent");
    metron_id in_child = metron_region_id("child");
    for (i = 0; i < 10; i++) {
        expect(METRON_REGION_BEGIN_ID(parent), METRON_OK, "begin parent");
        expect(METRON_REGION_END_ID(parent), METRON_OK, "end parent");
    }
    expect(METRON_REGION_BEGIN_ID(parent), METRON_OK, "begin parent before fork");
    fflush(stdout);
    child = fork();
    if (child == 0) {
        for (i = 0; i < 1000; i++) {
            expect(METRON_REGION_BEGIN_ID(in_child), METRON_OK, "begin in child");
            expect(METRON_REGION_END_ID(in_child), METRON_OK, "end in child");
        }
        expect(METRON_REGION_END_ID(parent), METRON_OK, "end inherited region in child");
        _exit(0);
    }
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "inline_path: the child failed (status %d)\n", status);
        return 1;
    }
    expect(METRON_REGION_END_ID(parent), METRON_OK, "end parent after fork");
    printf("fork ok\n");
    return 0;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "layout";
#ifdef COUNT_CALLS
    if (mode[0] == 'c') return calls();
#endif
    if (mode[0] == 'l') return layout();
    if (mode[0] == 'm') return misuse();
    if (mode[0] == 'd') return deep();
    if (mode[0] == 'f') return forked();
    fprintf(stderr, "inline_path: unknown mode %s (layout, misuse, deep, fork, calls)\n", mode);
    return 2;
}
