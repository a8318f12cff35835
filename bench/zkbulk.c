/*
 * zkbulk: the floor of a scale run (issue 35), with ZooKeeper's own C client
 * and no election library: on ONE session, N ephemeral nodes created back to
 * back (every request sent before the first answer is awaited), then the N
 * deleted the same way. What the ensemble takes for as many writes as a
 * join or a teardown of N elections needs at the least (one create, one
 * delete each).
 *
 *   zkbulk --connect HOSTS [--count N] [--label TEXT] [--paths 1]
 *
 * Prints "## TEXT", then
 *   BULK creates n=N ms=..
 *   BULK deletes n=N ms=..
 * and with --paths 1, the floor of a join of N elections each on a path
 * nobody made yet (two writes each: the path, then the node in it), the
 * same way:
 *   BULK pathcreates n=N ms=..
 * bench/run.py reads them.
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

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int connected;
static long answered, failed;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)path, (void)ctx;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
        pthread_mutex_lock(&mu);
        connected = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
}

static void answer(int rc)
{
    pthread_mutex_lock(&mu);
    answered++;
    if (rc != ZOK) failed++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void on_created(int rc, const char *value, const void *data)
{
    (void)value, (void)data;
    answer(rc);
}

static void on_deleted(int rc, const void *data)
{
    (void)data;
    answer(rc);
}

/* Waits until `want` answers came, for at most 300 s; 0 or -1. */
static int wait_answers(long want)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 300;
    int rc = 0;
    pthread_mutex_lock(&mu);
    while (answered < want && rc == 0) rc = pthread_cond_timedwait(&cv, &mu, &dl);
    int ok = answered >= want;
    pthread_mutex_unlock(&mu);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *hosts = NULL, *label = "ensemble: full connect string";
    long count = 10000;
    int paths = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--connect")) hosts = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--label")) label = argv[i + 1];
        else if (!strcmp(argv[i], "--paths")) paths = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "zkbulk: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!hosts || count < 1 || count > 1000000) {
        fprintf(stderr, "usage: zkbulk --connect HOSTS [--count N (1..1000000)] [--label TEXT] [--paths 1]\n");
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init(hosts, on_event, 10000, NULL, NULL, 0);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    pthread_mutex_lock(&mu);
    while (zh && !connected && pthread_cond_timedwait(&cv, &mu, &dl) == 0) {
    }
    int up = connected;
    pthread_mutex_unlock(&mu);
    if (!up) {
        fprintf(stderr, "zkbulk: no session to %s within 10 s\n", hosts);
        return 1;
    }
    char dir[64], node[96];
    snprintf(dir, sizeof dir, "/zkbulk-%ld", (long)getpid());
    if (zoo_create(zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) != ZOK) {
        fprintf(stderr, "zkbulk: cannot create %s\n", dir);
        return 1;
    }
    printf("## %s\n", label);
    int64_t t0 = now_ns();
    for (long i = 0; i < count; i++) {
        snprintf(node, sizeof node, "%s/n%ld", dir, i);
        if (zoo_acreate(zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, on_created, NULL) != ZOK)
            answer(ZSYSTEMERROR);
    }
    if (wait_answers(count)) {
        fprintf(stderr, "zkbulk: creates unanswered after 300 s\n");
        return 1;
    }
    printf("BULK creates n=%ld ms=%.1f failed=%ld\n", count, (now_ns() - t0) / 1e6, failed);
    t0 = now_ns();
    for (long i = 0; i < count; i++) {
        snprintf(node, sizeof node, "%s/n%ld", dir, i);
        if (zoo_adelete(zh, node, -1, on_deleted, NULL) != ZOK) answer(ZSYSTEMERROR);
    }
    if (wait_answers(2 * count)) {
        fprintf(stderr, "zkbulk: deletes unanswered after 300 s\n");
        return 1;
    }
    printf("BULK deletes n=%ld ms=%.1f failed=%ld\n", count, (now_ns() - t0) / 1e6, failed);
    if (paths) {
        /* One session's requests are applied in order: each node's create
         * finds its path made by the create sent just before it. */
        t0 = now_ns();
        for (long i = 0; i < count; i++) {
            snprintf(node, sizeof node, "%s/p%ld", dir, i);
            if (zoo_acreate(zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, on_created, NULL) != ZOK)
                answer(ZSYSTEMERROR);
            snprintf(node, sizeof node, "%s/p%ld/n", dir, i);
            if (zoo_acreate(zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, on_created, NULL) != ZOK)
                answer(ZSYSTEMERROR);
        }
        if (wait_answers(4 * count)) {
            fprintf(stderr, "zkbulk: path creates unanswered after 300 s\n");
            return 1;
        }
        printf("BULK pathcreates n=%ld ms=%.1f failed=%ld\n", count, (now_ns() - t0) / 1e6, failed);
        /* Not timed: the nodes, then their paths, so that dir can go. */
        for (long i = 0; i < count; i++) {
            snprintf(node, sizeof node, "%s/p%ld/n", dir, i);
            if (zoo_adelete(zh, node, -1, on_deleted, NULL) != ZOK) answer(ZSYSTEMERROR);
            snprintf(node, sizeof node, "%s/p%ld", dir, i);
            if (zoo_adelete(zh, node, -1, on_deleted, NULL) != ZOK) answer(ZSYSTEMERROR);
        }
        if (wait_answers(6 * count)) {
            fprintf(stderr, "zkbulk: path deletes unanswered after 300 s\n");
            return 1;
        }
    }
    zoo_delete(zh, dir, -1);
    zookeeper_close(zh);
    return failed ? 1 : 0;
}
