/* Whether glibc gave a dlopen'ed libmetron.so a static TLS offset (the fast paths' TLS
 * descriptor then resolves in 2 instructions instead of glibc's dynamic resolver). A thread
 * created after the dlopen, which never touched Metron, sees the library's TLS block already
 * there only when it is static. Prints `static_tls=1` or `static_tls=0`.
 * Usage: static_tls path/to/libmetron.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int found = -1;

static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (strstr(info->dlpi_name, "libmetron.so") != NULL && info->dlpi_tls_modid != 0)
        found = info->dlpi_tls_data != NULL;
    return 0;
}

static void *fresh_thread(void *arg) {
    (void)arg;
    dl_iterate_phdr(visit, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, fresh_thread, NULL);
    pthread_join(t, NULL);
    printf("static_tls=%d\n", found);
    return 0;
}
