// The application side of the HSA test double: plain HSA code (through the runtime's table,
// as ROCr's exported functions are), with Metron C-API regions around its dispatches.
// Prints key=value lines the test reads (CLOCK_MONOTONIC ns around each wait).
//   hsa_app normal   three kernels on two queues and two GPUs, a barrier, copies
//   hsa_app burst    50 dispatches in one doorbell write (for a small signal pool)
//   hsa_app stress   4 threads, 500 dispatches each in doorbell writes of 10, 2 queues per GPU 0/1
//   hsa_app api      known HSA calls for API tracing: 3 hsa_system_get_info, a signal made,
//                    stored, loaded and destroyed, and a wait that another thread ends

#include "hsa_runtime_double.h"

#include <metron/metron.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <thread>
#include <vector>

#define CORE(fn) g_tables.core.hsa_##fn##_fn
#define AMD(fn) g_tables.amd_ext.hsa_amd_##fn##_fn

namespace {

uint64_t kernel_object(const char* symbol) {
  struct Find {
    const char* want;
    uint64_t object;
  } find{symbol, 0};
  CORE(executable_iterate_symbols)(
      hsa_executable_t{1},
      [](hsa_executable_t, hsa_executable_symbol_t s, void* data) {
        auto* f = static_cast<Find*>(data);
        hsa_symbol_kind_t kind;
        CORE(executable_symbol_get_info)(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind);
        if (kind != HSA_SYMBOL_KIND_KERNEL) return HSA_STATUS_SUCCESS;
        uint32_t len = 0;
        char name[128] = {0};
        CORE(executable_symbol_get_info)(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len);
        CORE(executable_symbol_get_info)(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name);
        if (std::strlen(f->want) == len && std::strncmp(name, f->want, len) == 0)
          CORE(executable_symbol_get_info)(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                           &f->object);
        return HSA_STATUS_SUCCESS;
      },
      &find);
  return find.object;
}

struct Writer {
  hsa_queue_t* q;
  uint64_t next = 0;

  hsa_kernel_dispatch_packet_t* slot() {
    auto* ring = static_cast<hsa_kernel_dispatch_packet_t*>(q->base_address);
    return &ring[next++ % q->size];
  }
  void dispatch(uint64_t object, uint32_t gx, uint32_t gy, uint16_t wx, uint16_t wy,
                uint32_t group, uint32_t priv, hsa_signal_t done) {
    hsa_kernel_dispatch_packet_t* p = slot();
    std::memset(p, 0, sizeof *p);
    p->setup = (gy > 1 ? 2 : 1) << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    p->workgroup_size_x = wx;
    p->workgroup_size_y = wy;
    p->workgroup_size_z = 1;
    p->grid_size_x = gx;
    p->grid_size_y = gy;
    p->grid_size_z = 1;
    p->group_segment_size = group;
    p->private_segment_size = priv;
    p->kernel_object = object;
    p->completion_signal = done;
    p->header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                (1 << HSA_PACKET_HEADER_BARRIER);
  }
  void barrier(hsa_signal_t done) {
    auto* p = reinterpret_cast<hsa_barrier_and_packet_t*>(slot());
    std::memset(p, 0, sizeof *p);
    p->completion_signal = done;
    p->header = HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE;
  }
  void ring() { CORE(signal_store_screlease)(q->doorbell_signal, hsa_signal_value_t(next - 1)); }
};

hsa_signal_t signal(int64_t value) {
  hsa_signal_t s;
  CORE(signal_create)(value, 0, nullptr, &s);
  return s;
}

void wait(hsa_signal_t s) {
  CORE(signal_wait_scacquire)(s, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
}

hsa_queue_t* queue(int gpu) {
  hsa_queue_t* q = nullptr;
  if (CORE(queue_create)(double_gpu(gpu), 256, HSA_QUEUE_TYPE_MULTI, nullptr, nullptr, 0, 0, &q) !=
      HSA_STATUS_SUCCESS) {
    std::fprintf(stderr, "queue_create failed\n");
    std::exit(2);
  }
  return q;
}

}  // namespace

int main(int argc, char** argv) {
  bool burst = argc > 1 && std::strcmp(argv[1], "burst") == 0;
  bool stress = argc > 1 && std::strcmp(argv[1], "stress") == 0;
  bool api = argc > 1 && std::strcmp(argv[1], "api") == 0;
  double_hsa_init();
  CORE(executable_freeze)(hsa_executable_t{1}, "");
  uint64_t vector_add = kernel_object("_Z10vector_addPKfS0_Pfi.kd");
  uint64_t matmul = kernel_object("_Z12matmul_tiledPKfS0_Pfi.kd");
  uint64_t reduce = kernel_object("reduce_sum.kd");

  Writer w{queue(0)};
  if (stress) {
    const int threads = 4, per_thread = 500, batch = 10;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; t++) {
      workers.emplace_back([&, t] {
        Writer mine{queue(t % 2)};
        hsa_signal_t done = signal(batch);
        metron_region_begin("stress");
        for (int i = 0; i < per_thread; i += batch) {
          CORE(signal_store_relaxed)(done, batch);
          for (int j = 0; j < batch; j++) mine.dispatch(reduce, 1024, 1, 256, 1, 0, 0, done);
          mine.ring();
          wait(done);
        }
        metron_region_end("stress");
        CORE(queue_destroy)(mine.q);
      });
    }
    for (auto& w : workers) w.join();
    std::printf("stress_done=1\n");
  } else if (api) {
    std::printf("api_before=%llu\n", (unsigned long long)double_mono_ns());
    uint64_t frequency = 0;
    for (int i = 0; i < 3; i++)
      CORE(system_get_info)(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &frequency);
    hsa_signal_t s = signal(5);
    CORE(signal_store_relaxed)(s, 2);
    std::printf("loaded=%lld\n", (long long)CORE(signal_load_relaxed)(s));
    CORE(signal_destroy)(s);
    std::printf("frequency=%llu\n", (unsigned long long)frequency);
    std::printf("api_after=%llu\n", (unsigned long long)double_mono_ns());
    // A wait that only ends when the other thread's store lands.
    hsa_signal_t gate = signal(1);
    uint64_t stored_at = 0;
    std::thread setter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      stored_at = double_mono_ns();
      CORE(signal_store_screlease)(gate, 0);
    });
    std::printf("wait_before=%llu\n", (unsigned long long)double_mono_ns());
    wait(gate);
    std::printf("wait_after=%llu\n", (unsigned long long)double_mono_ns());
    setter.join();
    std::printf("stored_at=%llu\n", (unsigned long long)stored_at);
  } else if (burst) {
    hsa_signal_t done = signal(50);
    metron_region_begin("burst");
    for (int i = 0; i < 50; i++) w.dispatch(vector_add, 1024, 1, 256, 1, 0, 0, done);
    w.ring();
    wait(done);
    metron_region_end("burst");
    std::printf("burst_done=1\n");
  } else {
    hsa_signal_t a = signal(1);
    metron_region_begin("vector_step");
    std::printf("vector_before=%llu\n", (unsigned long long)double_mono_ns());
    w.dispatch(vector_add, 1048576, 1, 256, 1, 0, 0, a);
    w.ring();
    wait(a);
    std::printf("vector_after=%llu\n", (unsigned long long)double_mono_ns());
    metron_region_end("vector_step");

    // Two dispatches in one doorbell write, the first without a completion signal; then a
    // barrier packet whose signal Metron must leave alone.
    hsa_signal_t b = signal(1), barrier_done = signal(1);
    metron_region_begin("matmul_step");
    w.dispatch(matmul, 512, 512, 16, 16, 8192 + 1024, 0, hsa_signal_t{0});
    w.dispatch(matmul, 256, 256, 16, 16, 8192, 0, b);
    w.barrier(barrier_done);
    w.ring();
    wait(b);
    wait(barrier_done);
    metron_region_end("matmul_step");

    std::thread worker([&] {
      Writer w2{queue(1)};
      hsa_signal_t c = signal(1);
      metron_region_begin("reduce_step");
      w2.dispatch(reduce, 65536, 1, 1024, 1, 1024, 16, c);
      w2.ring();
      wait(c);
      metron_region_end("reduce_step");
      CORE(queue_destroy)(w2.q);
    });
    worker.join();

    static char host[4096], device[4096];
    std::memset(host, 7, sizeof host);
    hsa_signal_t copied = signal(1);
    AMD(memory_async_copy)(device, double_gpu(0), host, double_cpu(), sizeof host, 0, nullptr,
                           copied);
    wait(copied);
    CORE(memory_copy)(host, device, 1024);
    std::printf("copy_ok=%d\n", device[4095] == 7 ? 1 : 0);
  }
  CORE(queue_destroy)(w.q);
  double_hsa_shut_down();
  std::printf("done=1\n");
  return 0;
}
