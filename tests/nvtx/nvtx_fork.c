/* NVTX in a forked child (a PyTorch DataLoader worker, say): Metron is off there
 * (METRON_FORK=disable), NVTX keeps its return values, and the parent's run is untouched.
 * Prints the child's return values, `key=value`. */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    nvtxRangePushA("parent-outer");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int push = nvtxRangePushA("child-range");
        nvtxMarkA("child-mark");
        nvtxRangeEnd(nvtxRangeStartA("child-async"));
        int pop = nvtxRangePop();
        int pop_parent = nvtxRangePop(); /* the range pushed before the fork */
        printf("child_push=%d\nchild_pop=%d\nchild_pop_parent=%d\n", push, pop, pop_parent);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child_exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    nvtxRangePushA("parent-inner");
    nvtxRangePop();
    printf("parent_pop=%d\n", nvtxRangePop());
    return 0;
}
