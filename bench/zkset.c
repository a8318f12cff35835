/*
 * zkset: the floor bench/fenced.c's fenced write is compared with (issue
 * 54), measured with ZooKeeper's own C client and no election library:
 *
 *   set                 a synchronous zoo_set() of BYTES bytes (version -1)
 *   multi: check + set  the same set behind a version check of an
 *                       ephemeral node of the same session, in one
 *                       synchronous zoo_multi(): what a fenced write sends,
 *                       so the least it can cost
 *
 *   zkset --connect HOSTS [--bytes S] [--count N] [--warmup W]
 *
 * The two alternate, each first every other time, so a drift of the
 * machine's load falls on both alike. Prints one JSON object on stdout,
 * every timed request in microseconds; bench/run.py reads it.
 */
#define _GNU_SOURCE
/* THREADED: zk_dep (zkclient/meson.build) defines it */
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

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)path, (void)ctx;
    if (type != ZOO_SESSION_EVENT || state != ZOO_CONNECTED_STATE)
        return;
    pthread_mutex_lock(&mu);
    connected = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int check(int rc, const char *what)
{
    if (rc != ZOK)
        fprintf(stderr, "zkset: %s: %s\n", what, zerror(rc));
    return rc != ZOK;
}

static void print_samples(const char *key, const int64_t *v, int n)
{
    printf(", \"%s\": [", key);
    for (int i = 0; i < n; i++)
        printf("%s%.1f", i ? ", " : "", v[i] / 1e3);
    printf("]");
}

int main(int argc, char **argv)
{
    const char *hosts = NULL;
    int bytes = 100, count = 200, warmup = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--connect")) hosts = argv[i + 1];
        else if (!strcmp(argv[i], "--bytes")) bytes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "zkset: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!hosts || bytes < 0 || bytes > 1000000 || count < 1 || count > 1000000 || warmup < 0) {
        fprintf(stderr, "usage: zkset --connect HOSTS [--bytes S] [--count N] [--warmup W]\n");
        return 2;
    }
    char *data = malloc((size_t)bytes + 1);
    int64_t *set_ns = calloc((size_t)count, sizeof *set_ns);
    int64_t *multi_ns = calloc((size_t)count, sizeof *multi_ns);
    if (!data || !set_ns || !multi_ns)
        return 1;
    memset(data, 's', (size_t)bytes);

    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init(hosts, on_event, 10000, NULL, NULL, 0);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    pthread_mutex_lock(&mu);
    while (zh && !connected && pthread_cond_timedwait(&cv, &mu, &dl) == 0) {}
    int up = connected;
    pthread_mutex_unlock(&mu);
    if (!up) {
        fprintf(stderr, "zkset: no session to %s within 10 s\n", hosts);
        return 1;
    }
    char node[128], guard[128];
    snprintf(node, sizeof node, "/zkset-%ld", (long)getpid());
    snprintf(guard, sizeof guard, "/zkset-%ld-guard", (long)getpid());
    if (check(zoo_create(zh, node, data, bytes, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), "create") ||
        check(zoo_create(zh, guard, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0),
              "create guard"))
        return 1;

    zoo_op_t ops[2];
    zoo_op_result_t results[2];
    int failed = 0;
    for (int i = -warmup; i < count && !failed; i++) {
        int64_t t_set = 0, t_multi = 0;
        for (int k = 0; k < 2 && !failed; k++) {
            int64_t t0 = now_ns();
            if ((k == 0) == (i % 2 == 0)) {
                failed |= check(zoo_set(zh, node, data, bytes, -1), "set");
                t_set = now_ns() - t0;
            } else {
                zoo_check_op_init(&ops[0], guard, 0);
                zoo_set_op_init(&ops[1], node, data, bytes, -1, NULL);
                failed |= check(zoo_multi(zh, 2, ops, results), "multi");
                t_multi = now_ns() - t0;
            }
        }
        if (i >= 0) {
            set_ns[i] = t_set;
            multi_ns[i] = t_multi;
        }
    }
    zoo_delete(zh, node, -1);
    zoo_delete(zh, guard, -1);
    zookeeper_close(zh);
    if (failed)
        return 1;
    printf("{\"bytes\": %d, \"count\": %d, \"warmup\": %d", bytes, count, warmup);
    print_samples("set_us", set_ns, count);
    print_samples("multi_us", multi_ns, count);
    printf("}\n");
    free(data);
    free(set_ns);
    free(multi_ns);
    return 0;
}
