/* The minimal CUPTI tool a long run is compared with: loaded by the CUDA driver through
 * CUDA_INJECTION64_PATH, it enables CONCURRENT_KERNEL activity records, counts them as CUPTI
 * completes its buffers (4 MiB each, reused), and prints the count at exit. No API tracing,
 * no join, no output files: what any CUPTI kernel-timing tool pays at least.
 *   gcc -O2 -shared -fPIC -o libkernel_records_tool.so kernel_records_tool.c \
 *       -I$CUDA/include -L$CUDA/lib64 -lcupti
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define BUFFER_BYTES (4u << 20)
static unsigned long long records, dropped;

static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = (uint8_t*)aligned_alloc(8, BUFFER_BYTES);
    *size = BUFFER_BYTES;
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                               size_t valid) {
    CUpti_Activity* record = NULL;
    size_t n = 0;
    (void)size;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) records++;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &n) == CUPTI_SUCCESS) dropped += n;
    free(buffer);
}

static void at_exit(void) {
    cuptiActivityFlushAll(1);
    fprintf(stderr, "kernel_records_tool: %llu records, %llu dropped\n", records, dropped);
}

int InitializeInjection(void) {
    if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) return 0;
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return 0;
    atexit(at_exit);
    return 1;
}
