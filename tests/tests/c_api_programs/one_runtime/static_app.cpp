// A C++ program with Metron linked in statically (libmetron.a): 4 threads x 50 "cpp-work"
// regions, each with one nested "cpp-step". Run under `metron run`, whose preloaded
// libmetron.so is then a second copy of Metron in the process.
#include <metron/metron.h>

#include <thread>
#include <vector>

int main() {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([] {
            for (int i = 0; i < 50; i++) {
                metron_region_begin("cpp-work");
                metron_region_begin("cpp-step");
                metron_region_end("cpp-step");
                metron_region_end("cpp-work");
            }
        });
    }
    for (auto& t : threads) t.join();
    return 0;
}
