/* A second NVTX copy (as libtorch_python and libtorch_cuda each have one): built as its own
 * shared library, so its NVTX globals are its own and NVTX initialises it separately. */
#include <nvtx3/nvToolsExt.h>

void second_copy_events(void) {
    nvtxRangePushA("second-copy-range");
    nvtxMarkA("second-copy-mark");
    nvtxRangePop();
}
