/*
 * Scale run: C candidacies over S sessions in this one process, all on one
 * election path. Measures
 *   - convergence: from the first volunteer until exactly one ELECTED and
 *     C-1 FOLLOWING (by the library's own event times);
 *   - failover under that load, F times: the leader resigns; time from the
 *     resign call to the next ELECTED (another candidacy); the resigned one
 *     volunteers again at the back and must become FOLLOWING;
 *   - the ZooKeeper requests the library sent for each phase (its counter).
 * Every check of "exactly one leader" is made on the event states, and
 * zkelect_is_leader() is cross-checked on every handle at the end.
 *
 * --own-paths 1: each candidacy alone in an election of its own (per-shard
 * leadership, issue 35): convergence is every one ELECTED, there are no
 * failovers, and the figures per election (resident memory beyond the
 * sessions', join, teardown) are the point.
 *
 * --poll 1 (with --own-paths 1): no event fd per handle (100,000 of them
 * pass a usual RLIMIT_NOFILE); the join is over when zkelect_is_leader()
 * answers 1 on every handle, swept every 2 ms, as a program that does not
 * read events would see it.
 *
 * --teardown resign-first: each session's thread resigns all its candidacies
 * before it destroys them (the default, destroy, destroys one by one).
 * --teardown shutdown: each session's thread ends all its candidacies with
 * one zkelect_client_shutdown(), then destroys them and the client.
 *
 * --nodes-max-bytes N: the clients' zk.session.nodes.max.bytes (0: no
 * bound; by default the library's, 1,000,000 bytes of candidate node paths
 * per session: some 10,000 candidacies of the paths here).
 *
 * --events-queue-max N (with --poll 1): the clients' events.queue.max; 0,
 * what such a program would set, keeps no event it would never read.
 *
 *   scale --connect HOSTS [--candidacies C] [--sessions S] [--failovers F] [--own-paths 0|1]
 *         [--teardown destroy|resign-first|shutdown] [--poll 0|1] [--nodes-max-bytes N]
 *         [--events-queue-max N]
 * Prints one JSON object on stdout.
 */
#include "bcommon.h"

#include <malloc.h>
#include <pthread.h>

/* malloc's bytes in use: what RSS keeps of a transient peak is not in it. */
static long heap_kib(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)((m.uordblks + m.hblkhd) / 1024);
}

/* The peak resident set (VmHWM), in KiB. */
static long peak_rss_kib(void)
{
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &v) == 1) break;
    fclose(f);
    return v;
}

static int ncand;
static zkelect_client_t **cl;
static int nsess;

static int own_paths;

static int converged(struct fleet *f, void *arg)
{
    (void)arg;
    if (own_paths) return f->counts[ST_ELECTED] == f->n;
    return f->counts[ST_ELECTED] == 1 && f->counts[ST_FOLLOWING] == f->n - 1;
}

struct failover {
    int old;
    int newl;
};

static int someone_else_elected(struct fleet *f, void *arg)
{
    struct failover *x = arg;
    if (f->counts[ST_ELECTED] == 0) return 0;
    for (int i = 0; i < f->n; i++)
        if (f->state[i] == ST_ELECTED && i != x->old) {
            x->newl = i;
            return 1;
        }
    return 0;
}

static int state_is(struct fleet *f, void *arg)
{
    int *want = arg; /* {index, state} */
    return f->state[want[0]] == want[1];
}

static uint64_t requests(void)
{
    uint64_t sum = 0, v;
    for (int s = 0; s < nsess; s++)
        if (zkelect_client_counter(cl[s], ZKELECT_COUNTER_ZK_REQUESTS, &v) == 0) sum += v;
    return sum;
}

/* Teardown one session per thread: each destroy waits for its own delete.
 * resign_first: every candidacy of the session resigns first (a resign does
 * not wait: the deletes go out back to back), then each destroy waits only
 * for a delete already on its way. */
static struct fleet *tear_fleet;
static int resign_first;
static int shutdown_first;
static uint64_t *tear_requests; /* each session's request counter after its destroys */
static double shutdown_call_ms;  /* the longest zkelect_client_shutdown() call of a session */
static void *tear_session(void *arg)
{
    int s = (int)(intptr_t)arg;
    if (resign_first)
        for (int i = s; i < ncand; i += nsess) zkelect_resign(tear_fleet->e[i]);
    if (shutdown_first) {
        int64_t t0 = mono_ns();
        if (zkelect_client_shutdown(cl[s], 600000) != ZKELECT_OK)
            die("zkelect_client_shutdown: %s", zkelect_last_error());
        double ms = (mono_ns() - t0) / 1e6;
        if (ms > shutdown_call_ms) shutdown_call_ms = ms; /* a race between sessions only loses a figure */
    }
    for (int i = s; i < ncand; i += nsess) zkelect_election_destroy(tear_fleet->e[i]);
    zkelect_client_counter(cl[s], ZKELECT_COUNTER_ZK_REQUESTS, &tear_requests[s]);
    zkelect_client_destroy(cl[s]);
    return NULL;
}

static int leader_of(struct fleet *f)
{
    for (int i = 0; i < f->n; i++)
        if (f->state[i] == ST_ELECTED) return i;
    return -1;
}

int main(int argc, char **argv)
{
    const char *hosts = opt(argc, argv, "--connect", BENCH_DEFAULT_HOSTS);
    ncand = (int)opt_long(argc, argv, "--candidacies", 10000);
    nsess = (int)opt_long(argc, argv, "--sessions", 100);
    int nfail = (int)opt_long(argc, argv, "--failovers", 5);
    int timeout_ms = (int)opt_long(argc, argv, "--timeout-ms", 600000);
    own_paths = (int)opt_long(argc, argv, "--own-paths", 0);
    if (own_paths) nfail = 0;
    const char *teardown = opt(argc, argv, "--teardown", "destroy");
    if (strcmp(teardown, "destroy") && strcmp(teardown, "resign-first") &&
        strcmp(teardown, "shutdown"))
        die("bad --teardown");
    resign_first = strcmp(teardown, "resign-first") == 0;
    shutdown_first = strcmp(teardown, "shutdown") == 0;
    int poll_mode = (int)opt_long(argc, argv, "--poll", 0);
    if (poll_mode && !own_paths) die("--poll 1 needs --own-paths 1");
    const char *max_bytes = opt(argc, argv, "--nodes-max-bytes", NULL);
    const char *queue_max = opt(argc, argv, "--events-queue-max", NULL);
    if (queue_max && !poll_mode) die("--events-queue-max needs --poll 1 (the others read events)");
    if (ncand < 2 || nsess < 1 || nfail > 1000) die("bad options");
    raise_nofile();

    int64_t t = mono_ns();
    cl = calloc(nsess, sizeof *cl);
    for (int s = 0; s < nsess; s++)
        cl[s] = client_open_with2(hosts, 10000, max_bytes ? "zk.session.nodes.max.bytes" : NULL,
                                  max_bytes, queue_max ? "events.queue.max" : NULL, queue_max);
    for (int s = 0; s < nsess; s++) client_wait(cl[s]);
    double connect_ms = (mono_ns() - t) / 1e6;
    long rss_sessions = rss_kib();

    char path[128], id[32];
    snprintf(path, sizeof path, "/zkelect_bench_scale_%d/e", (int)getpid());
    struct fleet f;
    fleet_init(&f, ncand);
    t = mono_ns();
    for (int i = 0; i < ncand; i++) {
        snprintf(id, sizeof id, "c%d", i);
        if (own_paths) snprintf(path, sizeof path, "/zkelect_bench_scale_%d/e%d", (int)getpid(), i);
        if (poll_mode) {
            char err[256];
            f.e[i] = zkelect_election_new(cl[i % nsess], path, id, err, sizeof err);
            if (!f.e[i]) die("election_new: %s", err);
        } else {
            fleet_add(&f, i, cl[i % nsess], path, id);
        }
    }
    double create_ms = (mono_ns() - t) / 1e6;
    long rss_before = rss_kib();
    note("scale: %d sessions connected in %.0f ms, %d handles in %.0f ms", nsess, connect_ms, ncand,
         create_ms);

    uint64_t rq0 = requests();
    int64_t t0 = real_ns();
    for (int i = 0; i < ncand; i++)
        if (zkelect_volunteer(f.e[i])) die("volunteer %d", i);
    double volunteer_calls_ms = (real_ns() - t0) / 1e6;
    int64_t poll_first = 0;
    if (poll_mode) {
        /* The fleet's view is made of the sweeps: every one ELECTED when
         * the last sweep found every one leading. */
        int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
        int leading = 0;
        while (mono_ns() < deadline) {
            leading = 0;
            for (int i = 0; i < ncand; i++) leading += zkelect_is_leader(f.e[i]);
            if (leading && !poll_first) poll_first = real_ns();
            if (leading == ncand) break;
            struct timespec gap = {0, 2 * 1000000};
            nanosleep(&gap, NULL);
        }
        int64_t done = real_ns();
        if (leading == ncand)
            for (int i = 0; i < ncand; i++) fleet_set(&f, i, ST_ELECTED, done);
        else
            f.counts[ST_ELECTED] = leading;
    }
    if ((poll_mode && f.counts[ST_ELECTED] != ncand) ||
        (!poll_mode && fleet_wait(&f, converged, NULL, timeout_ms))) {
        /* say what was reached, so the report can show it */
        printf("{\"candidacies\": %d, \"sessions\": %d, \"converged\": false, \"timeout_ms\": %d, "
               "\"elected\": %d, \"following\": %d, \"errors\": %ld, \"correct\": false}\n",
               ncand, nsess, timeout_ms, f.counts[ST_ELECTED], f.counts[ST_FOLLOWING], f.errors);
        die("no convergence in %d ms: %d ELECTED, %d FOLLOWING, %ld errors", timeout_ms,
            f.counts[ST_ELECTED], f.counts[ST_FOLLOWING], f.errors);
    }
    int64_t last = 0;
    for (int i = 0; i < ncand; i++)
        if (f.last_ns[i] > last) last = f.last_ns[i];
    double conv_ms = (last - t0) / 1e6;
    uint64_t rq_conv = requests() - rq0;
    int lead = leader_of(&f);
    double first_elected_ms = ((poll_mode ? poll_first : f.last_ns[lead]) - t0) / 1e6;
    note("scale: converged in %.0f ms (first ELECTED after %.0f ms), %llu ZooKeeper requests",
         conv_ms, first_elected_ms, (unsigned long long)rq_conv);

    double *fo = calloc(nfail > 0 ? nfail : 1, sizeof *fo);
    double *rejoin = calloc(nfail > 0 ? nfail : 1, sizeof *rejoin);
    uint64_t *fo_rq = calloc(nfail > 0 ? nfail : 1, sizeof *fo_rq);
    int ok = 1;
    for (int k = 0; k < nfail; k++) {
        struct timespec gap = {0, 100 * 1000000};
        nanosleep(&gap, NULL);
        struct failover x = {leader_of(&f), -1};
        if (x.old < 0) die("no leader before failover %d", k);
        uint64_t r0 = requests();
        int64_t tr = real_ns();
        if (zkelect_resign(f.e[x.old])) die("resign");
        if (zkelect_is_leader(f.e[x.old])) die("is_leader still 1 after resign returned");
        if (fleet_wait(&f, someone_else_elected, &x, 60000)) die("failover %d: nobody elected", k);
        fo[k] = (f.last_ns[x.newl] - tr) / 1e6;
        int want[2] = {x.old, ST_RESIGNED};
        if (fleet_wait(&f, state_is, want, 60000)) die("failover %d: no RESIGNED", k);
        if (zkelect_volunteer(f.e[x.old])) die("re-volunteer");
        want[1] = ST_FOLLOWING;
        if (fleet_wait(&f, state_is, want, 60000)) die("failover %d: resigned one not FOLLOWING", k);
        rejoin[k] = (f.last_ns[x.old] - tr) / 1e6;
        fo_rq[k] = requests() - r0;
        if (!converged(&f, NULL)) ok = 0;
        note("scale: failover %d: %d -> %d in %.2f ms; re-enrolled after %.1f ms; %llu requests", k,
             x.old, x.newl, fo[k], rejoin[k], (unsigned long long)fo_rq[k]);
    }

    /* cross-check the event view against is_leader on every handle */
    int leaders_now = 0;
    for (int i = 0; i < ncand; i++) leaders_now += zkelect_is_leader(f.e[i]);
    if (leaders_now != (own_paths ? ncand : 1) || !converged(&f, NULL)) ok = 0;
    long rss_after = rss_kib(), heap_after = heap_kib(), rss_peak = peak_rss_kib();

    printf("{\"candidacies\": %d, \"sessions\": %d, \"own_paths\": %s, \"connect_ms\": %.1f, \"create_handles_ms\": %.1f, "
           "\"volunteer_calls_ms\": %.1f, \"converge_ms\": %.1f, \"first_elected_ms\": %.1f, "
           "\"converge_requests\": %llu, \"failover_ms\": [",
           ncand, nsess, own_paths ? "true" : "false", connect_ms, create_ms, volunteer_calls_ms, conv_ms, first_elected_ms,
           (unsigned long long)rq_conv);
    for (int k = 0; k < nfail; k++) printf("%s%.3f", k ? ", " : "", fo[k]);
    printf("], \"rejoin_ms\": [");
    for (int k = 0; k < nfail; k++) printf("%s%.3f", k ? ", " : "", rejoin[k]);
    printf("], \"failover_requests\": [");
    for (int k = 0; k < nfail; k++) printf("%s%llu", k ? ", " : "", (unsigned long long)fo_rq[k]);
    printf("], \"is_leader_count_at_end\": %d, \"correct\": %s, \"errors\": %ld, "
           "\"rss_kib_sessions_only\": %ld, \"rss_kib_before_volunteer\": %ld, \"rss_kib_end\": %ld, "
           "\"rss_bytes_per_candidacy\": %.0f, \"heap_kib_end\": %ld, \"rss_kib_peak\": %ld",
           leaders_now, ok ? "true" : "false", f.errors, rss_sessions, rss_before, rss_after,
           (rss_after - rss_sessions) * 1024.0 / ncand, heap_after, rss_peak);
    fflush(stdout);

    uint64_t rq_tear0 = requests();
    tear_requests = calloc(nsess, sizeof *tear_requests);
    t = mono_ns();
    tear_fleet = &f;
    pthread_t *th = calloc(nsess, sizeof *th);
    for (int s = 0; s < nsess; s++) pthread_create(&th[s], NULL, tear_session, (void *)(intptr_t)s);
    for (int s = 0; s < nsess; s++) pthread_join(th[s], NULL);
    double tear_ms = (mono_ns() - t) / 1e6;
    /* Every request the sessions sent from the first destroy (or resign)
     * on: the deletes, and whatever the survivors asked meanwhile (the
     * listings a deletion can cost, docs/semantics.md). */
    uint64_t rq_tear = 0;
    for (int s = 0; s < nsess; s++) rq_tear += tear_requests[s];
    printf(", \"teardown\": \"%s\", \"teardown_ms\": %.1f, \"teardown_requests\": %llu, "
           "\"shutdown_call_ms\": %.1f}\n", teardown, tear_ms, (unsigned long long)(rq_tear - rq_tear0),
           shutdown_call_ms);
    return ok ? 0 : 1;
}
