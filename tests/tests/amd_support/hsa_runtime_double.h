// The test double's own entry points (see hsa_runtime_double.cpp).
#pragma once
#define AMD_INTERNAL_BUILD 1
#include <hsa.h>
#include <hsa_api_trace.h>

extern HsaApiTableContainer g_tables;  // what the runtime's trampolines call through

hsa_status_t double_hsa_init();  // hsa_init: loads HSA_TOOLS_LIB, calls OnLoad
hsa_status_t double_hsa_shut_down();  // calls OnUnload, stops the double's threads
hsa_agent_t double_gpu(int index);
hsa_agent_t double_cpu();
uint64_t double_mono_ns();
