/* Process lifecycle under the C API. argv[1] picks the scenario:
 *   fork     a busy recording thread, 20 forks; each child calls Metron, then exit(0)
 *   _exit    a child that calls Metron then _exit(3)
 *   sigterm  worker threads recording, then SIGTERM to the process (METRON_SIGNALS=on)
 *   sigint   the same with SIGINT
 *   abort    the same with abort()
 *   handler  the program's own SIGTERM handler, installed before Metron starts, is kept
 *   early    threads created before Metron starts record afterwards
 *   exec     records, then execv's itself with "exec-child" (which records too) */
#include <metron/metron.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop_busy = 0;
static volatile sig_atomic_t got_signal = 0;

static void nap_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static void* busy(void* arg) {
    (void)arg;
    while (!stop_busy) {
        metron_region_begin("busy");
        metron_counter("busy_counter", 1.0);
        metron_region_end("busy");
        metron_flush();
    }
    return NULL;
}

/* Waits for `pid` at most 10 s; returns its status or -1 (then kills it: a deadlock). */
static int wait_bounded(pid_t pid) {
    int status, i;
    for (i = 0; i < 1000; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        nap_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int scenario_fork(void) {
    pthread_t t;
    int i;
    metron_region_begin("parent");
    pthread_create(&t, NULL, busy, NULL);
    nap_ms(20);
    for (i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* The child: calls must not deadlock or write anything. */
            metron_region_begin("child_region");
            metron_mark("child_mark");
            metron_region_end("child_region");
            metron_flush();
            exit(0);
        }
        if (wait_bounded(pid) != 0) {
            fprintf(stderr, "child %d did not exit cleanly (deadlock?)\n", i);
            return 1;
        }
    }
    stop_busy = 1;
    pthread_join(t, NULL);
    metron_region_end("parent");
    metron_region_begin("after_forks");
    metron_region_end("after_forks");
    return 0;
}

static int scenario_underscore_exit(void) {
    pid_t pid;
    int status;
    metron_region_begin("parent");
    pid = fork();
    if (pid == 0) {
        metron_region_begin("child_region");
        _exit(3);
    }
    status = wait_bounded(pid);
    metron_region_end("parent");
    return (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 3) ? 0 : 1;
}

static int scenario_signal(int sig) {
    pthread_t t[4];
    int i;
    metron_region_begin("before_signal");
    metron_region_end("before_signal");
    for (i = 0; i < 4; i++) pthread_create(&t[i], NULL, busy, NULL);
    metron_region_begin("open_when_signalled");
    nap_ms(50);
    if (sig == SIGABRT) {
        abort();
    }
    kill(getpid(), sig);
    for (i = 0; i < 500; i++) nap_ms(10); /* the signal ends the process */
    return 5;
}

static void on_term(int sig) {
    (void)sig;
    got_signal = 1;
}

static int scenario_handler(void) {
    int i;
    signal(SIGTERM, on_term);
    metron_region_begin("with_own_handler");
    kill(getpid(), SIGTERM);
    for (i = 0; i < 200 && !got_signal; i++) nap_ms(10);
    metron_region_end("with_own_handler");
    return got_signal ? 0 : 1;
}

static pthread_barrier_t barrier;

static void* early(void* arg) {
    int i;
    (void)arg;
    pthread_barrier_wait(&barrier); /* Metron starts while we wait */
    for (i = 0; i < 10; i++) {
        metron_region_begin("early_thread");
        metron_region_end("early_thread");
    }
    return NULL;
}

static int scenario_early(void) {
    pthread_t t[3];
    int i;
    pthread_barrier_init(&barrier, NULL, 4);
    for (i = 0; i < 3; i++) pthread_create(&t[i], NULL, early, NULL);
    nap_ms(20);
    metron_init(NULL);
    metron_region_begin("main");
    pthread_barrier_wait(&barrier);
    for (i = 0; i < 3; i++) pthread_join(t[i], NULL);
    metron_region_end("main");
    return 0;
}

static int scenario_exec(const char* self) {
    metron_region_begin("before_exec");
    metron_region_end("before_exec");
    char* const args[] = {(char*)self, (char*)"exec-child", NULL};
    execv(self, args);
    return 1;
}

int main(int argc, char** argv) {
    const char* s = argc > 1 ? argv[1] : "";
    if (strcmp(s, "fork") == 0) return scenario_fork();
    if (strcmp(s, "_exit") == 0) return scenario_underscore_exit();
    if (strcmp(s, "sigterm") == 0) return scenario_signal(SIGTERM);
    if (strcmp(s, "sigint") == 0) return scenario_signal(SIGINT);
    if (strcmp(s, "abort") == 0) return scenario_signal(SIGABRT);
    if (strcmp(s, "handler") == 0) return scenario_handler();
    if (strcmp(s, "early") == 0) return scenario_early();
    if (strcmp(s, "exec") == 0) return scenario_exec(argv[0]);
    if (strcmp(s, "exec-child") == 0) {
        metron_region_begin("after_exec");
        metron_region_end("after_exec");
        return 0;
    }
    fprintf(stderr, "unknown scenario %s\n", s);
    return 2;
}
