// Where a tool's per-launch cost goes: N empty kernels on one non-blocking stream, timed on
// the host, and the CPU time every thread of the process spent during the timed loop
// (/proc/self/task/*/schedstat, ns), so a tool's own threads (flusher, CUPTI's worker) show
// beside the launching thread. The launching thread pins itself to one core when asked (the
// tool's threads stay free), like tests/cuda/cupti_toggle.cu.
//   nvcc -O2 -arch=sm_90 -o launch_cost launch_cost.cu
//   ./launch_cost [launches=100000] [core=-1] [burst=0]
// burst > 0 times only the launch calls of bursts of that many launches, synchronizing (untimed)
// between bursts: the host's cost per launch. burst = 0 times one long loop, which the GPU
// paces once the launch queue is full (gpu_ns_per_launch then equals the host's figure).
// Prints "LAUNCH n=... enqueue_ns_per_launch=..." and one "THREAD comm=... cpu_ns_per_launch=..."
// line per thread that ran during the loop.
#include <cuda_runtime.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

__global__ void empty_kernel(int) {}

struct ThreadTime {
    std::string comm;
    unsigned long long ns;
};

static std::map<int, ThreadTime> thread_times() {
    std::map<int, ThreadTime> out;
    DIR* d = opendir("/proc/self/task");
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        int tid = std::atoi(e->d_name);
        char path[128];
        std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
        FILE* f = std::fopen(path, "r");
        if (!f) continue;
        unsigned long long ns = 0;
        if (std::fscanf(f, "%llu", &ns) != 1) ns = 0;
        std::fclose(f);
        std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
        char comm[64] = "?";
        if (FILE* c = std::fopen(path, "r")) {
            if (std::fgets(comm, sizeof comm, c)) comm[std::strcspn(comm, "\n")] = 0;
            std::fclose(c);
        }
        out[tid] = {comm, ns};
    }
    closedir(d);
    return out;
}

// The calling thread's voluntary and involuntary context switches (getrusage RUSAGE_THREAD).
static void switches(long out[2]) {
    rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    out[0] = ru.ru_nvcsw;
    out[1] = ru.ru_nivcsw;
}

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 100000;
    int core = argc > 2 ? std::atoi(argv[2]) : -1;
    int burst = argc > 3 ? std::atoi(argv[3]) : 0;
    if (core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(core, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
    for (int i = 0; i < 2000; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    long sw0[2];
    switches(sw0);
    auto before = thread_times();
    cudaEventRecord(e0, s);
    auto t0 = std::chrono::steady_clock::now();
    double host_ns = 0;
    if (burst > 0) {
        // Bursts short enough that the launch queue never fills: the host's own cost per
        // launch (the GPU runs each burst while the host waits, untimed).
        for (int done = 0; done < n; done += burst) {
            auto b0 = std::chrono::steady_clock::now();
            for (int i = 0; i < burst; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
            auto b1 = std::chrono::steady_clock::now();
            host_ns += std::chrono::duration<double, std::nano>(b1 - b0).count();
            cudaStreamSynchronize(s);
        }
    } else {
        for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
    }
    auto t1 = std::chrono::steady_clock::now();
    cudaEventRecord(e1, s);
    auto after = thread_times();
    long sw1[2];
    switches(sw1);
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
    float gpu_ms = 0;
    cudaEventElapsedTime(&gpu_ms, e0, e1);
    double enq = (burst > 0 ? host_ns : std::chrono::duration<double, std::nano>(t1 - t0).count()) / n;
    // gpu_ns_per_launch close to enqueue: the GPU, not the host, set the pace.
    std::printf("LAUNCH n=%d enqueue_ns_per_launch=%.1f gpu_ns_per_launch=%.1f voluntary_switches=%ld involuntary_switches=%ld\n",
                n, enq, gpu_ms * 1e6 / n, sw1[0] - sw0[0], sw1[1] - sw0[1]);
    for (auto& [tid, t] : after) {
        auto b = before.find(tid);
        unsigned long long start = b == before.end() ? 0 : b->second.ns;
        double per = double(t.ns - start) / n;
        if (per >= 1.0) std::printf("THREAD tid=%d comm=%s cpu_ns_per_launch=%.1f\n", tid, t.comm.c_str(), per);
    }
    return 0;
}
