/* A process of a tree that does recorded work: `tree_worker N CODE` records N "work" regions
 * and exits with CODE. */
#include <metron/metron.h>

#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int code = argc > 2 ? atoi(argv[2]) : 0;
    volatile long acc = 0;
    int i;
    long j;
    for (i = 0; i < n; i++) {
        metron_region_begin("work");
        for (j = 0; j < 10000; j++) {
            acc += j;
        }
        metron_region_end("work");
    }
    return code;
}
