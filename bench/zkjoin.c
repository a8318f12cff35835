/*
 * zkjoin: the least a burst of N contenders costs the ensemble and the C
 * client, with no election library: the floor of the bench's convergence.
 *
 * N sessions are opened (in this one process) and connected first. Then,
 * at t0, every session at once sends what the recipe needs at the very
 * least, the way kazoo's Election does it:
 *
 *   create EPHEMERAL|SEQUENTIAL under a fresh path, and getChildren of the
 *   path right behind it (one session's requests are answered in order, so
 *   the listing holds the new node); then, unless first, exists() with a
 *   watch on the node just before its own.
 *
 * A contender is done when it knows its role: first in its listing (the
 * leader), or its predecessor's watch is set. The measure is t0 -> the last
 * one done. No lease, no own-node watch, no events handed to anyone: every
 * library following the recipe pays at least this, in this run's conditions.
 *
 *   zkjoin --connect HOSTS [--n N] [--repeats R] [--warmup W] [--label TEXT]
 *          [--align-ms P] [--path-create] [--like-libzkelect] [--print-bursts]
 *
 * --path-create: each session also sends a create of the (existing) path
 * itself just before its candidate's create, as libzkelect's first join in
 * a session does (cxx/election/candidacy.cpp, send_create): what those creates,
 * refused with NODEEXISTS but each a transaction through the quorum, add to
 * the burst.
 *
 * --like-libzkelect: the requests libzkelect's first join in a session sends
 * (cxx/election/candidacy.cpp: send_create, watch_own, on_children, watch_queue,
 * watch_marker; the requests as cxx/zk/zk_session.cpp makes them), in its
 * order, so that the burst is the floor at libzkelect's request count:
 *
 *   create2 of the path (refused), create2 of the candidate (its data: a
 *   short id) and getChildren, pipelined; on the create's reply getData
 *   with a watch on its own node; on the listing's: the first getData
 *   with a watch on the path (the leader's watch for transfer requests;
 *   it knows its role at the listing), the second getData with a watch on
 *   its predecessor, then on the path, then a multi of one check of its own
 *   node (the heir's keepalive, a write through the quorum); every other
 *   getData with a watch on its predecessor, then on the node before that.
 *
 * That is 5 requests for the first, 7 for the second, 6 for the others (the
 * plain burst: 2, then 3). A contender is done as libzkelect's says
 * ELECTED or FOLLOWING: the first at its listing, the others at the
 * predecessor's read. --path-create alone adds only the path's create.
 *
 * --print-bursts prints each burst to stderr with its start on the wall
 * clock (CLOCK_REALTIME ns), for a driver that lines bursts up with other
 * records (bench/wan_ab.py).
 *
 * --align-ms starts each burst on the next multiple of P ms of the wall
 * clock and prints each burst's figure to stderr, so several zkjoin
 * processes burst together (the one-process form checked against five
 * processes of ten, bench/results/ANALYSIS.md).
 *
 * Prints "## TEXT", then
 *   FLOOR join N=<n> -> all roles known     n=R min=.. median=.. p90=.. max=..
 * in microseconds, as zkfloor does; bench/run.py reads it.
 */
#define _GNU_SOURCE
#ifndef THREADED /* the build may say so already (pkg-config of the bundled client) */
#define THREADED
#endif
#include <zookeeper/zookeeper.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kMaxN = 1000 };

struct contender {
    zhandle_t *zh;
    char node[256]; /* the created node's name (basename) */
    char id[16];    /* --like-libzkelect: the node's data, as a candidate id */
    char own[512];  /* --like-libzkelect: the node's path (the heir's check) */
    zoo_op_t check;
    zoo_op_result_t check_result;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int sessions_up, done, errors, deleted;
static int64_t last_done_ns;
static char dir[128];
static int like_libzkelect;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void bump(int *counter, int is_done)
{
    int64_t t = now_ns();
    pthread_mutex_lock(&mu);
    (*counter)++;
    if (is_done)
        last_done_ns = t;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void on_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)path, (void)ctx;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
        bump(&sessions_up, 0);
}

/* Waits (at most 30 s) until *v reaches want. */
static int wait_for(const int *v, int want)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    int rc = 0;
    pthread_mutex_lock(&mu);
    while (*v < want && rc == 0)
        rc = pthread_cond_timedwait(&cv, &mu, &dl);
    pthread_mutex_unlock(&mu);
    return rc == 0 ? 0 : -1;
}

/* The ten digits ZooKeeper appends; the order of the queue. */
static long long seq_of(const char *name)
{
    size_t n = strlen(name);
    return n >= 10 ? atoll(name + n - 10) : -1;
}

static void on_exists(int rc, const struct Stat *st, const void *data)
{
    (void)st, (void)data;
    /* ZNONODE: the predecessor went already; a real contender would list
     * again, but no one leaves during this measure. */
    if (rc != ZOK)
        bump(&errors, 0);
    bump(&done, 1);
}

/* --like-libzkelect: the requests whose replies no one waits for (they may
 * come after the burst's clean-up began: a node gone by then is no error). */
static void on_data_ignored(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)value, (void)len, (void)st, (void)data;
    if (rc != ZOK && rc != ZNONODE)
        bump(&errors, 0);
}

static void on_multi_ignored(int rc, const void *data)
{
    (void)data;
    if (rc != ZOK && rc != ZNONODE)
        bump(&errors, 0);
}

/* --like-libzkelect: the predecessor's read, where FOLLOWING comes. */
static void on_pred_data(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)value, (void)len, (void)st, (void)data;
    if (rc != ZOK)
        bump(&errors, 0);
    bump(&done, 1);
}

/* The node of the listing just before seq `below` (NULL: none). */
static const char *before(const struct String_vector *kids, long long below)
{
    long long best = -1;
    const char *found = NULL;
    for (int i = 0; i < kids->count; i++) {
        long long s = seq_of(kids->data[i]);
        if (s < below && s > best) {
            best = s;
            found = kids->data[i];
        }
    }
    return found;
}

static void on_children(int rc, const struct String_vector *kids, const void *data)
{
    struct contender *c = (struct contender *)data;
    if (rc != ZOK || !c->node[0]) {
        bump(&errors, 0);
        bump(&done, 1);
        return;
    }
    const char *pred = before(kids, seq_of(c->node));
    if (!pred) {
        bump(&done, 1); /* first: the leader */
        if (like_libzkelect && zoo_aget(c->zh, dir, 1, on_data_ignored, NULL) != ZOK)
            bump(&errors, 0);
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, pred);
    if (!like_libzkelect) {
        if (zoo_aexists(c->zh, path, 1, on_exists, c) != ZOK) {
            bump(&errors, 0);
            bump(&done, 1);
        }
        return;
    }
    if (zoo_aget(c->zh, path, 1, on_pred_data, c) != ZOK) {
        bump(&errors, 0);
        bump(&done, 1);
        return;
    }
    const char *gpred = before(kids, seq_of(pred));
    int sent;
    if (gpred) {
        char gpath[512];
        snprintf(gpath, sizeof gpath, "%s/%s", dir, gpred);
        sent = zoo_aget(c->zh, gpath, 1, on_data_ignored, NULL) == ZOK;
    } else {
        /* The heir: a watch on the path, and a keepalive. */
        zoo_check_op_init(&c->check, c->own, -1);
        sent = zoo_aget(c->zh, dir, 1, on_data_ignored, NULL) == ZOK &&
               zoo_amulti(c->zh, 1, &c->check, &c->check_result, on_multi_ignored, NULL) == ZOK;
    }
    if (!sent)
        bump(&errors, 0);
}

static void on_created(int rc, const char *value, const void *data)
{
    struct contender *c = (struct contender *)data;
    if (rc == ZOK && value) {
        const char *slash = strrchr(value, '/');
        snprintf(c->node, sizeof c->node, "%s", slash ? slash + 1 : value);
        if (like_libzkelect) { /* the own-node watch, on the create's reply */
            snprintf(c->own, sizeof c->own, "%s", value);
            if (zoo_aget(c->zh, c->own, 1, on_data_ignored, NULL) != ZOK)
                bump(&errors, 0);
        }
    } else {
        bump(&errors, 0);
    }
}

static void on_created2(int rc, const char *value, const struct Stat *st, const void *data)
{
    (void)st;
    on_created(rc, value, data);
}

static void on_path_created(int rc, const char *value, const void *data)
{
    (void)rc, (void)value, (void)data;
}

static void on_path_created2(int rc, const char *value, const struct Stat *st, const void *data)
{
    (void)rc, (void)value, (void)st, (void)data;
}

static void on_synced(int rc, const char *value, const void *data)
{
    (void)rc, (void)value, (void)data;
}

static void on_deleted(int rc, const void *data)
{
    (void)rc, (void)data;
    bump(&deleted, 0);
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *hosts = NULL, *label = "ensemble: full connect string (random, like the participants)";
    int n = 50, repeats = 7, warmup = 2, align_ms = 0, path_create = 0, print_bursts = 0;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--path-create") || !strcmp(argv[i], "--like-libzkelect") ||
            !strcmp(argv[i], "--print-bursts")) {
            if (!strcmp(argv[i], "--like-libzkelect"))
                like_libzkelect = path_create = 1;
            else if (!strcmp(argv[i], "--print-bursts"))
                print_bursts = 1;
            else
                path_create = 1;
            i--; /* takes no value */
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "zkjoin: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--connect")) hosts = argv[i + 1];
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--label")) label = argv[i + 1];
        else if (!strcmp(argv[i], "--align-ms")) align_ms = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "zkjoin: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!hosts || n < 1 || n > kMaxN || repeats < 1 || repeats > 1000 || warmup < 0 || warmup > 100 ||
        align_ms < 0 || align_ms > 60000) {
        fprintf(stderr, "usage: zkjoin --connect HOSTS [--n 1..%d] [--repeats R] [--warmup W]"
                        " [--label TEXT] [--align-ms P] [--path-create] [--like-libzkelect]"
                        " [--print-bursts]\n", kMaxN);
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    struct contender *cs = calloc((size_t)n, sizeof *cs);
    int64_t *v = calloc((size_t)repeats, sizeof *v);
    if (!cs || !v)
        return 1;
    for (int i = 0; i < n; i++) {
        cs[i].zh = zookeeper_init(hosts, on_event, 10000, NULL, NULL, 0);
        if (!cs[i].zh) {
            fprintf(stderr, "zkjoin: zookeeper_init failed\n");
            return 1;
        }
    }
    if (wait_for(&sessions_up, n)) {
        fprintf(stderr, "zkjoin: %d of %d sessions up within 30 s\n", sessions_up, n);
        return 1;
    }
    for (int r = -warmup; r < repeats; r++) {
        snprintf(dir, sizeof dir, "/zkjoin-%ld-%d", (long)getpid(), r + warmup);
        int rc = zoo_create(cs[0].zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        if (rc != ZOK) {
            fprintf(stderr, "zkjoin: create %s: %s\n", dir, zerror(rc));
            return 1;
        }
        /* Every session must see the path before the burst. */
        struct Stat st;
        for (int i = 0; i < n; i++) {
            zoo_async(cs[i].zh, dir, on_synced, NULL); /* the exists below is answered after it */
            if ((rc = zoo_exists(cs[i].zh, dir, 0, &st)) != ZOK) {
                fprintf(stderr, "zkjoin: exists %s: %s\n", dir, zerror(rc));
                return 1;
            }
        }
        char prefix[160];
        snprintf(prefix, sizeof prefix, "%s/c-", dir);
        pthread_mutex_lock(&mu);
        int want = done + n;
        pthread_mutex_unlock(&mu);
        if (align_ms > 0) {
            /* Several zkjoin processes burst together: start on the next
             * multiple of align_ms of the wall clock. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
            usleep((useconds_t)((align_ms - ms % align_ms) * 1000));
        }
        struct timespec wall0;
        clock_gettime(CLOCK_REALTIME, &wall0);
        int64_t t0 = now_ns();
        for (int i = 0; i < n; i++) {
            cs[i].node[0] = 0;
            if (like_libzkelect) { /* as cxx/zk/zk_session.cpp sends them: create2 */
                snprintf(cs[i].id, sizeof cs[i].id, "%d", i + 1);
                zoo_acreate2(cs[i].zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, on_path_created2, NULL);
                zoo_acreate2(cs[i].zh, prefix, cs[i].id, (int)strlen(cs[i].id), &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL | ZOO_SEQUENCE, on_created2, &cs[i]);
            } else {
                if (path_create) /* refused (NODEEXISTS); its reply is not waited for */
                    zoo_acreate(cs[i].zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, on_path_created, NULL);
                zoo_acreate(cs[i].zh, prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                            on_created, &cs[i]);
            }
            zoo_aget_children(cs[i].zh, dir, 0, on_children, &cs[i]);
        }
        if (wait_for(&done, want)) {
            fprintf(stderr, "zkjoin: not every contender knew its role within 30 s\n");
            return 1;
        }
        pthread_mutex_lock(&mu);
        int64_t t1 = last_done_ns;
        int errs = errors;
        pthread_mutex_unlock(&mu);
        if (errs) {
            fprintf(stderr, "zkjoin: %d requests failed\n", errs);
            return 1;
        }
        if (r >= 0)
            v[r] = t1 - t0;
        if (print_bursts)
            fprintf(stderr, "zkjoin: burst %d: %.1f us at %lld ns\n", r, (t1 - t0) / 1e3,
                    (long long)wall0.tv_sec * 1000000000LL + wall0.tv_nsec);
        else if (align_ms > 0) /* each burst's own figure, for the max over processes */
            fprintf(stderr, "zkjoin: burst %d: %.1f us\n", r, (t1 - t0) / 1e3);
        /* Clean up before the next burst (the watches fire on nothing
         * that matters: this program does not act on them). */
        pthread_mutex_lock(&mu);
        int dwant = deleted + n;
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < n; i++) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dir, cs[i].node);
            zoo_adelete(cs[i].zh, path, -1, on_deleted, NULL);
        }
        if (wait_for(&deleted, dwant) || zoo_delete(cs[0].zh, dir, -1) != ZOK) {
            fprintf(stderr, "zkjoin: cleaning up %s failed\n", dir);
            return 1;
        }
        usleep(300 * 1000); /* the bench's join comes after a quiet spell too */
    }
    qsort(v, (size_t)repeats, sizeof *v, cmp);
    int p90 = (9 * repeats + 9) / 10 - 1;
    double med = repeats % 2 ? v[repeats / 2] : (v[repeats / 2 - 1] + v[repeats / 2]) / 2.0;
    char what[64];
    snprintf(what, sizeof what, "join N=%d -> all roles known", n);
    printf("## %s\n", label);
    printf("FLOOR %-34s n=%d min=%.1f median=%.1f p90=%.1f max=%.1f\n", what, repeats, v[0] / 1e3,
           med / 1e3, v[p90] / 1e3, v[repeats - 1] / 1e3);
    for (int i = 0; i < n; i++)
        zookeeper_close(cs[i].zh);
    free(cs);
    free(v);
    return 0;
}
