/* Opens liba.so and libb.so (each with its own static Metron, RTLD_LOCAL so neither sees the
 * other's symbols) and, on 4 threads, records 1000 x "in A" > "in B": regions of two copies
 * of Metron nested on the same threads. Prints the process runtime's role of neither: the
 * test reads the run folder. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERATIONS 1000

typedef void (*a_fn)(void (*)(void));
typedef void (*b_fn)(void);
static a_fn a_region;
static b_fn b_region;

static void* body(void* arg) {
    int i;
    (void)arg;
    for (i = 0; i < ITERATIONS; i++) a_region(b_region);
    return NULL;
}

int main(int argc, char** argv) {
    void* a;
    void* b;
    pthread_t t[THREADS];
    int i;
    if (argc != 3) {
        fprintf(stderr, "usage: dlopen_two LIBA LIBB\n");
        return 2;
    }
    a = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    b = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!a || !b) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    *(void**)&a_region = dlsym(a, "a_region");
    *(void**)&b_region = dlsym(b, "b_region");
    if (!a_region || !b_region) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 2;
    }
    for (i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, body, NULL);
    for (i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    return 0;
}
