/* Every ROCTx call Metron records, from C. Linked against the stand-in ROCTx library (or, with
 * -DNO_STANDIN, against libmetron.so alone); prints what each call returned, `key=value`. */
#define _GNU_SOURCE
#include "roctx_api.h"
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef NO_STANDIN
int roctx_standin_calls(void);
#endif

static roctx_range_id_t cross;

static void* worker(void* arg) {
    (void)arg;
    printf("name_worker=%d\n", roctxNameOsThread("roctx-worker"));
    printf("worker_push=%d\n", roctxRangePushA("roctx-worker-range"));
    printf("worker_pop=%d\n", roctxRangePop());
    roctxRangeStop(cross);
    return NULL;
}

int main(void) {
    printf("name_main=%d\n", roctxNameOsThread("roctx-main"));
    roctxMarkA("roctx-mark");
    printf("push_outer=%d\n", roctxRangePushA("roctx-outer"));
    printf("push_inner=%d\n", roctxRangePushA("roctx-inner"));
    printf("pop_inner=%d\n", roctxRangePop());
    roctx_range_id_t r = roctxRangeStartA("roctx-async");
    printf("start_nonzero=%d\n", r != 0);
    roctxRangeStop(r);
    cross = roctxRangeStartA("roctx-cross");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);

    printf("pause=%d\n", roctxProfilerPause(0));
    printf("push_paused=%d\n", roctxRangePushA("roctx-while-paused"));
    roctxMarkA("roctx-mark-while-paused");
    printf("pop_paused=%d\n", roctxRangePop());
    printf("resume=%d\n", roctxProfilerResume(0));

    printf("name_agent=%d\n", roctxNameHsaAgent("gpu0", (const struct hsa_agent_s*)&t));
    printf("name_device=%d\n", roctxNameHipDevice("dev0", 0));
    printf("name_stream=%d\n", roctxNameHipStream("stream0", (const struct ihipStream_t*)0));
    printf("pop_outer=%d\n", roctxRangePop());
    printf("pop_unbalanced=%d\n", roctxRangePop());
#ifndef NO_STANDIN
    printf("standin_calls=%d\n", roctx_standin_calls());
#endif
    return 0;
}
