/* Every kind of NVTX v3 event Metron maps, from C with the real nvtx3 headers. Run with
 * NVTX_INJECTION64_PATH=libmetron.so; prints the values NVTX returned, one `key=value` a line. */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

void second_copy_events(void); /* second_copy.c: another NVTX copy (its own .so) */

static nvtxRangeId_t cross_range;
static volatile uint32_t named_tid; /* worker2's tid, published for main to name it */
static volatile int named;          /* set by main once it has named worker2 */

static uint32_t tid(void) { return (uint32_t)syscall(SYS_gettid); }

static void *worker(void *arg) {
    (void)arg;
    nvtxNameOsThreadA(tid(), "nvtx-worker");
    printf("worker_push=%d\n", nvtxRangePushA("worker-range"));
    nvtxMarkA("worker-mark");
    printf("worker_pop=%d\n", nvtxRangePop());
    nvtxRangeEnd(cross_range); /* started on the main thread */
    return NULL;
}

/* Named by the main thread (nvtxNameOsThreadA with this thread's tid), not by itself. */
static void *worker2(void *arg) {
    (void)arg;
    named_tid = tid();
    while (!__atomic_load_n(&named, __ATOMIC_ACQUIRE)) usleep(100);
    nvtxRangePushA("worker2-range");
    nvtxRangePop();
    return NULL;
}

int main(void) {
    nvtxNameOsThreadA(tid(), "nvtx-main");
    nvtxMarkA("app-start");
    printf("push_outer=%d\n", nvtxRangePushA("outer"));

    nvtxNameCategoryA(7, "io");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xFF00FF00u;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 42;
    a.category = 7;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "inner-ex";
    printf("push_inner=%d\n", nvtxRangePushEx(&a));
    printf("pop_inner=%d\n", nvtxRangePop());

    printf("push_wide=%d\n", nvtxRangePushW(L"wide-range"));
    nvtxMarkW(L"wide-mark");
    printf("pop_wide=%d\n", nvtxRangePop());

    a.message.ascii = "startex-range";
    nvtxRangeId_t r = nvtxRangeStartEx(&a);
    a.message.ascii = "markex";
    nvtxMarkEx(&a);

    nvtxDomainHandle_t d = nvtxDomainCreateA("metron-domain");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered-msg");
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "domain-range";
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 2.5;
    printf("domain_push=%d\n", nvtxDomainRangePushEx(d, &a));
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    nvtxDomainMarkEx(d, &a);
    printf("domain_push_registered=%d\n", nvtxDomainRangePushEx(d, &a));
    printf("domain_pop_registered=%d\n", nvtxDomainRangePop(d));
    printf("domain_pop=%d\n", nvtxDomainRangePop(d));
    printf("domain_pop_unbalanced=%d\n", nvtxDomainRangePop(d));
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "domain-async";
    nvtxRangeId_t dr = nvtxDomainRangeStartEx(d, &a);
    nvtxDomainRangeEnd(d, dr);
    nvtxRangeEnd(r);

    cross_range = nvtxRangeStartA("cross-thread");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);

    pthread_t t2;
    pthread_create(&t2, NULL, worker2, NULL);
    while (!named_tid) usleep(100);
    nvtxNameOsThreadA(named_tid, "named-by-main");
    __atomic_store_n(&named, 1, __ATOMIC_RELEASE);
    pthread_join(t2, NULL);

    second_copy_events();

    printf("pop_outer=%d\n", nvtxRangePop());
    printf("pop_unbalanced=%d\n", nvtxRangePop());
    nvtxRangeEnd(0); /* not a range NVTX returned: ignored */
    nvtxDomainDestroy(d);
    return 0;
}
