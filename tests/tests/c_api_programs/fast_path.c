/* The C API's fast paths under load and without allocations.
 *   fast_path threads N   8 threads, each N pairs: by id (METRON_REGION_BEGIN_ID), by a literal
 *                         (METRON_REGION_BEGIN, a per-call-site id), and by computed names (4
 *                         names in 64 heap buffers), nested as outer > {id, literal, computed},
 *                         and 1000 pairs each of two literals through one inlined call site.
 *   fast_path allocs N    counts this thread's malloc/calloc/realloc/aligned calls (the program
 *                         interposes them) during N pairs of each path after a warm-up; prints
 *                         "allocations: <id> <literal> <computed> <name>".
 * Every call's status is checked; a failure exits 1. */
#define _GNU_SOURCE
#include <metron/metron.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define BUFFERS 64
#define SHARED_SITE_PAIRS 1000

#include "count_allocations.h"

static char* buffers[BUFFERS];
static long pairs;

static void check(metron_status s, const char* what) {
    if (s != METRON_OK) {
        fprintf(stderr, "fast_path: %s returned %d: %s\n", what, (int)s, metron_last_error());
        exit(1);
    }
}

static void by_id(long n) {
    long i;
    METRON_REGION_ID(id, "by_id");
    for (i = 0; i < n; i++) {
        check(METRON_REGION_BEGIN_ID(id), "begin by id");
        check(METRON_REGION_END_ID(id), "end by id");
    }
}

static void by_literal(long n) {
    long i;
    for (i = 0; i < n; i++) {
        check(METRON_REGION_BEGIN("by_literal"), "begin by literal");
        check(METRON_REGION_END("by_literal"), "end by literal");
    }
}

static void by_computed(long n) {
    long i;
    for (i = 0; i < n; i++) {
        const char* name = buffers[i % BUFFERS];
        check(metron_region_begin(name), "begin by computed name");
        check(metron_region_end(name), "end by computed name");
    }
}

static void by_name(long n) {
    long i;
    for (i = 0; i < n; i++) {
        check(metron_region_begin("by_name"), "begin by name");
        check(metron_region_end("by_name"), "end by name");
    }
}

/* One call site inlined with two literals: the copies share the site's static, and each must
 * still get its own name. */
__attribute__((always_inline)) static inline void named(const char* name) {
    check(METRON_REGION_BEGIN(name), "begin at a shared site");
    check(METRON_REGION_END(name), "end at a shared site");
}

static void one_site_two_literals(long n) {
    long i;
    for (i = 0; i < n; i++) {
        named("site_a");
        named("site_b");
    }
}

static void* body(void* arg) {
    (void)arg;
    check(METRON_REGION_BEGIN("outer"), "begin outer");
    by_id(pairs);
    by_literal(pairs);
    by_computed(pairs);
    one_site_two_literals(SHARED_SITE_PAIRS);
    check(METRON_REGION_END("outer"), "end outer");
    return NULL;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "threads";
    pthread_t t[THREADS];
    int i;
    pairs = argc > 2 ? atol(argv[2]) : 1000000L;
    for (i = 0; i < BUFFERS; i++) {
        buffers[i] = malloc(16);
        snprintf(buffers[i], 16, "computed-%d", i % 4);
    }
    if (strcmp(mode, "threads") == 0) {
        for (i = 0; i < THREADS; i++) {
            if (pthread_create(&t[i], NULL, body, NULL) != 0) return 1;
        }
        for (i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
        return 0;
    }
    if (strcmp(mode, "allocs") == 0) {
        long counts[4];
        /* Warm-up: the thread's first record, the names interned and cached. */
        by_id(1000);
        by_literal(1000);
        by_computed(4 * BUFFERS);
        by_name(1000);
        counting = 1;
        allocations = 0;
        by_id(pairs);
        counts[0] = allocations;
        allocations = 0;
        by_literal(pairs);
        counts[1] = allocations;
        allocations = 0;
        by_computed(pairs);
        counts[2] = allocations;
        allocations = 0;
        by_name(pairs);
        counts[3] = allocations;
        counting = 0;
        printf("allocations: %ld %ld %ld %ld\n", counts[0], counts[1], counts[2], counts[3]);
        return 0;
    }
    fprintf(stderr, "fast_path: unknown mode %s (threads, allocs)\n", mode);
    return 2;
}
