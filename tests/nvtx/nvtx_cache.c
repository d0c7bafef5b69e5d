/* The shapes that NVTX handlers' name cache and fast path must get right, from C with the real
 * nvtx3 headers (run with NVTX_INJECTION64_PATH=libmetron.so):
 *  - one buffer that holds one name after another (the same address, other contents), at
 *    lengths on both sides of the two-word compare (15 and 16 bytes);
 *  - names that end at the last byte of a page followed by an unreadable page;
 *  - 8 threads nesting short and long literal names 3 deep, 20,000 times each;
 *  - a SIGPROF handler that pushes and pops while its thread pushes and pops (refused, -1,
 *    when it interrupts a record write of the thread; recorded otherwise).
 *  - 10^5 pairs of a short and a long name after the first ones, counting this thread's
 *    allocations (malloc & co. are interposed).
 * Prints `key=value` lines: the levels push returned where they were not the expected ones
 * (`bad_levels`), how many ranges the signal handler opened, the allocations counted. */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 20000

#include "../tests/c_api_programs/count_allocations.h"

static int bad_levels;
static volatile sig_atomic_t handler_ranges;

static void expect_level(int got, int want) {
    if (got != want) __atomic_add_fetch(&bad_levels, 1, __ATOMIC_RELAXED);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        expect_level(nvtxRangePushA("thread-outer"), 0);
        expect_level(nvtxRangePushA("a-rather-long-name-of-a-middle-range"), 1);
        expect_level(nvtxRangePushA("leaf"), 2);
        expect_level(nvtxRangePop(), 2);
        expect_level(nvtxRangePop(), 1);
        expect_level(nvtxRangePop(), 0);
    }
    return NULL;
}

static void on_prof(int sig) {
    (void)sig;
    if (nvtxRangePushA("in-handler") >= 0) {
        handler_ranges++;
        nvtxRangePop();
    }
}

/* `nvtx_cache attrs`: the attribute, domain and registered-string pushes repeated, so that they
 * take their fast paths: 1000 rounds of, in domain "cache-domain", a registered string with a
 * payload (the round) and an ASCII name with a colour nested in it, inside a default-domain
 * range that is popped while the domain's ranges are open. */
static int attrs_part(void) {
    nvtxDomainHandle_t domain = nvtxDomainCreateA("cache-domain");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(domain, "reg");
    nvtxEventAttributes_t with_payload, with_colour;
    memset(&with_payload, 0, sizeof with_payload);
    with_payload.version = NVTX_VERSION;
    with_payload.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    with_payload.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    with_payload.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    with_payload.message.registered = reg;
    with_colour = with_payload;
    with_colour.payloadType = 0;
    with_colour.colorType = NVTX_COLOR_ARGB;
    with_colour.color = 0xFF112233u;
    with_colour.messageType = NVTX_MESSAGE_TYPE_ASCII;
    with_colour.message.ascii = "dom-ascii";
    for (int i = 0; i < 1000; i++) {
        expect_level(nvtxRangePushA("default-outer"), 0);
        with_payload.payload.ullValue = (uint64_t)i;
        expect_level(nvtxDomainRangePushEx(domain, &with_payload), 0);
        expect_level(nvtxDomainRangePushEx(domain, &with_colour), 1);
        expect_level(nvtxRangePop(), 0); /* the default range, under the domain's two */
        expect_level(nvtxDomainRangePop(domain), 1);
        expect_level(nvtxDomainRangePop(domain), 0);
    }
    printf("bad_levels=%d\n", bad_levels);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "attrs") == 0) return attrs_part();
    /* The same address, other contents. */
    static char buffer[64];
    const char *names[] = {"short", "fifteen-bytes!!", "sixteen-bytes!!!", "short2", "s"};
    for (int round = 0; round < 3; round++) {
        for (unsigned n = 0; n < sizeof names / sizeof names[0]; n++) {
            strcpy(buffer, names[n]);
            expect_level(nvtxRangePushA(buffer), 0);
            expect_level(nvtxRangePop(), 0);
        }
    }

    /* Names that end at a page's last byte; the next page faults if anything reads it. */
    long page = sysconf(_SC_PAGESIZE);
    char *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED || mprotect(pages + page, page, PROT_NONE) != 0) return 1;
    const char *edge_names[] = {"edge", "edge-of-page-12", "edge", "x"};
    for (int round = 0; round < 2; round++) {
        for (unsigned n = 0; n < sizeof edge_names / sizeof edge_names[0]; n++) {
            size_t len = strlen(edge_names[n]);
            char *at = pages + page - len - 1;
            memcpy(at, edge_names[n], len + 1);
            expect_level(nvtxRangePushA(at), 0);
            expect_level(nvtxRangePop(), 0);
        }
    }

    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, worker, NULL);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);

    /* A signal handler that interrupts this thread's pushes and pops. */
    signal(SIGPROF, on_prof);
    struct itimerval every = {{0, 200}, {0, 200}};
    setitimer(ITIMER_PROF, &every, NULL);
    for (int i = 0; i < 3000000; i++) {
        expect_level(nvtxRangePushA("interrupted"), 0);
        expect_level(nvtxRangePop(), 0);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    signal(SIGPROF, SIG_IGN);

    /* No allocation per pair once the names are known. */
    nvtxRangePushA("counted-short");
    nvtxRangePushA("a-counted-name-longer-than-15-bytes");
    nvtxRangePop();
    nvtxRangePop();
    counting = 1;
    for (int i = 0; i < 100000; i++) {
        expect_level(nvtxRangePushA("counted-short"), 0);
        expect_level(nvtxRangePushA("a-counted-name-longer-than-15-bytes"), 1);
        expect_level(nvtxRangePop(), 1);
        expect_level(nvtxRangePop(), 0);
    }
    counting = 0;

    printf("allocations=%ld\n", allocations);
    printf("bad_levels=%d\n", bad_levels);
    printf("handler_ranges=%d\n", (int)handler_ranges);
    return 0;
}
