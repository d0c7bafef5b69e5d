/* The cost of one nvtxRangePushA + nvtxRangePop pair from C, with whatever NVTX_INJECTION64_PATH
 * names (libmetron.so, or nothing: NVTX's no-op path). Also a pair with an event-attributes
 * push (nvtxRangePushEx with a payload and a colour), a push of a long name (30 bytes) and a
 * start/end async range.
 * Usage: nvtx_overhead [pairs]   (default 5,000,000); prints ns per pair, best of 3.
 * For instruction counts (scripts/bench-nvtx.sh), callgrind runs two pair counts with
 * --toggle-collect=push_pop_ns and divides the difference. */
#define _POSIX_C_SOURCE 199309L
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static double push_pop_ns(long pairs) {
    double t0 = now_ns();
    for (long i = 0; i < pairs; i++) {
        nvtxRangePushA("pair");
        nvtxRangePop();
    }
    return (now_ns() - t0) / (double)pairs;
}

/* A name of 16 bytes or more: the cache compares it byte by byte, out of line. */
__attribute__((noinline)) static double push_long_pop_ns(long pairs) {
    double t0 = now_ns();
    for (long i = 0; i < pairs; i++) {
        nvtxRangePushA("a-range-name-of-31-bytes-or-so");
        nvtxRangePop();
    }
    return (now_ns() - t0) / (double)pairs;
}

__attribute__((noinline)) static double push_ex_pop_ns(long pairs) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xFF336699u;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "pair-ex";
    double t0 = now_ns();
    for (long i = 0; i < pairs; i++) {
        a.payload.llValue = i;
        nvtxRangePushEx(&a);
        nvtxRangePop();
    }
    return (now_ns() - t0) / (double)pairs;
}

__attribute__((noinline)) static double start_end_ns(long pairs) {
    double t0 = now_ns();
    for (long i = 0; i < pairs; i++) {
        nvtxRangeEnd(nvtxRangeStartA("async-pair"));
    }
    return (now_ns() - t0) / (double)pairs;
}

static double best(double (*f)(long), long pairs) {
    double b = 1e30;
    for (int r = 0; r < 3; r++) {
        double v = f(pairs);
        if (v < b) b = v;
    }
    return b;
}

int main(int argc, char** argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 5000000L;
    const char* only = argc > 2 ? argv[2] : "all";
    /* Warm up: NVTX initialises on its first call (loads the injection), names get interned. */
    push_pop_ns(1000);
    push_long_pop_ns(1000);
    push_ex_pop_ns(1000);
    start_end_ns(1000);
    if (strcmp(only, "all") == 0) {
        printf("nvtx_overhead: push+pop: %.2f ns/pair\n", best(push_pop_ns, pairs));
        printf("nvtx_overhead: push(long name)+pop: %.2f ns/pair\n", best(push_long_pop_ns, pairs));
        printf("nvtx_overhead: pushEx(payload, colour)+pop: %.2f ns/pair\n", best(push_ex_pop_ns, pairs));
        printf("nvtx_overhead: start+end: %.2f ns/pair\n", best(start_end_ns, pairs));
    } else if (strcmp(only, "push") == 0) {
        push_pop_ns(pairs);
    } else if (strcmp(only, "long") == 0) {
        push_long_pop_ns(pairs);
    } else if (strcmp(only, "ex") == 0) {
        push_ex_pop_ns(pairs);
    } else {
        start_end_ns(pairs);
    }
    return 0;
}
