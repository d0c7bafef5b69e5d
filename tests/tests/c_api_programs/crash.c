/* Crashes under the C API. argv[1] picks the scenario; every one records first, with worker
 * threads recording too and two regions open on the main thread when it dies:
 *   segv         200,000 regions, then a store through NULL in crash_here()
 *   bus          a read past the end of a truncated file mapping (SIGBUS)
 *   fpe          an integer division by zero (SIGFPE)
 *   abort        abort()
 *   own_handler  the program's own SA_SIGINFO SIGSEGV handler, installed before its first
 *                record, prints "own handler" and _exit(42)s after Metron wrote the run
 *   segv_while_exiting
 *                another thread stores through NULL, and the main thread returns from main
 *                (exit status 0) once that thread is inside the crash handler (SIGSEGV shows
 *                in its blocked signals in /proc) and Metron has begun writing the crashed
 *                run (summary.json is in METRON_OUTPUT_PATH): the process must still die by
 *                SIGSEGV with the whole run written, not end with 0 under the writing */
#include <metron/metron.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void nap_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static void* busy(void* arg) {
    (void)arg;
    for (;;) {
        metron_region_begin("busy");
        nap_ms(1);
        metron_region_end("busy");
    }
    return NULL;
}

static volatile int numerator = 7, divisor = 0;

__attribute__((noinline)) static void crash_here(const char* how) {
    if (strcmp(how, "segv") == 0 || strcmp(how, "own_handler") == 0) {
        *(volatile int*)NULL = 1; /* the crash line */
    } else if (strcmp(how, "fpe") == 0) {
        printf("%d\n", numerator / divisor); /* 1/x compiles to no division at all */
    } else if (strcmp(how, "abort") == 0) {
        abort();
    } else if (strcmp(how, "bus") == 0) {
        char path[] = "/tmp/metron-crash-bus-XXXXXX";
        int fd = mkstemp(path);
        volatile char* p;
        if (fd < 0 || ftruncate(fd, 4096) != 0) exit(3);
        p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED || ftruncate(fd, 0) != 0) exit(3);
        unlink(path);
        printf("%d\n", p[0]);
    }
}

static volatile pid_t crasher_tid;

static void* crasher(void* arg) {
    (void)arg;
    crasher_tid = (pid_t)syscall(SYS_gettid);
    crash_here("segv");
    return NULL;
}

/* True once thread `tid` has SIGSEGV blocked: it is running a SIGSEGV handler (Metron's,
 * which blocks the signal while it waits for the run to be written). */
static int in_segv_handler(pid_t tid) {
    char path[64], line[256];
    FILE* f;
    int found = 0;
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
    f = fopen(path, "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long mask;
        if (sscanf(line, "SigBlk: %llx", &mask) == 1) found = (mask >> (SIGSEGV - 1)) & 1;
    }
    fclose(f);
    return found;
}

static void on_segv(int sig, siginfo_t* info, void* ctx) {
    static const char msg[] = "own handler\n";
    (void)sig;
    (void)info;
    (void)ctx;
    if (write(1, msg, sizeof msg - 1) < 0) _exit(43);
    _exit(42);
}

int main(int argc, char** argv) {
    const char* how = argc > 1 ? argv[1] : "";
    pthread_t t[2];
    int i;
    if (strcmp(how, "own_handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
    }
    for (i = 0; i < 200000; i++) {
        metron_region_begin("work");
        metron_region_end("work");
    }
    for (i = 0; i < 2; i++) pthread_create(&t[i], NULL, busy, NULL);
    metron_region_begin("outer");
    metron_region_begin("inner");
    nap_ms(20);
    if (strcmp(how, "segv_while_exiting") == 0) {
        pthread_t c;
        pthread_create(&c, NULL, crasher, NULL);
        const char* out = getenv("METRON_OUTPUT_PATH");
        char summary[4096];
        int waited;
        snprintf(summary, sizeof summary, "%s/summary.json", out ? out : ".");
        while (crasher_tid == 0 || !in_segv_handler(crasher_tid)) nap_ms(1);
        for (waited = 0; waited < 60000 && access(summary, F_OK) != 0; waited++) nap_ms(1);
        return 0;
    }
    crash_here(how);
    fprintf(stderr, "no crash for scenario %s\n", how);
    return 2;
}
