// Metron from C++: METRON_SCOPE (a region to the end of the block), METRON_FUNCTION (a region
// named after the function), counters and perf markers, on two std::threads.
//
// Summary (merged over threads): compute 1 > step 5; thread_work 2 > batch 2 > step 6;
// counter acc x11; mark done x1.
#include <metron/metron.h>

#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

static double step(int i) {
    METRON_FUNCTION();
    double acc = 0.0;
    for (int k = 1; k < 20000; ++k) {
        acc += std::sqrt(static_cast<double>(k + i));
    }
    METRON_COUNTER("acc", acc);
    return acc;
}

int main() {
    double total = 0.0;
    {
        METRON_SCOPE("compute");
        for (int i = 0; i < 5; ++i) {
            total += step(i);
        }
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([t] {
            METRON_THREAD_NAME(t == 0 ? "cpp-worker-0" : "cpp-worker-1");
            METRON_SCOPE("thread_work");
            METRON_PERF_MARKER_BEGIN("batch", "workers");
            double local = 0.0;
            for (int i = 0; i < 3; ++i) {
                local += step(i);
            }
            METRON_PERF_MARKER_END();
            return local;
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    METRON_MARK("done");
    std::printf("cpp_example: %.1f\n", total);
    return 0;
}
