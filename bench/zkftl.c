/* zkftl rtt HOSTS PATH COUNT: read / write / pipelined round trips, async API,
 * on two sessions to HOSTS used in turn: "a" with the C client's defaults,
 * "b" with zoo_set_servers_resolution_delay(-1) (no host re-resolution on
 * each loop iteration of the IO thread).
 * zkftl rm HOSTS PATH...: delete (empty) nodes, in the order given. */
#define _GNU_SOURCE
#define THREADED /* the synchronous API */
#include <zookeeper/zookeeper.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int connected, pending;
static int64_t done_at[2];
static int rcs[2];

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh; (void)path; (void)ctx;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
        pthread_mutex_lock(&mu);
        connected++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
}
static void mark(int which, int rc)
{
    int64_t t = now_ns();
    pthread_mutex_lock(&mu);
    done_at[which] = t;
    rcs[which] = rc;
    pending--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}
static void strings_cb(int rc, const struct String_vector *s, const void *d)
{
    (void)s;
    mark((int)(intptr_t)d, rc);
}
static void void_cb(int rc, const void *d) { mark((int)(intptr_t)d, rc); }
static int wait_cond(int connections)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    pthread_mutex_lock(&mu);
    while (connections ? connected < connections : pending > 0) {
        if (pthread_cond_timedwait(&cv, &mu, &dl)) {
            pthread_mutex_unlock(&mu);
            return -1;
        }
    }
    pthread_mutex_unlock(&mu);
    return 0;
}
static void set_pending(int n)
{
    pthread_mutex_lock(&mu);
    pending = n;
    pthread_mutex_unlock(&mu);
}
static void print_arr(const char *name, const int64_t *a, int n, int last)
{
    printf("\"%s\":[", name);
    for (int i = 0; i < n; i++) printf("%s%lld", i ? "," : "", (long long)a[i]);
    printf("]%s", last ? "" : ",");
}
struct sess {
    zhandle_t *zh;
    char node[512];
    zoo_op_t op;
    zoo_op_result_t res;
    int64_t *rd, *wr, *pw, *pr;
};
static int one_round(struct sess *s, const char *path, int i)
{
    int64_t t0;
    set_pending(1);
    t0 = now_ns();
    zoo_aget_children(s->zh, path, 0, strings_cb, (void *)0);
    if (wait_cond(0) || rcs[0]) return -1;
    if (i >= 0) s->rd[i] = done_at[0] - t0;
    set_pending(1);
    t0 = now_ns();
    zoo_amulti(s->zh, 1, &s->op, &s->res, void_cb, (void *)1);
    if (wait_cond(0) || rcs[1]) return -1;
    if (i >= 0) s->wr[i] = done_at[1] - t0;
    set_pending(2); /* as the engine sends them: the write first, then the read */
    t0 = now_ns();
    zoo_amulti(s->zh, 1, &s->op, &s->res, void_cb, (void *)1);
    zoo_aget_children(s->zh, path, 0, strings_cb, (void *)0);
    if (wait_cond(0) || rcs[0] || rcs[1]) return -1;
    if (i >= 0) {
        s->pw[i] = done_at[1] - t0;
        s->pr[i] = done_at[0] - t0;
    }
    return 0;
}
int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: zkftl rtt HOSTS PATH COUNT | zkftl rm HOSTS PATH...\n");
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    int rtt = strcmp(argv[1], "rtt") == 0;
    struct sess s[2];
    memset(s, 0, sizeof s);
    int ns = rtt ? 2 : 1;
    for (int k = 0; k < ns; k++) {
        s[k].zh = zookeeper_init(argv[2], watcher, 4000, 0, 0, 0);
        if (!s[k].zh) return 1;
        if (k == 1) zoo_set_servers_resolution_delay(s[k].zh, -1);
    }
    if (wait_cond(ns)) {
        fprintf(stderr, "no connection to %s\n", argv[2]);
        return 1;
    }
    if (!rtt) {
        for (int i = 3; i < argc; i++) zoo_delete(s[0].zh, argv[i], -1);
        zookeeper_close(s[0].zh);
        return 0;
    }
    if (argc < 5) return 2;
    const char *path = argv[3];
    int count = atoi(argv[4]), warm = 20;
    int rc = zoo_create(s[0].zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) {
        fprintf(stderr, "create %s: %s\n", path, zerror(rc));
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        snprintf(s[k].node, sizeof s[k].node, "%s/n%d", path, k);
        rc = zoo_create(s[k].zh, s[k].node, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
        if (rc != ZOK) {
            fprintf(stderr, "create %s: %s\n", s[k].node, zerror(rc));
            return 1;
        }
        zoo_check_op_init(&s[k].op, s[k].node, -1);
        s[k].rd = calloc(count, 8);
        s[k].wr = calloc(count, 8);
        s[k].pw = calloc(count, 8);
        s[k].pr = calloc(count, 8);
    }
    for (int i = -warm; i < count; i++)
        for (int k = 0; k < 2; k++)
            if (one_round(&s[(i & 1) ? 1 - k : k], path, i)) return 1;
    printf("{\"hosts\":\"%s\",\"server_a\":\"%s\",\"server_b\":\"%s\",", argv[2],
           zoo_get_current_server(s[0].zh), zoo_get_current_server(s[1].zh));
    print_arr("read_ns", s[0].rd, count, 0);
    print_arr("write_ns", s[0].wr, count, 0);
    print_arr("pipe_write_ns", s[0].pw, count, 0);
    print_arr("pipe_read_ns", s[0].pr, count, 0);
    print_arr("b_read_ns", s[1].rd, count, 0);
    print_arr("b_write_ns", s[1].wr, count, 0);
    print_arr("b_pipe_write_ns", s[1].pw, count, 0);
    print_arr("b_pipe_read_ns", s[1].pr, count, 1);
    printf("}\n");
    for (int k = 0; k < 2; k++) zoo_delete(s[k].zh, s[k].node, -1);
    zoo_delete(s[0].zh, path, -1);
    for (int k = 0; k < 2; k++) zookeeper_close(s[k].zh);
    return 0;
}
