/*
 * Cost of zkelect_is_leader(): ns of thread CPU time per call on a leading and on a following
 * candidacy, from 1 thread and from several at once, median of repeats.
 *
 * Whether it takes a lock is checked by interposing the pthread lock entry
 * points in this executable (linked with -rdynamic, so libzkelect's and
 * libstdc++'s calls resolve here first) and counting the calls made by a
 * thread while it is inside the measured loop. zkelect_next_event() is
 * counted the same way as a positive control: it must show locks, else the
 * interposition is not working and the "no lock" answer would mean nothing.
 *
 * The stats snapshot (1.2) is measured beside it: ns of thread CPU time per
 * zkelect_election_stats() + zkelect_stats_json() + zkelect_stats_destroy(),
 * and per zkelect_client_stats() of the client holding both candidacies;
 * and zkelect_is_leader() again while another thread takes snapshots of the
 * same candidacy without pause (is_leader must not notice: it reads no
 * state the snapshot locks).
 *
 *   isleader --connect HOSTS [--calls N] [--repeats R] [--threads T]
 * Prints one JSON object on stdout.
 */
#include "bcommon.h"

#include <dlfcn.h>
#include <pthread.h>

static __thread int counting;
static __thread long lock_calls;

#define INTERPOSE(ret, name, params, args)                                  \
    ret name params                                                         \
    {                                                                       \
        static ret(*real) params;                                           \
        if (!real) real = (ret(*) params)dlsym(RTLD_NEXT, #name);          \
        if (counting) lock_calls++;                                         \
        return real args;                                                   \
    }

INTERPOSE(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))
INTERPOSE(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m))
INTERPOSE(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t), (m, t))
INTERPOSE(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
INTERPOSE(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
INTERPOSE(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t * l), (l))
INTERPOSE(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * l), (l))
INTERPOSE(int, pthread_spin_lock, (pthread_spinlock_t * l), (l))
INTERPOSE(int, pthread_spin_trylock, (pthread_spinlock_t * l), (l))

static zkelect_election_t *target;
static long calls;
static pthread_barrier_t barrier;

/* Reference: what the lease check's clock read costs by itself. */
static int clock_only;
/* 1: the loop takes election stats of target; 2: client stats of client_of. */
static int stats_mode;
static zkelect_client_t *client_of;
static _Atomic int hammer_stop;

static long snapshot_once(void)
{
    zkelect_stats_t *st = stats_mode == 2 ? zkelect_client_stats(client_of, NULL, 0)
                                          : zkelect_election_stats(target, NULL, 0);
    long n = st ? (long)strlen(zkelect_stats_json(st)) : 0;
    zkelect_stats_destroy(st);
    return n;
}

static void *hammer(void *arg)
{
    long *n = arg;
    while (!hammer_stop) {
        zkelect_stats_destroy(zkelect_election_stats(target, NULL, 0));
        ++*n;
    }
    return NULL;
}

struct worker {
    pthread_t th;
    double ns_per_call;
    long locks;
    long leader_answers;
};

/* The answer is summed so the loop has an observable result. */
static void *work(void *arg)
{
    struct worker *w = arg;
    long sum = 0;
    pthread_barrier_wait(&barrier);
    counting = 1;
    lock_calls = 0;
    /* thread CPU time: the other engineers' load must not count as cost */
    int64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    if (clock_only)
        for (long i = 0; i < calls; i++) sum += now_ns(CLOCK_BOOTTIME) > 0;
    else if (stats_mode)
        for (long i = 0; i < calls / 100; i++) sum += snapshot_once() > 0;
    else
        for (long i = 0; i < calls; i++) sum += zkelect_is_leader(target);
    int64_t t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    counting = 0;
    w->locks = lock_calls;
    w->leader_answers = sum;
    w->ns_per_call = (double)(t1 - t0) / (stats_mode ? calls / 100 : calls);
    return NULL;
}

/* Median over repeats of the median over threads of ns/call. */
static double measure(zkelect_election_t *e, int threads, int repeats, long *locks, long *answers)
{
    double per_rep[64];
    target = e;
    *locks = 0;
    *answers = 0;
    for (int r = 0; r < repeats; r++) {
        struct worker w[64];
        double per_thr[64];
        pthread_barrier_init(&barrier, NULL, (unsigned)threads);
        for (int t = 1; t < threads; t++) pthread_create(&w[t].th, NULL, work, &w[t]);
        work(&w[0]);
        for (int t = 1; t < threads; t++) pthread_join(w[t].th, NULL);
        pthread_barrier_destroy(&barrier);
        for (int t = 0; t < threads; t++) {
            per_thr[t] = w[t].ns_per_call;
            *locks += w[t].locks;
            *answers += w[t].leader_answers;
        }
        per_rep[r] = median_dbl(per_thr, threads);
    }
    return median_dbl(per_rep, repeats);
}

int main(int argc, char **argv)
{
    const char *hosts = opt(argc, argv, "--connect", BENCH_DEFAULT_HOSTS);
    calls = opt_long(argc, argv, "--calls", 2000000);
    int repeats = (int)opt_long(argc, argv, "--repeats", 7);
    int maxthr = (int)opt_long(argc, argv, "--threads", 4);
    if (repeats < 1 || repeats > 64 || maxthr < 1 || maxthr > 64 || calls < 1) die("bad options");

    char path[128];
    snprintf(path, sizeof path, "/zkelect_bench_isleader_%d", (int)getpid());
    zkelect_client_t *cl = client_open(hosts, 10000);
    client_wait(cl);
    char err[256];
    zkelect_election_t *lead = zkelect_election_new(cl, path, "leader", err, sizeof err);
    zkelect_election_t *fol = zkelect_election_new(cl, path, "follower", err, sizeof err);
    if (!lead || !fol) die("election_new: %s", err);
    if (zkelect_volunteer(lead) || zkelect_await_leader(lead, 30000)) die("leader did not lead");
    if (zkelect_volunteer(fol)) die("volunteer");
    /* wait for the follower to be enrolled so both loops read a settled state */
    for (int i = 0; i < 300; i++) {
        zkelect_event_t *ev = zkelect_next_event(fol, 100);
        int ty = ev ? zkelect_event_type(ev) : 0;
        zkelect_event_destroy(ev);
        if (ty == ZKELECT_EV_FOLLOWING) break;
    }

    /* positive control for the interposition */
    counting = 1;
    lock_calls = 0;
    for (int i = 0; i < 100; i++) zkelect_event_destroy(zkelect_next_event(lead, 0));
    counting = 0;
    long control = lock_calls;

    clock_only = 1;
    long cl_locks, cl_answers;
    double clock_ns = measure(lead, 1, repeats, &cl_locks, &cl_answers);
    clock_only = 0;
    note("clock_gettime(CLOCK_BOOTTIME) alone: %.2f ns/call", clock_ns);
    printf("{\"clock_boottime_ns_per_call\": %.3f, \"calls_per_thread\": %ld, \"repeats\": %d, \"lock_control_next_event_100_calls\": %ld, "
           "\"runs\": [", clock_ns, calls, repeats, control);
    int first = 1;
    for (int threads = 1; threads <= maxthr; threads *= 2) {
        for (int which = 0; which < 2; which++) {
            long locks, answers;
            zkelect_election_t *e = which ? fol : lead;
            double ns = measure(e, threads, repeats, &locks, &answers);
            long expect = which ? 0 : (long)threads * repeats * calls;
            note("is_leader %-9s threads=%d  %.2f ns/call  lock calls=%ld  answers ok=%s",
                 which ? "follower" : "leader", threads, ns, locks,
                 answers == expect ? "yes" : "NO");
            printf("%s{\"role\": \"%s\", \"threads\": %d, \"ns_per_call_median\": %.3f, "
                   "\"lock_calls\": %ld, \"answers_correct\": %s}",
                   first ? "" : ", ", which ? "follower" : "leader", threads, ns, locks,
                   answers == expect ? "true" : "false");
            first = 0;
        }
    }
    printf("]");

    /* The snapshot: 1/100 of the calls (each is a few hundred times dearer). */
    long sl, sa, json_len;
    stats_mode = 1;
    json_len = snapshot_once();
    double st_lead = measure(lead, 1, repeats, &sl, &sa);
    target = fol;
    double st_fol = measure(fol, 1, repeats, &sl, &sa);
    stats_mode = 2;
    client_of = cl;
    long client_len = snapshot_once();
    double st_client = measure(lead, 1, repeats, &sl, &sa);
    stats_mode = 0;
    note("election_stats+json+destroy: leader %.0f ns, follower %.0f ns (%ld bytes); "
         "client_stats (2 elections): %.0f ns (%ld bytes)",
         st_lead, st_fol, json_len, st_client, client_len);

    /* is_leader while another thread snapshots the same candidacy. */
    long hammered = 0, hl, ha;
    pthread_t h;
    target = lead;
    hammer_stop = 0;
    pthread_create(&h, NULL, hammer, &hammered);
    double busy = measure(lead, 1, repeats, &hl, &ha);
    hammer_stop = 1;
    pthread_join(h, NULL);
    note("is_leader leader while another thread takes snapshots: %.2f ns/call, lock calls=%ld "
         "(%ld snapshots meanwhile)", busy, hl, hammered);
    printf(", \"stats\": {\"election_stats_leader_ns\": %.1f, \"election_stats_follower_ns\": %.1f, "
           "\"election_json_bytes\": %ld, \"client_stats_2_elections_ns\": %.1f, "
           "\"client_json_bytes\": %ld, \"is_leader_during_snapshots_ns\": %.3f, "
           "\"is_leader_during_snapshots_lock_calls\": %ld, \"snapshots_taken_meanwhile\": %ld}",
           st_lead, st_fol, json_len, st_client, client_len, busy, hl, hammered);
    printf(", \"cpus\": %ld}\n", sysconf(_SC_NPROCESSORS_ONLN));
    zkelect_election_destroy(fol);
    zkelect_election_destroy(lead);
    zkelect_client_destroy(cl);
    return 0;
}
