// The exception part of known_answer.c: exc::thrower throws, exc::pass_through is left by the
// exception, exc::catcher catches it.
#include <stdexcept>

namespace exc {
__attribute__((noinline)) int thrower(int x) {
    if (x >= 0) throw std::runtime_error("known");
    return x;
}
__attribute__((noinline)) int pass_through(int x) { return thrower(x) + 1; }
__attribute__((noinline)) int catcher(int x) {
    try {
        return pass_through(x);
    } catch (const std::exception&) {
        return -x;
    }
}
}  // namespace exc

extern "C" int exc_catcher(int x) { return exc::catcher(x); }
