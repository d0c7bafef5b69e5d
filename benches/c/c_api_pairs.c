/* Instructions per region begin+end pair through the C API, per path (callgrind: run each loop
 * with two pair counts and divide the difference; scripts/bench-c-api.sh does).
 * Usage: c_api_pairs LOOP PAIRS   LOOP: id | inline | name | macro | computed | long | empty
 *   id        metron_region_begin_id / metron_region_end_id (ids interned once): calls
 *   inline    METRON_REGION_BEGIN_ID / METRON_REGION_END_ID: the header's inline path
 *   name      metron_region_begin("pair") / metron_region_end("pair") (a literal, by function)
 *   macro     METRON_REGION_BEGIN("pair") / METRON_REGION_END("pair") (the header's macros:
 *             a per-call-site id, then the inline path)
 *   computed  names built at run time: 4 distinct names in 4096 heap buffers, a different
 *             buffer (address) every pair, so no address repeats within the name cache
 *   long      as computed, with names of 26 bytes ("solver/assemble-stiffness-N") instead
 *             of 4 ("op-N"): the path for names of eight bytes or more
 *   empty     the loop alone (its cost is subtracted by the 2-point difference anyway)
 * Each loop is its own non-inlined function (callgrind --toggle-collect=loop_<LOOP>). */
#define _POSIX_C_SOURCE 200809L
#include <metron/metron.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFFERS 4096

#ifdef __GNUC__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

NOINLINE static void loop_id(long pairs) {
    long i;
    METRON_REGION_ID(id, "pair");
    for (i = 0; i < pairs; i++) {
        metron_region_begin_id(id);
        metron_region_end_id(id);
    }
}

NOINLINE static void loop_inline(long pairs) {
    long i;
    METRON_REGION_ID(id, "pair");
    for (i = 0; i < pairs; i++) {
        METRON_REGION_BEGIN_ID(id);
        METRON_REGION_END_ID(id);
    }
}

NOINLINE static void loop_name(long pairs) {
    long i;
    for (i = 0; i < pairs; i++) {
        metron_region_begin("pair");
        metron_region_end("pair");
    }
}

NOINLINE static void loop_macro(long pairs) {
    long i;
    for (i = 0; i < pairs; i++) {
        METRON_REGION_BEGIN("pair");
        METRON_REGION_END("pair");
    }
}

static char* buffers[BUFFERS];
static char* long_buffers[BUFFERS];

NOINLINE static void loop_computed(long pairs) {
    long i;
    for (i = 0; i < pairs; i++) {
        const char* name = buffers[i % BUFFERS];
        metron_region_begin(name);
        metron_region_end(name);
    }
}

NOINLINE static void loop_long(long pairs) {
    long i;
    for (i = 0; i < pairs; i++) {
        const char* name = long_buffers[i % BUFFERS];
        metron_region_begin(name);
        metron_region_end(name);
    }
}

NOINLINE static void loop_empty(long pairs) {
    long i;
    for (i = 0; i < pairs; i++) {
        __asm__ volatile("" ::: "memory");
    }
}

int main(int argc, char** argv) {
    const char* loop = argc > 1 ? argv[1] : "id";
    long pairs = argc > 2 ? atol(argv[2]) : 1000000L;
    int i;
    for (i = 0; i < BUFFERS; i++) {
        buffers[i] = malloc(32);
        snprintf(buffers[i], 32, "op-%d", i % 4);
        long_buffers[i] = malloc(48);
        snprintf(long_buffers[i], 48, "solver/assemble-stiffness-%d", i % 4);
    }
    metron_init(NULL);
    /* Warm up every path: interned names, the thread's buffer, the caches. */
    loop_id(1000);
    loop_inline(1000);
    loop_name(1000);
    loop_macro(1000);
    loop_computed(2 * BUFFERS);
    loop_long(2 * BUFFERS);
    if (strcmp(loop, "id") == 0) {
        loop_id(pairs);
    } else if (strcmp(loop, "inline") == 0) {
        loop_inline(pairs);
    } else if (strcmp(loop, "name") == 0) {
        loop_name(pairs);
    } else if (strcmp(loop, "macro") == 0) {
        loop_macro(pairs);
    } else if (strcmp(loop, "computed") == 0) {
        loop_computed(pairs);
    } else if (strcmp(loop, "long") == 0) {
        loop_long(pairs);
    } else if (strcmp(loop, "empty") == 0) {
        loop_empty(pairs);
    } else {
        fprintf(stderr, "c_api_pairs: unknown loop %s (id, inline, name, macro, computed, long, empty)\n", loop);
        return 2;
    }
    return 0;
}
