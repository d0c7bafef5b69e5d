/* A program whose call counts are known in closed form, for the function engines' tests.
 * Built with -finstrument-functions (and, for the other engines, their own flags); every
 * count below is what a correct tracer must report for the named function.
 *
 *   fib            recursion: 2 * F(FIB_N + 1) - 1 calls (FIB_N = 20: 21891)
 *   leaf           LEAF_CALLS calls in a loop (10^6)
 *   by_pointer     POINTER_CALLS calls through a function pointer
 *   lib_work       LIB_CALLS calls through the PLT into libknown_answer_lib.so
 *   jump_outer     JUMPS calls, each left by longjmp from jump_inner
 *   jump_inner     JUMPS calls, each left by longjmp
 *   exc::catcher   THROWS calls, exc::pass_through and exc::thrower left by an exception
 *   worker         THREADS calls, one per thread
 *   thread_leaf    THREADS * THREAD_LEAF_CALLS calls
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>

#define FIB_N 20
#define LEAF_CALLS 1000000
#define POINTER_CALLS 1000
#define LIB_CALLS 500
#define JUMPS 60
#define THROWS 40
#define THREADS 4
#define THREAD_LEAF_CALLS 1000

int lib_work(int x);          /* libknown_answer_lib.so */
int exc_catcher(int x);       /* known_answer_exc.cpp: exc::catcher */

static volatile long sink;
static jmp_buf jump_back;

__attribute__((noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) int by_pointer(int x) { return x ^ 0x55; }

__attribute__((noinline)) void jump_inner(int x) {
    sink += x;
    longjmp(jump_back, 1);
}

__attribute__((noinline)) void jump_outer(int x) {
    jump_inner(x + 1);
    sink -= x; /* never reached */
}

__attribute__((noinline)) int thread_leaf(int x) { return x + 7; }

__attribute__((noinline)) void* worker(void* arg) {
    long acc = (long)arg;
    for (int i = 0; i < THREAD_LEAF_CALLS; i++) acc += thread_leaf(i);
    sink += acc;
    return 0;
}

static int (*volatile pointer)(int) = by_pointer;

int main(void) {
    long acc = fib(FIB_N);
    for (int i = 0; i < LEAF_CALLS; i++) acc += leaf(i);
    for (int i = 0; i < POINTER_CALLS; i++) acc += pointer(i);
    for (int i = 0; i < LIB_CALLS; i++) acc += lib_work(i);
    for (volatile int i = 0; i < JUMPS; i++) {
        if (setjmp(jump_back) == 0) jump_outer(i);
    }
    for (int i = 0; i < THROWS; i++) acc += exc_catcher(i);
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&threads[t], 0, worker, (void*)t);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], 0);
    sink += acc;
    printf("done %ld\n", (long)sink);
    return 0;
}
