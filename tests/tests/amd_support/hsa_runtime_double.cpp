// A test double of the HSA runtime (ROCr), written against the real ROCm headers: it keeps an
// HsaApiTableContainer of its own functions, loads every library of HSA_TOOLS_LIB in hsa_init
// and calls its OnLoad with the table (as ROCr does), and behaves like a GPU where Metron's
// contract with the runtime needs it:
//  - hsa_amd_queue_intercept_create / _register: packets written to a queue go through the
//    registered intercept handler, which passes them on with the writer callback;
//  - a "GPU" thread executes the packets in order: a dispatch runs for a known number of agent
//    ticks (per kernel), then its completion signal is decremented; with profiling on, the
//    signal remembers start/end in agent ticks;
//  - agent ticks map to the system domain as system = 2 * tick + agent offset, the system
//    clock is CLOCK_MONOTONIC / 10 + 5000 at 100 MHz, so every conversion step is visible;
//  - hsa_amd_signal_async_handler runs handlers on a separate "async events" thread;
//  - kernel descriptors live at fake device addresses whose host copies are only reachable
//    through the loader extension (hsa_ven_amd_loader_query_host_address).
// The application side calls the runtime through the table (ROCr's exported functions are
// trampolines into the same table).

#define AMD_INTERNAL_BUILD 1
#include <hsa.h>
#include <hsa_ext_amd.h>
#include <hsa_api_trace.h>
#include <hsa_ven_amd_loader.h>
#include <hsa_ven_amd_aqlprofile.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <thread>
#include <time.h>
#include <vector>

#include "hsa_runtime_double.h"

HsaApiTableContainer g_tables;

namespace {

const uint64_t kCpu = 0x100, kGpu0 = 0x200, kGpu1 = 0x300;

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
uint64_t sys_now() { return mono_ns() / 10 + 5000; }
uint64_t agent_offset(hsa_agent_t a) { return a.handle == kGpu1 ? 2000 : 1000; }

struct Signal {
  std::atomic<int64_t> value{0};
  uint64_t start = 0, end = 0;  // agent ticks (dispatch) or system ticks (copy)
  bool timed = false;
  struct Queue* doorbell_of = nullptr;
};
Signal* S(hsa_signal_t h) { return reinterpret_cast<Signal*>(h.handle); }

struct Queue {
  hsa_queue_t q;
  hsa_agent_t agent;
  hsa_amd_queue_intercept_handler handler = nullptr;
  void* handler_data = nullptr;
  bool profiling = false;
  uint64_t read = 0;
  Signal doorbell;
  hsa_kernel_dispatch_packet_t* ring = nullptr;
};

struct Handler {
  hsa_signal_t signal;
  hsa_signal_condition_t cond;
  hsa_signal_value_t value;
  hsa_amd_signal_handler fn;
  void* arg;
};

struct Work {
  hsa_kernel_dispatch_packet_t packet;
  hsa_agent_t agent;
  bool profiling;
  bool copy;
  hsa_signal_t copy_signal;
};

std::mutex g_mu;
std::condition_variable g_cv;
std::vector<Handler> g_handlers;
std::deque<Work> g_work;
bool g_stop = false;
bool g_copy_profiling = false;
std::atomic<bool> g_shut_down{false};  // as ROCr: no call works after hsa_shut_down
std::thread g_gpu, g_events;
std::vector<void*> g_tools;
thread_local std::vector<hsa_kernel_dispatch_packet_t>* t_out = nullptr;

struct Kernel {
  const char* symbol;
  uint64_t device_address;
  uint32_t lds, scratch, rsrc1;
  uint64_t ticks;
  uint64_t valu_per_wave;  // what the double's SQ "counts"
  unsigned char host_copy[64];
};
Kernel g_kernels[] = {
    {"_Z10vector_addPKfS0_Pfi.kd", 0x7f0000001000ull, 0, 0, 3 | (1 << 6), 1000, 12, {}},
    {"_Z12matmul_tiledPKfS0_Pfi.kd", 0x7f0000001100ull, 8192, 0, 7 | (2 << 6), 3000, 40, {}},
    {"reduce_sum.kd", 0x7f0000001200ull, 1024, 16, 1, 500, 20, {}},
};

// AQLprofile: gfx90a counters the double knows (block SQ = 6, GRBM = 3) and counts:
// SQ_WAVES (4), SQ_INSTS_VALU (26), SQ_INSTS_SALU (56), GRBM_COUNT (0), GRBM_GUI_ACTIVE (2).
// A start packet arms the profile it carries; each dispatch until its stop packet adds to the
// counts; the stop packet writes them into the profile's output buffer, one uint64_t per event.
// As on the hardware, the packets point at the profile's command buffer, which says what to
// count and where the results go.
const uint16_t kStartMark = 0x5354, kStopMark = 0x5350;
struct Commands {
  void* output;
  uint32_t count;
  hsa_ven_amd_aqlprofile_event_t events[64];
};
struct Counting {
  const Commands* commands = nullptr;
  uint64_t values[64] = {};
} g_counting;
std::atomic<int> g_allowed_buffers{0};
const char* kVariable = "table_of_constants";

bool cond_met(hsa_signal_condition_t c, int64_t v, int64_t cmp) {
  switch (c) {
    case HSA_SIGNAL_CONDITION_EQ: return v == cmp;
    case HSA_SIGNAL_CONDITION_NE: return v != cmp;
    case HSA_SIGNAL_CONDITION_LT: return v < cmp;
    case HSA_SIGNAL_CONDITION_GTE: return v >= cmp;
  }
  return false;
}

void changed() { g_cv.notify_all(); }

// The "async events" thread: runs every handler whose condition holds, outside the lock;
// a handler returning true stays registered.
void events_loop() {
  std::unique_lock<std::mutex> lock(g_mu);
  while (true) {
    std::vector<Handler> ready, waiting;
    for (auto& h : g_handlers)
      (cond_met(h.cond, S(h.signal)->value.load(), h.value) ? ready : waiting).push_back(h);
    if (ready.empty()) {
      if (g_stop) return;
      g_cv.wait_for(lock, std::chrono::milliseconds(5));
      continue;
    }
    g_handlers = waiting;
    lock.unlock();
    std::vector<Handler> again;
    for (auto& h : ready)
      if (h.fn(S(h.signal)->value.load(), h.arg)) again.push_back(h);
    lock.lock();
    for (auto& h : again) g_handlers.push_back(h);
  }
}

void complete(hsa_signal_t s) {
  if (s.handle == 0) return;
  S(s)->value.fetch_sub(1);
  std::lock_guard<std::mutex> lock(g_mu);
  changed();
}

uint64_t kernel_ticks(uint64_t object) {
  for (auto& k : g_kernels)
    if (k.device_address == object) return k.ticks;
  return 100;
}

uint64_t kernel_valu(uint64_t object) {
  for (auto& k : g_kernels)
    if (k.device_address == object) return k.valu_per_wave;
  return 1;
}

void count_dispatch(const hsa_kernel_dispatch_packet_t& p, uint64_t ticks) {
  const Commands* prof = g_counting.commands;
  if (!prof) return;
  auto groups = [](uint32_t g, uint16_t w) { return (g + w - 1) / w; };
  uint64_t wg = uint64_t(groups(p.grid_size_x, p.workgroup_size_x)) *
                groups(p.grid_size_y, p.workgroup_size_y) * groups(p.grid_size_z, p.workgroup_size_z);
  uint64_t items = uint64_t(p.workgroup_size_x) * p.workgroup_size_y * p.workgroup_size_z;
  uint64_t waves = wg * ((items + 63) / 64);
  for (uint32_t i = 0; i < prof->count; i++) {
    const hsa_ven_amd_aqlprofile_event_t& e = prof->events[i];
    uint64_t v = 0;
    if (e.block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_SQ && e.counter_id == 4) v = waves;
    if (e.block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_SQ && e.counter_id == 26)
      v = waves * kernel_valu(p.kernel_object);
    if (e.block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_SQ && e.counter_id == 56) v = waves * 5;
    if (e.block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_GRBM && e.counter_id == 0) v = ticks + 100;
    if (e.block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_GRBM && e.counter_id == 2) v = ticks;
    // L2 (TCC, 16 channels): each channel i sees waves + i hits and i misses.
    if (e.block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_TCC && e.counter_id == 17) v = waves + e.block_index;
    if (e.block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_TCC && e.counter_id == 19) v = e.block_index;
    g_counting.values[i] += v;
  }
}

void vendor_packet(const hsa_kernel_dispatch_packet_t& raw) {
  auto& p = reinterpret_cast<const hsa_ext_amd_aql_pm4_packet_t&>(raw);
  const Commands* cmd;
  std::memcpy(&cmd, &p.pm4_command[1], sizeof cmd);
  if (p.pm4_command[0] == kStartMark) {
    g_counting.commands = cmd;
    std::memset(g_counting.values, 0, sizeof g_counting.values);
  } else if (p.pm4_command[0] == kStopMark && g_counting.commands == cmd) {
    std::memcpy(cmd->output, g_counting.values, 8 * cmd->count);
    g_counting.commands = nullptr;
  }
}

// The "GPU": executes work in order, one item at a time.
void gpu_loop() {
  uint64_t last_end = 0;
  while (true) {
    Work w;
    {
      std::unique_lock<std::mutex> lock(g_mu);
      g_cv.wait(lock, [] { return g_stop || !g_work.empty(); });
      if (g_work.empty()) return;
      w = g_work.front();
      g_work.pop_front();
    }
    uint64_t start = sys_now();
    if (start < last_end) start = last_end;
    if (w.copy) {
      uint64_t end = start + 600;
      while (sys_now() < end) std::this_thread::sleep_for(std::chrono::microseconds(20));
      last_end = end;
      if (g_copy_profiling) {
        S(w.copy_signal)->start = start;
        S(w.copy_signal)->end = end;
        S(w.copy_signal)->timed = true;
      }
      complete(w.copy_signal);
      continue;
    }
    uint16_t type = (w.packet.header >> HSA_PACKET_HEADER_TYPE) & 0xff;
    if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      uint64_t off = agent_offset(w.agent);
      uint64_t start_tick = (start - off + 1) / 2;
      uint64_t end_tick = start_tick + kernel_ticks(w.packet.kernel_object);
      uint64_t end = end_tick * 2 + off;
      while (sys_now() < end) std::this_thread::sleep_for(std::chrono::microseconds(20));
      last_end = end;
      if (w.profiling && w.packet.completion_signal.handle) {
        Signal* s = S(w.packet.completion_signal);
        s->start = start_tick;
        s->end = end_tick;
        s->timed = true;
      }
      count_dispatch(w.packet, end_tick - start_tick);
    } else if (type == HSA_PACKET_TYPE_VENDOR_SPECIFIC) {
      vendor_packet(w.packet);
    }
    complete(w.packet.completion_signal);
  }
}

void submit(const hsa_kernel_dispatch_packet_t* p, uint64_t n, Queue* q) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (uint64_t i = 0; i < n; i++) g_work.push_back(Work{p[i], q->agent, q->profiling, false, {0}});
  changed();
}

void writer(const void* pkts, uint64_t n) {
  auto p = static_cast<const hsa_kernel_dispatch_packet_t*>(pkts);
  t_out->insert(t_out->end(), p, p + n);
}

// A doorbell write: the packets from the queue's read index up to `index` go through the
// intercept handler (if any), then to the GPU.
void ring_doorbell(Queue* q, uint64_t index) {
  std::vector<hsa_kernel_dispatch_packet_t> in, out;
  for (uint64_t i = q->read; i <= index; i++) in.push_back(q->ring[i % q->q.size]);
  uint64_t first = q->read;
  q->read = index + 1;
  if (q->handler) {
    t_out = &out;
    q->handler(in.data(), in.size(), first, q->handler_data, writer);
    t_out = nullptr;
  } else {
    out = in;
  }
  submit(out.data(), out.size(), q);
}

// ---- the runtime's functions (table entries) ----

hsa_status_t d_system_get_info(hsa_system_info_t attribute, void* value) {
  if (g_shut_down) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  switch (attribute) {
    case HSA_SYSTEM_INFO_TIMESTAMP: *static_cast<uint64_t*>(value) = sys_now(); return HSA_STATUS_SUCCESS;
    case HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY: *static_cast<uint64_t*>(value) = 100000000ull; return HSA_STATUS_SUCCESS;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

hsa_status_t d_iterate_agents(hsa_status_t (*cb)(hsa_agent_t, void*), void* data) {
  for (uint64_t h : {kCpu, kGpu0, kGpu1}) {
    hsa_status_t s = cb(hsa_agent_t{h}, data);
    if (s != HSA_STATUS_SUCCESS) return s == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : s;
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute, void* value) {
  bool gpu = agent.handle != kCpu;
  switch (static_cast<int>(attribute)) {
    case HSA_AGENT_INFO_NAME:
      std::snprintf(static_cast<char*>(value), 64, "%s", gpu ? "gfx90a" : "cpu-double");
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_DEVICE:
      *static_cast<hsa_device_type_t*>(value) = gpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME:
      std::snprintf(static_cast<char*>(value), 64, "%s",
                    agent.handle == kGpu1 ? "AMD Instinct MI210 (double) #2"
                    : gpu                 ? "AMD Instinct MI210 (double)"
                                          : "Host CPU (double)");
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

hsa_status_t d_signal_create(hsa_signal_value_t initial, uint32_t, const hsa_agent_t*,
                             hsa_signal_t* signal) {
  Signal* s = new Signal;
  s->value = initial;
  signal->handle = reinterpret_cast<uint64_t>(s);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_signal_destroy(hsa_signal_t) { return HSA_STATUS_SUCCESS; }

hsa_signal_value_t d_signal_load(hsa_signal_t s) { return S(s)->value.load(); }

void d_signal_store(hsa_signal_t s, hsa_signal_value_t v) {
  Signal* sig = S(s);
  if (sig->doorbell_of) {
    ring_doorbell(sig->doorbell_of, uint64_t(v));
    return;
  }
  sig->value.store(v);
  std::lock_guard<std::mutex> lock(g_mu);
  changed();
}

void d_signal_subtract(hsa_signal_t s, hsa_signal_value_t v) {
  S(s)->value.fetch_sub(v);
  std::lock_guard<std::mutex> lock(g_mu);
  changed();
}

hsa_signal_value_t d_signal_wait(hsa_signal_t s, hsa_signal_condition_t cond,
                                 hsa_signal_value_t cmp, uint64_t, hsa_wait_state_t) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::unique_lock<std::mutex> lock(g_mu);
  while (!cond_met(cond, S(s)->value.load(), cmp)) {
    if (g_cv.wait_until(lock, deadline) == std::cv_status::timeout &&
        !cond_met(cond, S(s)->value.load(), cmp)) {
      std::fprintf(stderr, "double: signal wait timed out (value %lld)\n",
                   (long long)S(s)->value.load());
      std::exit(3);
    }
  }
  return S(s)->value.load();
}

hsa_status_t make_queue(hsa_agent_t agent, uint32_t size, hsa_queue_t** queue) {
  static std::atomic<uint64_t> next_id{7};
  Queue* q = new Queue;
  q->agent = agent;
  q->ring = static_cast<hsa_kernel_dispatch_packet_t*>(aligned_alloc(64, size * 64));
  std::memset(q->ring, 0, size * 64);
  q->q.type = HSA_QUEUE_TYPE_MULTI;
  q->q.features = HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
  q->q.base_address = q->ring;
  q->doorbell.doorbell_of = q;
  q->q.doorbell_signal.handle = reinterpret_cast<uint64_t>(&q->doorbell);
  q->q.size = size;
  q->q.id = next_id++;
  *queue = &q->q;
  return HSA_STATUS_SUCCESS;
}

Queue* Q(hsa_queue_t* q) { return reinterpret_cast<Queue*>(q); }  // q is the first member

hsa_status_t d_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t,
                            void (*)(hsa_status_t, hsa_queue_t*, void*), void*, uint32_t,
                            uint32_t, hsa_queue_t** queue) {
  return make_queue(agent, size, queue);
}

hsa_status_t d_intercept_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t,
                                void (*)(hsa_status_t, hsa_queue_t*, void*), void*, uint32_t,
                                uint32_t, hsa_queue_t** queue) {
  return make_queue(agent, size, queue);
}

hsa_status_t d_intercept_register(hsa_queue_t* queue, hsa_amd_queue_intercept_handler cb,
                                  void* data) {
  Q(queue)->handler = cb;
  Q(queue)->handler_data = data;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_queue_destroy(hsa_queue_t*) { return HSA_STATUS_SUCCESS; }

hsa_status_t d_set_profiler_enabled(hsa_queue_t* queue, int enable) {
  Q(queue)->profiling = enable != 0;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_async_copy_enable(bool enable) {
  g_copy_profiling = enable;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_get_dispatch_time(hsa_agent_t, hsa_signal_t signal,
                                 hsa_amd_profiling_dispatch_time_t* time) {
  Signal* s = S(signal);
  if (!s->timed) return HSA_STATUS_ERROR;
  time->start = s->start;
  time->end = s->end;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_get_async_copy_time(hsa_signal_t signal, hsa_amd_profiling_async_copy_time_t* time) {
  Signal* s = S(signal);
  if (!s->timed) return HSA_STATUS_ERROR;
  time->start = s->start;
  time->end = s->end;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_tick_to_system(hsa_agent_t agent, uint64_t tick, uint64_t* system) {
  *system = tick * 2 + agent_offset(agent);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_async_handler(hsa_signal_t signal, hsa_signal_condition_t cond,
                             hsa_signal_value_t value, hsa_amd_signal_handler handler, void* arg) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_handlers.push_back(Handler{signal, cond, value, handler, arg});
  changed();
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_async_copy(void* dst, hsa_agent_t, const void* src, hsa_agent_t, size_t size,
                          uint32_t, const hsa_signal_t*, hsa_signal_t completion) {
  std::memcpy(dst, src, size);
  std::lock_guard<std::mutex> lock(g_mu);
  g_work.push_back(Work{{}, {kGpu0}, false, true, completion});
  changed();
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_memory_copy(void* dst, const void* src, size_t size) {
  std::memcpy(dst, src, size);
  return HSA_STATUS_SUCCESS;
}

// One executable holding the three kernels and one variable.
hsa_status_t d_executable_freeze(hsa_executable_t, const char*) { return HSA_STATUS_SUCCESS; }

hsa_status_t d_iterate_symbols(hsa_executable_t exe,
                               hsa_status_t (*cb)(hsa_executable_t, hsa_executable_symbol_t, void*),
                               void* data) {
  for (auto& k : g_kernels) {
    hsa_status_t s = cb(exe, hsa_executable_symbol_t{reinterpret_cast<uint64_t>(&k)}, data);
    if (s != HSA_STATUS_SUCCESS) return s;
  }
  return cb(exe, hsa_executable_symbol_t{reinterpret_cast<uint64_t>(kVariable)}, data);
}

hsa_status_t d_symbol_get_info(hsa_executable_symbol_t symbol,
                               hsa_executable_symbol_info_t attribute, void* value) {
  if (symbol.handle == reinterpret_cast<uint64_t>(kVariable)) {
    if (attribute == HSA_EXECUTABLE_SYMBOL_INFO_TYPE) {
      *static_cast<hsa_symbol_kind_t*>(value) = HSA_SYMBOL_KIND_VARIABLE;
      return HSA_STATUS_SUCCESS;
    }
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  Kernel* k = reinterpret_cast<Kernel*>(symbol.handle);
  switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
      *static_cast<hsa_symbol_kind_t*>(value) = HSA_SYMBOL_KIND_KERNEL;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
      *static_cast<uint32_t*>(value) = uint32_t(std::strlen(k->symbol));
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
      std::memcpy(value, k->symbol, std::strlen(k->symbol));  // not NUL-terminated
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
      *static_cast<uint64_t*>(value) = k->device_address;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

hsa_status_t d_query_host_address(const void* device, const void** host) {
  for (auto& k : g_kernels)
    if (reinterpret_cast<uint64_t>(device) == k.device_address) {
      *host = k.host_copy;
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t aql_validate(hsa_agent_t, const hsa_ven_amd_aqlprofile_event_t* e, bool* ok) {
  bool sq = e->block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_SQ &&
            (e->counter_id == 4 || e->counter_id == 26 || e->counter_id == 56);
  bool grbm = e->block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_GRBM &&
              (e->counter_id == 0 || e->counter_id == 2);
  bool tcc = e->block_name == HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_TCC &&
             (e->counter_id == 17 || e->counter_id == 19) && e->block_index < 16;
  *ok = ((sq || grbm) && e->block_index == 0) || tcc;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t aql_get_info(const hsa_ven_amd_aqlprofile_profile_t* p,
                          hsa_ven_amd_aqlprofile_info_type_t attribute, void* value) {
  switch (attribute) {
    case HSA_VEN_AMD_AQLPROFILE_INFO_COMMAND_BUFFER_SIZE: *static_cast<uint32_t*>(value) = 1024; return HSA_STATUS_SUCCESS;
    case HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA_SIZE: *static_cast<uint32_t*>(value) = 8 * p->event_count; return HSA_STATUS_SUCCESS;
    case HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_ID: {
      auto* q = static_cast<hsa_ven_amd_aqlprofile_id_query_t*>(value);
      if (std::strcmp(q->name, "TCC") == 0) { q->id = HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_TCC; q->instance_count = 16; }
      else if (std::strcmp(q->name, "SQ") == 0) { q->id = HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_SQ; q->instance_count = 1; }
      else if (std::strcmp(q->name, "GRBM") == 0) { q->id = HSA_VEN_AMD_AQLPROFILE_BLOCK_NAME_GRBM; q->instance_count = 1; }
      else return HSA_STATUS_ERROR_INVALID_ARGUMENT;
      return HSA_STATUS_SUCCESS;
    }
    default: return HSA_STATUS_ERROR;
  }
}

hsa_status_t aql_packet(const hsa_ven_amd_aqlprofile_profile_t* p, hsa_ext_amd_aql_pm4_packet_t* out,
                        uint16_t mark) {
  if (!p->command_buffer.ptr || p->command_buffer.size < sizeof(Commands) || !p->output_buffer.ptr ||
      p->output_buffer.size < 8 * p->event_count || p->event_count > 64)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  Commands* cmd = static_cast<Commands*>(p->command_buffer.ptr);
  cmd->output = p->output_buffer.ptr;
  cmd->count = p->event_count;
  std::memcpy(cmd->events, p->events, p->event_count * sizeof *p->events);
  std::memset(out, 0, sizeof *out);
  out->header = HSA_PACKET_TYPE_VENDOR_SPECIFIC << HSA_PACKET_HEADER_TYPE;
  out->pm4_command[0] = mark;
  std::memcpy(&out->pm4_command[1], &cmd, sizeof cmd);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t aql_start(hsa_ven_amd_aqlprofile_profile_t* p, hsa_ext_amd_aql_pm4_packet_t* out) {
  return aql_packet(p, out, kStartMark);
}
hsa_status_t aql_stop(const hsa_ven_amd_aqlprofile_profile_t* p, hsa_ext_amd_aql_pm4_packet_t* out) {
  return aql_packet(p, out, kStopMark);
}

// Each event's value comes back as two samples (two "instances"), which a tool must add.
hsa_status_t aql_iterate(const hsa_ven_amd_aqlprofile_profile_t* p,
                         hsa_ven_amd_aqlprofile_data_callback_t callback, void* data) {
  const uint64_t* out = static_cast<const uint64_t*>(p->output_buffer.ptr);
  for (uint32_t i = 0; i < p->event_count; i++) {
    for (uint32_t sample = 0; sample < 2; sample++) {
      hsa_ven_amd_aqlprofile_info_data_t info;
      std::memset(&info, 0, sizeof info);
      info.sample_id = sample;
      info.pmc_data.event = p->events[i];
      info.pmc_data.result = sample == 0 ? out[i] / 2 : out[i] - out[i] / 2;
      hsa_status_t s = callback(HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA, &info, data);
      if (s != HSA_STATUS_SUCCESS) return s;
    }
  }
  return HSA_STATUS_SUCCESS;
}

// One host memory pool (kernarg, fine-grained) on the CPU agent.
const uint64_t kPool = 0x500;
hsa_status_t d_iterate_pools(hsa_agent_t agent, hsa_status_t (*cb)(hsa_amd_memory_pool_t, void*),
                             void* data) {
  if (agent.handle != kCpu) return HSA_STATUS_SUCCESS;
  hsa_status_t s = cb(hsa_amd_memory_pool_t{kPool}, data);
  return s == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : s;
}
hsa_status_t d_pool_info(hsa_amd_memory_pool_t, hsa_amd_memory_pool_info_t attribute, void* value) {
  switch (attribute) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT: *static_cast<hsa_amd_segment_t*>(value) = HSA_AMD_SEGMENT_GLOBAL; return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
      *static_cast<uint32_t*>(value) = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: *static_cast<bool*>(value) = true; return HSA_STATUS_SUCCESS;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}
hsa_status_t d_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t, void** ptr) {
  if (pool.handle != kPool) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *ptr = std::calloc(1, size);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t d_allow_access(uint32_t n, const hsa_agent_t* agents, const uint32_t*, const void*) {
  if (n == 1 && agents[0].handle != kCpu) g_allowed_buffers++;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t d_major_extension_table(uint16_t extension, uint16_t major, size_t size,
                                     void* table) {
  if (extension == HSA_EXTENSION_AMD_AQLPROFILE && major == 1 && !std::getenv("DOUBLE_NO_AQLPROFILE")) {
    hsa_ven_amd_aqlprofile_1_00_pfn_t t;
    std::memset(&t, 0, sizeof t);
    t.hsa_ven_amd_aqlprofile_validate_event = aql_validate;
    t.hsa_ven_amd_aqlprofile_get_info = aql_get_info;
    t.hsa_ven_amd_aqlprofile_start = aql_start;
    t.hsa_ven_amd_aqlprofile_stop = aql_stop;
    t.hsa_ven_amd_aqlprofile_iterate_data = aql_iterate;
    std::memcpy(table, &t, size < sizeof t ? size : sizeof t);
    return HSA_STATUS_SUCCESS;
  }
  if (extension != HSA_EXTENSION_AMD_LOADER || major != 1) return HSA_STATUS_ERROR;
  hsa_ven_amd_loader_1_01_pfn_t t;
  std::memset(&t, 0, sizeof t);
  t.hsa_ven_amd_loader_query_host_address = d_query_host_address;
  std::memcpy(table, &t, size < sizeof t ? size : sizeof t);
  return HSA_STATUS_SUCCESS;
}

void put32(unsigned char* d, int at, uint32_t v) { std::memcpy(d + at, &v, 4); }

}  // namespace

// ---- what the application links against ----

hsa_status_t double_hsa_init() {
  for (auto& k : g_kernels) {
    put32(k.host_copy, 0, k.lds);
    put32(k.host_copy, 4, k.scratch);
    put32(k.host_copy, 8, 24);
    put32(k.host_copy, 48, k.rsrc1);
  }
  CoreApiTable& c = g_tables.core;
  c.hsa_system_get_info_fn = d_system_get_info;
  c.hsa_iterate_agents_fn = d_iterate_agents;
  c.hsa_agent_get_info_fn = d_agent_get_info;
  c.hsa_queue_create_fn = d_queue_create;
  c.hsa_queue_destroy_fn = d_queue_destroy;
  c.hsa_signal_create_fn = d_signal_create;
  c.hsa_signal_destroy_fn = d_signal_destroy;
  c.hsa_signal_load_relaxed_fn = d_signal_load;
  c.hsa_signal_load_scacquire_fn = d_signal_load;
  c.hsa_signal_store_relaxed_fn = d_signal_store;
  c.hsa_signal_store_screlease_fn = d_signal_store;
  c.hsa_signal_subtract_screlease_fn = d_signal_subtract;
  c.hsa_signal_subtract_relaxed_fn = d_signal_subtract;
  c.hsa_signal_wait_scacquire_fn = d_signal_wait;
  c.hsa_memory_copy_fn = d_memory_copy;
  c.hsa_executable_freeze_fn = d_executable_freeze;
  c.hsa_executable_iterate_symbols_fn = d_iterate_symbols;
  c.hsa_executable_symbol_get_info_fn = d_symbol_get_info;
  c.hsa_system_get_major_extension_table_fn = d_major_extension_table;
  AmdExtTable& a = g_tables.amd_ext;
  a.hsa_amd_profiling_set_profiler_enabled_fn = d_set_profiler_enabled;
  a.hsa_amd_profiling_async_copy_enable_fn = d_async_copy_enable;
  a.hsa_amd_profiling_get_dispatch_time_fn = d_get_dispatch_time;
  a.hsa_amd_profiling_get_async_copy_time_fn = d_get_async_copy_time;
  a.hsa_amd_profiling_convert_tick_to_system_domain_fn = d_tick_to_system;
  a.hsa_amd_signal_async_handler_fn = d_async_handler;
  a.hsa_amd_memory_async_copy_fn = d_async_copy;
  a.hsa_amd_queue_intercept_create_fn = d_intercept_create;
  a.hsa_amd_queue_intercept_register_fn = d_intercept_register;
  a.hsa_amd_agent_iterate_memory_pools_fn = d_iterate_pools;
  a.hsa_amd_memory_pool_get_info_fn = d_pool_info;
  a.hsa_amd_memory_pool_allocate_fn = d_pool_allocate;
  a.hsa_amd_agents_allow_access_fn = d_allow_access;

  g_gpu = std::thread(gpu_loop);
  g_events = std::thread(events_loop);

  // ROCr: HSA_TOOLS_LIB is a space-separated list; each library is dlopened and its OnLoad
  // called with the table, the runtime version and the tools that failed before it.
  const char* tools = std::getenv("HSA_TOOLS_LIB");
  std::vector<const char*> failed;
  if (tools) {
    std::string all(tools);
    size_t at = 0;
    while (at < all.size()) {
      size_t end = all.find(' ', at);
      if (end == std::string::npos) end = all.size();
      std::string name = all.substr(at, end - at);
      at = end + 1;
      if (name.empty()) continue;
      void* h = dlopen(name.c_str(), RTLD_NOW);
      typedef bool (*OnLoadFn)(HsaApiTable*, uint64_t, uint64_t, const char* const*);
      OnLoadFn on_load = h ? reinterpret_cast<OnLoadFn>(dlsym(h, "OnLoad")) : nullptr;
      if (!on_load || !on_load(&g_tables.root, 1, failed.size(), failed.data())) {
        failed.push_back(strdup(name.c_str()));
        continue;
      }
      g_tools.push_back(h);
    }
  }
  std::printf("tools_loaded=%zu\n", g_tools.size());
  std::printf("profile_buffers_shared=%d\n", g_allowed_buffers.load());
  return HSA_STATUS_SUCCESS;
}

hsa_status_t double_hsa_shut_down() {
  for (void* h : g_tools) {
    typedef void (*OnUnloadFn)();
    if (auto f = reinterpret_cast<OnUnloadFn>(dlsym(h, "OnUnload"))) f();
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_stop = true;
    changed();
  }
  g_gpu.join();
  g_events.join();
  g_shut_down = true;
  return HSA_STATUS_SUCCESS;
}

hsa_agent_t double_gpu(int i) { return hsa_agent_t{i == 0 ? kGpu0 : kGpu1}; }
hsa_agent_t double_cpu() { return hsa_agent_t{kCpu}; }
uint64_t double_mono_ns() { return mono_ns(); }
