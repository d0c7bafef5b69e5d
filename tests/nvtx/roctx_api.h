/* The ROCTx API as ROCprofiler-SDK's rocprofiler-sdk-roctx/roctx.h and types.h declare it
 * (declared here so the tests need no ROCm install). */
#ifndef METRON_TEST_ROCTX_API_H
#define METRON_TEST_ROCTX_API_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef uint64_t roctx_range_id_t;
typedef uint64_t roctx_thread_id_t;
struct hsa_agent_s;
struct ihipStream_t;
void roctxMarkA(const char* message);
int roctxRangePushA(const char* message);
int roctxRangePop(void);
roctx_range_id_t roctxRangeStartA(const char* message);
void roctxRangeStop(roctx_range_id_t id);
int roctxProfilerPause(roctx_thread_id_t tid);
int roctxProfilerResume(roctx_thread_id_t tid);
int roctxNameOsThread(const char* name);
int roctxNameHsaAgent(const char* name, const struct hsa_agent_s* agent);
int roctxNameHipDevice(const char* name, int device_id);
int roctxNameHipStream(const char* name, const struct ihipStream_t* stream);
#ifdef __cplusplus
}
#endif
#endif
