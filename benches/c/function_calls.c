/* Calls of one small function in a loop, for the cost of functions as regions
 * (scripts/bench-functions.sh). Built with -finstrument-functions (and once without, as the
 * baseline); the loops themselves carry no hooks, so only the called function's do.
 *
 * Usage: function_calls LOOP CALLS   LOOP: selected | unselected
 *   selected     calls traced_leaf (run with METRON_FUNCTIONS=^traced_leaf$)
 *   unselected   calls other_leaf (instrumented, not selected)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

__attribute__((noinline)) long traced_leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) long other_leaf(long x) { return x * 5 + 2; }

__attribute__((noinline, no_instrument_function)) void loop_selected(long calls) {
    long acc = 0;
    for (long i = 0; i < calls; i++) acc += traced_leaf(i);
    sink = acc;
}

__attribute__((noinline, no_instrument_function)) void loop_unselected(long calls) {
    long acc = 0;
    for (long i = 0; i < calls; i++) acc += other_leaf(i);
    sink = acc;
}

__attribute__((no_instrument_function)) int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: function_calls selected|unselected CALLS\n");
        return 2;
    }
    long calls = atol(argv[2]);
    /* The first call of each function is decided (cold); the loops measure the rest. */
    traced_leaf(0);
    other_leaf(0);
    if (strcmp(argv[1], "selected") == 0) {
        loop_selected(calls);
    } else if (strcmp(argv[1], "unselected") == 0) {
        loop_unselected(calls);
    } else {
        fprintf(stderr, "function_calls: unknown loop %s (selected, unselected)\n", argv[1]);
        return 2;
    }
    printf("%ld\n", (long)sink);
    return 0;
}
