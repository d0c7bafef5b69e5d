/* A stand-in for the real ROCTx library (libroctx64.so): the target Metron forwards to with
 * dlsym(RTLD_NEXT). Its return values are distinctive, so the test sees they reach the
 * application unchanged; it counts every call it receives. */
#include "roctx_api.h"
#include <stdio.h>

static int depth;
static uint64_t next_id = 5000;
static int calls;

void roctxMarkA(const char* message) { (void)message; calls++; }
int roctxRangePushA(const char* message) { (void)message; calls++; return 100 + depth++; }
int roctxRangePop(void) { calls++; return depth > 0 ? 200 + --depth : -7; }
roctx_range_id_t roctxRangeStartA(const char* message) { (void)message; calls++; return next_id++; }
void roctxRangeStop(roctx_range_id_t id) { (void)id; calls++; }
int roctxProfilerPause(roctx_thread_id_t tid) { (void)tid; calls++; return 11; }
int roctxProfilerResume(roctx_thread_id_t tid) { (void)tid; calls++; return 12; }
int roctxNameOsThread(const char* name) { (void)name; calls++; return 13; }
int roctxNameHsaAgent(const char* name, const struct hsa_agent_s* agent) { (void)name; (void)agent; calls++; return 14; }
int roctxNameHipDevice(const char* name, int device_id) { (void)name; (void)device_id; calls++; return 15; }
int roctxNameHipStream(const char* name, const struct ihipStream_t* stream) { (void)name; (void)stream; calls++; return 16; }
int roctx_standin_calls(void) { return calls; }
