/* Shared helpers of the bench programs (public header only). */
#ifndef ZKELECT_BENCH_COMMON_H
#define ZKELECT_BENCH_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <zkelect/zkelect.h>

#define BENCH_FN static __attribute__((unused))
#define BENCH_DEFAULT_HOSTS "127.0.0.1:21811,127.0.0.1:21812,127.0.0.1:21813"

BENCH_FN int64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
#define mono_ns() now_ns(CLOCK_MONOTONIC)
#define real_ns() now_ns(CLOCK_REALTIME)

BENCH_FN void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

BENCH_FN void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* "--key value" lookup; the programs take only such pairs. */
BENCH_FN const char *opt(int argc, char **argv, const char *key, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], key) == 0) return argv[i + 1];
    return dflt;
}

BENCH_FN long opt_long(int argc, char **argv, const char *key, long dflt)
{
    const char *v = opt(argc, argv, key, NULL);
    if (!v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0) die("bad value for %s: %s", key, v);
    return x;
}

/* A client with the bench's settings, and up to two more keys (each when
 * its key is not NULL). */
BENCH_FN zkelect_client_t *client_open_with2(const char *hosts, int session_ms, const char *key,
                                             const char *value, const char *key2,
                                             const char *value2)
{
    char err[256], num[32];
    zkelect_conf_t *c = zkelect_conf_new();
    if (!c) die("conf_new");
    snprintf(num, sizeof num, "%d", session_ms);
    if (zkelect_conf_set(c, "zk.hosts", hosts, err, sizeof err) ||
        zkelect_conf_set(c, "zk.session.timeout.ms", num, err, sizeof err) ||
        zkelect_conf_set(c, "zk.log.level", "none", err, sizeof err) ||
        (key && zkelect_conf_set(c, key, value, err, sizeof err)) ||
        (key2 && zkelect_conf_set(c, key2, value2, err, sizeof err)))
        die("conf: %s", err);
    zkelect_client_t *cl = zkelect_client_new(c, err, sizeof err);
    zkelect_conf_destroy(c);
    if (!cl) die("client_new: %s", err);
    return cl;
}

/* A client with the bench's settings, and one more key when key is not NULL. */
BENCH_FN zkelect_client_t *client_open_with(const char *hosts, int session_ms, const char *key,
                                            const char *value)
{
    return client_open_with2(hosts, session_ms, key, value, NULL, NULL);
}

BENCH_FN zkelect_client_t *client_open(const char *hosts, int session_ms)
{
    return client_open_with(hosts, session_ms, NULL, NULL);
}

BENCH_FN void client_wait(zkelect_client_t *cl)
{
    int rc = zkelect_client_await_connected(cl, 30000);
    if (rc) die("await_connected: %s", zkelect_strerror(rc));
}

BENCH_FN int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

BENCH_FN int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

BENCH_FN double median_dbl(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Resident set size in KiB, from /proc/self/statm. */
BENCH_FN long rss_kib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = -1;
    fclose(f);
    return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* 10,000 candidacies hold 10,000 event fds. */
BENCH_FN void raise_nofile(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

/* ---- many candidacies, their events collected through one epoll set ---- */

enum { ST_IDLE = 0, ST_FOLLOWING, ST_ELECTED, ST_DEPOSED, ST_RESIGNED, ST_OTHER };

struct fleet {
    int n;
    zkelect_election_t **e;
    unsigned char *state;
    int64_t *last_ns;      /* event time of the latest state change */
    int epfd;
    int counts[ST_OTHER + 1];
    long errors;
};

BENCH_FN void fleet_init(struct fleet *f, int n)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    f->e = calloc(n, sizeof *f->e);
    f->state = calloc(n, 1);
    f->last_ns = calloc(n, sizeof *f->last_ns);
    f->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!f->e || !f->state || !f->last_ns || f->epfd < 0) die("fleet_init");
    f->counts[ST_IDLE] = n;
}

BENCH_FN void fleet_add(struct fleet *f, int i, zkelect_client_t *cl, const char *path, const char *id)
{
    char err[256];
    f->e[i] = zkelect_election_new(cl, path, id, err, sizeof err);
    if (!f->e[i]) die("election_new: %s", err);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, zkelect_event_fd(f->e[i]), &ev))
        die("epoll_ctl: %s", strerror(errno));
}

BENCH_FN void fleet_set(struct fleet *f, int i, int st, int64_t t)
{
    f->counts[f->state[i]]--;
    f->state[i] = (unsigned char)st;
    f->counts[st]++;
    f->last_ns[i] = t;
}

BENCH_FN void fleet_take(struct fleet *f, int i)
{
    zkelect_event_t *ev;
    while ((ev = zkelect_next_event(f->e[i], 0)) != NULL) {
        int64_t t = zkelect_event_time_ns(ev);
        switch (zkelect_event_type(ev)) {
        case ZKELECT_EV_ELECTED: fleet_set(f, i, ST_ELECTED, t); break;
        case ZKELECT_EV_FOLLOWING:
            /* a FOLLOWING after a predecessor change keeps the first time */
            if (f->state[i] != ST_FOLLOWING) fleet_set(f, i, ST_FOLLOWING, t);
            break;
        case ZKELECT_EV_DEPOSED: fleet_set(f, i, ST_DEPOSED, t); break;
        case ZKELECT_EV_RESIGNED: fleet_set(f, i, ST_RESIGNED, t); break;
        case ZKELECT_EV_ERROR:
            f->errors++;
            note("event ERROR on %d: %s", i, zkelect_event_message(ev));
            break;
        default: break;
        }
        zkelect_event_destroy(ev);
    }
}

/* Take events until done(f, arg) holds or timeout_ms passes; 0 or -1. */
BENCH_FN int fleet_wait(struct fleet *f, int (*done)(struct fleet *, void *), void *arg,
                      int timeout_ms)
{
    int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
    struct epoll_event evs[256];
    while (!done(f, arg)) {
        int64_t left = (deadline - mono_ns()) / 1000000;
        if (left <= 0) return -1;
        int k = epoll_wait(f->epfd, evs, 256, left > 100 ? 100 : (int)left);
        if (k < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
        for (int j = 0; j < k; j++) fleet_take(f, (int)evs[j].data.u32);
    }
    return 0;
}

#endif
