/*
 * Memory per candidacy: S sessions are opened first (their cost is not the
 * candidacies'), then candidacies are added in rounds of R on those
 * sessions, all on one election path, each volunteering and waiting until
 * every one of them is enrolled (FOLLOWING or ELECTED). After each round the
 * process's RSS and malloc's bytes in use are read. The growth per round is
 * the cost of R more enrolled candidacies; if it grows from round to round,
 * something is kept per candidate *per other candidate*.
 *
 *   memcand --connect HOSTS [--sessions S] [--per-round R] [--rounds K]
 * Prints one JSON object on stdout.
 */
#include "bcommon.h"

#include <malloc.h>

static long heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)(m.uordblks + m.hblkhd);
}

struct upto {
    int lo, hi;
};

static int round_enrolled(struct fleet *f, void *arg)
{
    struct upto *u = arg;
    for (int i = u->lo; i < u->hi; i++)
        if (f->state[i] != ST_FOLLOWING && f->state[i] != ST_ELECTED) return 0;
    return 1;
}

static void settle(void)
{
    struct timespec ts = {0, 200 * 1000000};
    nanosleep(&ts, NULL);
    malloc_trim(0);
}

int main(int argc, char **argv)
{
    const char *hosts = opt(argc, argv, "--connect", BENCH_DEFAULT_HOSTS);
    int nsess = (int)opt_long(argc, argv, "--sessions", 10);
    int per = (int)opt_long(argc, argv, "--per-round", 1000);
    int rounds = (int)opt_long(argc, argv, "--rounds", 4);
    if (nsess < 1 || per < 1 || rounds < 2) die("bad options");
    raise_nofile();

    zkelect_client_t **cl = calloc(nsess, sizeof *cl);
    for (int s = 0; s < nsess; s++) cl[s] = client_open(hosts, 10000);
    for (int s = 0; s < nsess; s++) client_wait(cl[s]);

    char path[128], id[32];
    snprintf(path, sizeof path, "/zkelect_bench_mem_%d/e", (int)getpid());
    struct fleet f;
    fleet_init(&f, per * rounds);

    /* one throw-away candidacy first, so the path and the library's lazily
     * made per-client state exist before the first measurement */
    {
        char err[256];
        zkelect_election_t *w = zkelect_election_new(cl[0], path, "warm", err, sizeof err);
        if (!w || zkelect_volunteer(w) || zkelect_await_leader(w, 30000)) die("warm-up candidacy");
        zkelect_election_destroy(w);
    }
    settle();
    long rss0 = rss_kib(), heap0 = heap_bytes();
    note("sessions=%d: rss %ld KiB, heap %ld KiB", nsess, rss0, heap0 / 1024);

    printf("{\"sessions\": %d, \"per_round\": %d, \"rss_kib_sessions_only\": %ld, "
           "\"heap_kib_sessions_only\": %ld, \"rounds\": [", nsess, per, rss0, heap0 / 1024);
    long prev_rss = rss0, prev_heap = heap0;
    for (int r = 0; r < rounds; r++) {
        struct upto u = {r * per, (r + 1) * per};
        for (int i = u.lo; i < u.hi; i++) {
            snprintf(id, sizeof id, "c%d", i);
            fleet_add(&f, i, cl[i % nsess], path, id);
        }
        settle();
        long rss_h = rss_kib(), heap_h = heap_bytes();
        int64_t t0 = mono_ns();
        for (int i = u.lo; i < u.hi; i++)
            if (zkelect_volunteer(f.e[i])) die("volunteer");
        if (fleet_wait(&f, round_enrolled, &u, 120000)) die("round %d: not all enrolled in 120 s", r);
        double enroll_ms = (mono_ns() - t0) / 1e6;
        settle();
        long rss = rss_kib(), heap = heap_bytes();
        note("round %d: +%d candidacies (total %d): rss %+ld KiB (handles only %+ld), heap %+ld KiB;"
             " enrolled in %.0f ms", r, per, u.hi, rss - prev_rss, rss_h - prev_rss,
             (heap - prev_heap) / 1024, enroll_ms);
        printf("%s{\"total\": %d, \"rss_kib\": %ld, \"heap_kib\": %ld, \"rss_growth_kib\": %ld, "
               "\"heap_growth_kib\": %ld, \"rss_growth_handles_only_kib\": %ld, "
               "\"heap_growth_handles_only_kib\": %ld, \"enroll_ms\": %.1f}",
               r ? ", " : "", u.hi, rss, heap / 1024, rss - prev_rss, (heap - prev_heap) / 1024,
               rss_h - prev_rss, (heap_h - prev_heap) / 1024, enroll_ms);
        fflush(stdout);
        prev_rss = rss;
        prev_heap = heap;
    }
    printf("], \"errors\": %ld}\n", f.errors);
    for (int i = 0; i < f.n; i++) zkelect_election_destroy(f.e[i]);
    for (int s = 0; s < nsess; s++) zkelect_client_destroy(cl[s]);
    return 0;
}
