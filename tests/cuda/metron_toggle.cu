// Metron's whole per-launch cost, measured IN ONE PROCESS: under
// `metron run`, collection is switched off and on between many short rounds with
// metron_stop()/metron_start() (found with dlsym), which switch CUPTI's kernel, copy and API
// records and Metron's launch and API callbacks off and on. Each round times a burst of
// empty launches once per configuration, in alternating order, synchronizing (untimed)
// between bursts so the launch queue never paces the host. The launching thread pins itself to
// one core; Metron's and CUPTI's threads stay free. Compare the on-off difference with
// tests/cuda/cupti_toggle.cu's N -> KCD (CUPTI's floor for kernel records plus the join's
// callbacks) measured in the same call.
//   nvcc -O2 -arch=sm_90 -o metron_toggle metron_toggle.cu -ldl
//   metron run -- ./metron_toggle [rounds=150] [launches=2000] [core=3]
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty_kernel(int) {}

using Switch = int (*)();

static double pct(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * (v.size() - 1) + 0.5))];
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 150;
    int n = argc > 2 ? std::atoi(argv[2]) : 2000;
    int core = argc > 3 ? std::atoi(argv[3]) : 3;
    auto start = reinterpret_cast<Switch>(dlsym(RTLD_DEFAULT, "metron_start"));
    auto stop = reinterpret_cast<Switch>(dlsym(RTLD_DEFAULT, "metron_stop"));
    if (!start || !stop) {
        std::printf("TOGGLE skipped: metron_start/metron_stop not found (run under metron run)\n");
        return 0;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
    for (int i = 0; i < 4000; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
    cudaStreamSynchronize(s);
    std::vector<double> on, off, diff;
    for (int r = 0; r < rounds; ++r) {
        double t[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            int metron_on = (k + r) % 2;
            metron_on ? start() : stop();
            cudaStreamSynchronize(s);
            auto a = std::chrono::steady_clock::now();
            for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
            auto b = std::chrono::steady_clock::now();
            cudaStreamSynchronize(s);
            t[metron_on] = std::chrono::duration<double, std::nano>(b - a).count() / n;
        }
        off.push_back(t[0]);
        on.push_back(t[1]);
        diff.push_back(t[1] - t[0]);
    }
    start();
    double iqr = pct(diff, 0.75) - pct(diff, 0.25);
    std::printf("TOGGLE rounds=%d launches=%d off_ns=%.1f on_ns=%.1f diff_ns=%+.1f p25=%+.1f p75=%+.1f se=%.1f\n",
                rounds, n, pct(off, 0.5), pct(on, 0.5), pct(diff, 0.5), pct(diff, 0.25), pct(diff, 0.75),
                1.25 * iqr / 1.35 / std::sqrt(double(rounds)));
    return 0;
}
