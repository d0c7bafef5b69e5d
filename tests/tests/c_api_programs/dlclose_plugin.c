/* The plugin dlclose_churn.c loads and unloads: some code to be sampled in. */
long plugin_work(long n);

long plugin_work(long n) {
    volatile long acc = 0;
    long i;
    for (i = 0; i < n; i++) {
        acc += i * 3 + 1;
    }
    return acc;
}
