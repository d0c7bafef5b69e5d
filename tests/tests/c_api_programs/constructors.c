/* Regions recorded by the program's own constructors, before `main`: one of priority 101 (runs
 * before default-priority constructors such as Metron's start) and one of default priority.
 * Linked against libmetron.so or libmetron.a, all three regions must reach the run. */
#include <metron/metron.h>

__attribute__((constructor(101))) static void early_constructor(void) {
    metron_region_begin("ctor_101");
    metron_region_end("ctor_101");
}

__attribute__((constructor)) static void plain_constructor(void) {
    metron_region_begin("ctor_default");
    metron_region_end("ctor_default");
}

int main(void) {
    metron_region_begin("in_main");
    metron_region_end("in_main");
    return 0;
}
