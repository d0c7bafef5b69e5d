/* Causal-profiling test program whose answer is known by construction.
 *
 * A producer makes items (0.4 units of work each, on one line) and hands them through a
 * bounded queue (a mutex and two condition variables) to a consumer that finishes them
 * (1 unit each, on another line). The consumer is the bottleneck: making its line s % faster
 * makes the program s % faster (up to 60 %, where the producer becomes the bottleneck);
 * making the producer's line faster changes nothing (the producer waits on a full queue).
 * The progress point counts finished items.
 *
 * Usage: pipeline SECONDS [UNIT_US]   (default unit 1000 us) */
#include "progress.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CAPACITY 8
static long queue[CAPACITY];
static int head, count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static long unit;
static uint64_t deadline;
static long items;

static void push(long v) {
    pthread_mutex_lock(&lock);
    while (count == CAPACITY) pthread_cond_wait(&not_full, &lock);
    queue[(head + count) % CAPACITY] = v;
    count++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&lock);
}

static long pop(void) {
    pthread_mutex_lock(&lock);
    while (count == 0) pthread_cond_wait(&not_empty, &lock);
    long v = queue[head];
    head = (head + 1) % CAPACITY;
    count--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&lock);
    return v;
}

static void* producer(void* arg) {
    (void)arg;
    volatile unsigned long s = 0;
    for (long n = 1;; n++) {
        for (long i = 0; i < 4 * unit / 10; i++) s += i; /* PRODUCE: 0.4 units an item */
        if (now_ns() >= deadline) {
            push(-1);
            return NULL;
        }
        push(n);
    }
}

static void* consumer(void* arg) {
    (void)arg;
    volatile unsigned long s = 0;
    for (;;) {
        long v = pop();
        if (v < 0) return NULL;
        for (long i = 0; i < unit; i++) s += i; /* CONSUME: 1 unit an item */
        PROGRESS("items");
        items++;
    }
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    long unit_us = argc > 2 ? atol(argv[2]) : 1000;
    unit = spins_per_us() * unit_us;
    deadline = now_ns() + (uint64_t)(seconds * 1e9);
    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    printf("items %ld\n", items);
    return 0;
}
