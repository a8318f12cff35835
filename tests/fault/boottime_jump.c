/*
 * LD_PRELOAD shim for one test: makes CLOCK_BOOTTIME jump ahead while
 * CLOCK_MONOTONIC does not, which is what a machine suspended and resumed
 * looks like to a process. SIGUSR2 adds BOOTTIME_JUMP_MS (default 10000) to
 * every later CLOCK_BOOTTIME reading of clock_gettime(). The kernel's own
 * timers (timerfd) are not shifted; only what the process reads is.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_llong offset_ns;
static long long jump_ns = 10000LL * 1000000;
static int (*real_clock_gettime)(clockid_t, struct timespec *);

static void on_usr2(int sig)
{
    (void)sig;
    atomic_fetch_add(&offset_ns, jump_ns);
}

__attribute__((constructor)) static void init(void)
{
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    const char *ms = getenv("BOOTTIME_JUMP_MS");
    if (ms && *ms)
        jump_ns = atoll(ms) * 1000000LL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int rc = real_clock_gettime(clk, ts);
    if (rc == 0 && (clk == CLOCK_BOOTTIME || clk == CLOCK_BOOTTIME_ALARM)) {
        long long add = atomic_load(&offset_ns);
        if (add) {
            long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + add;
            ts->tv_sec = ns / 1000000000LL;
            ts->tv_nsec = ns % 1000000000LL;
        }
    }
    return rc;
}
