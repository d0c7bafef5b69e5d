/* A shared library carrying its own static copy of Metron (linked with libmetron.a, its
 * symbols kept local). Built twice, as liba (LIB_A) and libb: a_region(inside) records
 * "in A" around a call of `inside`; b_region() records "in B". */
#include <metron/metron.h>

#ifdef LIB_A
void a_region(void (*inside)(void)) {
    metron_region_begin("in A");
    inside();
    metron_region_end("in A");
}
#else
void b_region(void) {
    metron_region_begin("in B");
    metron_region_end("in B");
}
#endif
