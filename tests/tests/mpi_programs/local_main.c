/* Loads the library named by argv[1] with RTLD_LOCAL and calls its run(). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    void *lib;
    int (*run)(void);
    if (argc < 2) return 2;
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    *(void **)&run = dlsym(lib, "run");
    return run ? run() : 2;
}
