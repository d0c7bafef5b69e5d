/* Counts heap allocations made on the main thread while a selected, instrumented function is
 * called 10^5 times after its first (deciding) calls: the -finstrument-functions hooks, the
 * shadow stack and the region begin/end they make must allocate nothing. malloc and friends
 * are replaced here (forwarding to glibc's) and carry no hooks themselves.
 *
 * Prints: allocations N calls C */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define NI __attribute__((no_instrument_function))
#define CALLS 100000

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

static __thread int counting;
static long allocations;

NI void* malloc(size_t n) {
    if (counting) allocations++;
    return __libc_malloc(n);
}
NI void* calloc(size_t a, size_t b) {
    if (counting) allocations++;
    return __libc_calloc(a, b);
}
NI void* realloc(void* p, size_t n) {
    if (counting) allocations++;
    return __libc_realloc(p, n);
}
NI void* memalign(size_t align, size_t n) {
    if (counting) allocations++;
    return __libc_memalign(align, n);
}
NI void* aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
NI int posix_memalign(void** out, size_t align, size_t n) {
    void* p = memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
NI void free(void* p) { __libc_free(p); }

static volatile long sink;

__attribute__((noinline)) long traced(long x) { return x * 7 + 3; }
__attribute__((noinline)) long untraced(long x) { return x * 11 + 5; }

NI int main(void) {
    long acc = 0;
    /* Warm-up: both functions decided, the thread's buffer and state made. */
    for (long i = 0; i < 1000; i++) acc += traced(i) + untraced(i);
    counting = 1;
    for (long i = 0; i < CALLS; i++) acc += traced(i) + untraced(i);
    counting = 0;
    sink = acc;
    printf("allocations %ld calls %d\n", allocations, CALLS);
    return 0;
}
