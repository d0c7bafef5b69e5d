/* Counting the calling thread's allocations in a test program: include once, in the program's
 * one source file; it interposes malloc & co. and counts while `counting` is set. */
#ifndef METRON_TEST_COUNT_ALLOCATIONS_H
#define METRON_TEST_COUNT_ALLOCATIONS_H
#include <stddef.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
static __thread long allocations;
static __thread int counting;

void* malloc(size_t n) {
    if (counting) allocations++;
    return __libc_malloc(n);
}
void* calloc(size_t n, size_t k) {
    if (counting) allocations++;
    return __libc_calloc(n, k);
}
void* realloc(void* p, size_t n) {
    if (counting) allocations++;
    return __libc_realloc(p, n);
}
int posix_memalign(void** out, size_t align, size_t n) {
    if (counting) allocations++;
    *out = __libc_memalign(align, n);
    return *out ? 0 : 12;
}
void* aligned_alloc(size_t align, size_t n) {
    if (counting) allocations++;
    return __libc_memalign(align, n);
}
void* memalign(size_t align, size_t n) {
    if (counting) allocations++;
    return __libc_memalign(align, n);
}
#endif
