/*
 * zkfloor: what a failover costs at the very least on this machine and
 * ensemble, measured with ZooKeeper's own C client and no election library:
 *
 *   read RTT (exists)        a synchronous exists() on session A
 *   write RTT (setData)      a synchronous set() on session A (quorum commit)
 *   delete RTT               A deletes node X
 *   delete -> watch fired    ... while session B holds a watch on X: from just
 *                            before the delete until B's watcher runs
 *   delete -> watch -> getChildren
 *                            ... plus B listing the parent: the least a
 *                            successor needs before it knows it leads
 *
 *   zkfloor --connect HOSTS [--count N] [--warmup W] [--label TEXT] [--idle-ms MS]
 *
 * --idle-ms leaves the ensemble idle for MS before each delete, as it is
 * before a graceful failover (bench/results/ANALYSIS.md).
 *
 * Prints "## TEXT", then one line per measure, in microseconds:
 *   FLOOR <measure> n=N min=.. median=.. p90=.. max=..
 * bench/run.py reads them. Both sessions are opened on HOSTS, so each lands
 * on a server of the client's choosing, as a participant's session does.
 */
#define _GNU_SOURCE
#define THREADED
#include <zookeeper/zookeeper.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { M_READ, M_WRITE, M_DELETE, M_WATCH, M_LIST, M_COUNT };
static const char *const kLabel[M_COUNT] = {
    "read RTT (exists)", "write RTT (setData)", "delete RTT", "delete -> watch fired",
    "delete -> watch -> getChildren"};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int sessions_up;
static int64_t fired_at; /* 0 until B's watch on X fires */
static int synced;       /* sync() answers seen */

static void on_synced(int rc, const char *value, const void *data)
{
    (void)rc, (void)value, (void)data;
    pthread_mutex_lock(&mu);
    synced++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Runs on the C client's completion thread: note the time, wake main. */
static void on_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)path, (void)ctx;
    int64_t t = now_ns();
    pthread_mutex_lock(&mu);
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
        sessions_up++;
    else if (type == ZOO_DELETED_EVENT)
        fired_at = t;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* Waits (at most 10 s) until the watched value (one of the two) reaches want. */
static int wait_for(const int64_t *v64, const int *vint, int64_t want)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    int rc = 0;
    pthread_mutex_lock(&mu);
    while ((v64 ? *v64 : *vint) < want && rc == 0)
        rc = pthread_cond_timedwait(&cv, &mu, &dl);
    pthread_mutex_unlock(&mu);
    return rc == 0 ? 0 : -1;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void report(const char *label, int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    int p90 = (9 * n + 9) / 10 - 1; /* nearest rank */
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    printf("FLOOR %-34s n=%d min=%.1f median=%.1f p90=%.1f max=%.1f\n", label, n, v[0] / 1e3,
           med / 1e3, v[p90] / 1e3, v[n - 1] / 1e3);
}

static int check(int rc, const char *what)
{
    if (rc != ZOK)
        fprintf(stderr, "zkfloor: %s: %s\n", what, zerror(rc));
    return rc != ZOK;
}

int main(int argc, char **argv)
{
    const char *hosts = NULL, *label = "ensemble: full connect string (random, like the participants)";
    int count = 1000, warmup = 200, idle_ms = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--connect")) hosts = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--label")) label = argv[i + 1];
        else if (!strcmp(argv[i], "--idle-ms")) idle_ms = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "zkfloor: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!hosts || count < 1 || count > 1000000 || warmup < 0 || idle_ms < 0 || idle_ms > 60000) {
        fprintf(stderr, "usage: zkfloor --connect HOSTS [--count N] [--warmup W] [--label TEXT]"
                        " [--idle-ms MS]\n");
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *a = zookeeper_init(hosts, on_event, 10000, NULL, NULL, 0);
    zhandle_t *b = zookeeper_init(hosts, on_event, 10000, NULL, NULL, 0);
    if (!a || !b || wait_for(NULL, &sessions_up, 2)) {
        fprintf(stderr, "zkfloor: no sessions to %s within 10 s\n", hosts);
        return 1;
    }
    char dir[128], node[160];
    snprintf(dir, sizeof dir, "/zkfloor-%ld", (long)getpid());
    snprintf(node, sizeof node, "%s/x", dir);
    if (check(zoo_create(a, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), "create"))
        return 1;

    int64_t *v[M_COUNT];
    for (int m = 0; m < M_COUNT; m++)
        v[m] = calloc((size_t)count, sizeof(int64_t));
    struct Stat st;
    struct String_vector kids;
    int failed = 0;
    for (int i = -warmup; i < count && !failed; i++) {
        int64_t t0 = now_ns();
        failed |= check(zoo_exists(a, dir, 0, &st), "exists");
        int64_t t1 = now_ns();
        failed |= check(zoo_set(a, dir, "x", 1, -1), "set");
        int64_t t2 = now_ns();
        failed |= check(zoo_create(a, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), "create x");
        /* B's server may not have applied A's create yet: sync it first. */
        pthread_mutex_lock(&mu);
        int want = synced + 1;
        pthread_mutex_unlock(&mu);
        failed |= check(zoo_async(b, node, on_synced, NULL), "sync");
        if (!failed && wait_for(NULL, &synced, want)) {
            fprintf(stderr, "zkfloor: sync did not return within 10 s\n");
            failed = 1;
        }
        if (!failed)
            failed |= check(zoo_exists(b, node, 1, &st), "watch x");
        if (failed)
            break;
        pthread_mutex_lock(&mu);
        fired_at = 0;
        pthread_mutex_unlock(&mu);
        /* A graceful failover comes after the ensemble sat idle a while;
         * back to back, its threads are awake and the delete is faster. */
        if (idle_ms)
            usleep((useconds_t)idle_ms * 1000);
        int64_t t3 = now_ns();
        failed |= check(zoo_delete(a, node, -1), "delete");
        int64_t t4 = now_ns();
        if (failed || wait_for(&fired_at, NULL, 1)) {
            fprintf(stderr, "zkfloor: the watch did not fire within 10 s\n");
            failed = 1;
            break;
        }
        failed |= check(zoo_get_children(b, dir, 0, &kids), "getChildren");
        int64_t t5 = now_ns();
        deallocate_String_vector(&kids);
        if (i < 0)
            continue;
        pthread_mutex_lock(&mu);
        int64_t fired = fired_at;
        pthread_mutex_unlock(&mu);
        v[M_READ][i] = t1 - t0;
        v[M_WRITE][i] = t2 - t1;
        v[M_DELETE][i] = t4 - t3;
        v[M_WATCH][i] = fired - t3;
        v[M_LIST][i] = t5 - t3;
    }
    zoo_delete(a, node, -1);
    zoo_delete(a, dir, -1);
    zookeeper_close(b);
    zookeeper_close(a);
    if (failed)
        return 1;
    printf("## %s\n", label);
    for (int m = 0; m < M_COUNT; m++)
        report(kLabel[m], v[m], count);
    for (int m = 0; m < M_COUNT; m++)
        free(v[m]);
    return 0;
}
