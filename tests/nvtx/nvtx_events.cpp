// NVTX's C++ API (nvtx3.hpp) with the real headers: scoped ranges, domains, registered
// strings, payloads, unique ranges. Run with NVTX_INJECTION64_PATH=libmetron.so.
#include <nvtx3/nvtx3.hpp>
#include <thread>

struct cpp_domain {
    static constexpr char const* name{"cpp-domain"};
};

int main() {
    nvtx3::mark("cpp-mark");
    {
        nvtx3::scoped_range outer{"cpp-outer"};
        nvtx3::event_attributes attr{"cpp-inner", nvtx3::rgb{255, 0, 0}, nvtx3::payload{7}};
        nvtx3::scoped_range inner{attr};
    }
    {
        nvtx3::registered_string_in<cpp_domain> reg{"cpp-registered"};
        nvtx3::scoped_range_in<cpp_domain> d{reg};
        nvtx3::mark_in<cpp_domain>("cpp-domain-mark");
    }
    nvtx3::unique_range* moved = nullptr;
    {
        auto r = new nvtx3::unique_range{"cpp-unique"};
        moved = r;
    }
    std::thread t([moved] { delete moved; });
    t.join();
    return 0;
}
