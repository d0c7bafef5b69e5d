/* libknown_answer_lib.so: lib_work is called through the PLT from known_answer.c. */
__attribute__((noinline)) int lib_work(int x) { return x * 5 - 2; }
