/* Loads and unloads a plugin in a loop while three threads spin, the shape of Open MPI's
 * component probing in MPI_Init under `metron sample`: the sampler's module list is rebuilt
 * while modules come and go, and samples land in freshly mapped code. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <metron/metron.h>

static volatile int stop;

static void *spin(void *arg) {
    volatile unsigned long x = 0;
    (void)arg;
    while (!stop) {
        x += 1;
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *plugin = argc > 1 ? argv[1] : "./libplug.so";
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    pthread_t threads[3];
    long sum = 0;
    int i;
    for (i = 0; i < 3; i++) {
        pthread_create(&threads[i], NULL, spin, NULL);
    }
    metron_region_begin("churn");
    for (i = 0; i < rounds; i++) {
        void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
        long (*work)(long);
        if (h == NULL) {
            fprintf(stderr, "dlopen %s: %s\n", plugin, dlerror());
            return 1;
        }
        *(void **)(&work) = dlsym(h, "plugin_work");
        sum += work(2000);
        if (dlclose(h) != 0) {
            fprintf(stderr, "dlclose: %s\n", dlerror());
            return 1;
        }
    }
    metron_region_end("churn");
    stop = 1;
    for (i = 0; i < 3; i++) {
        pthread_join(threads[i], NULL);
    }
    printf("rounds %d sum %ld\n", rounds, sum);
    return 0;
}
