/*
 * handover: one side of a handover of E elections between two processes
 * (issue 35), each election alone on a path of its own, the E spread over S
 * sessions (election i on session i % S). bench/run.py starts two of them
 * on the same paths:
 *
 *   --role leader   volunteers all E, waits until it leads every one, says
 *                   JOINED; then either is SIGKILLed by the driver (crash),
 *                   or on the line "graceful" on stdin leaves every election
 *                   and destroys its clients (graceful), says GRACEFUL;
 *   --role standby  volunteers all E behind it, says FOLLOWING when every
 *                   one is FOLLOWING; then on the line "T0 <ns>" (the
 *                   driver's CLOCK_REALTIME just before the kill or the
 *                   "graceful") waits until it leads every one and says
 *                   LED; on the line "teardown", resigns all, destroys them
 *                   and its clients, says TEARDOWN, and exits at EOF on
 *                   stdin.
 *
 * States come from the events, read without an event fd (E up to 100,000
 * would pass RLIMIT_NOFILE): every handle's queue is swept with
 * zkelect_next_event(e, 0) every millisecond (or, when a sweep takes longer,
 * after a rest as long as the sweep); the times are the events' own
 * (zkelect_event_time_ns, CLOCK_REALTIME), so a late sweep does not
 * lengthen them. The sweeps go on while it waits for the driver's lines. At the end zkelect_is_leader() is checked on every handle.
 *
 *   handover --connect HOSTS --role leader|standby --prefix PATH
 *            [--elections E] [--sessions S] [--session-timeout-ms T]
 *            [--guard auto|on|off] [--graceful resign-first|destroy]
 *            [--timeout-ms MS] [--nodes-max-bytes N]
 *
 * --nodes-max-bytes N: the clients' zk.session.nodes.max.bytes (0: no bound;
 * by default the library's 1,000,000 bytes of candidate node paths per
 * session, under 10,000 elections of the paths run.py gives).
 *
 * Lines on stdout (one per step; key=value; rss_kib and threads are this
 * process's VmRSS and Threads from /proc/self/status at that moment):
 *   CONNECTED ms= rss_kib= threads=
 *   JOINED ms= first_ms= rss_kib= threads=          (leader)
 *   FOLLOWING ms= rss_kib= threads=                  (standby)
 *   GRACEFUL ms= resign_ms= destroy_ms= clients_ms=  (leader)
 *   LED ms= first_ms= is_leader= errors= rss_kib= threads=   (standby)
 *   TEARDOWN ms= rss_kib= threads=                   (standby)
 *   FAILED what=...                                  (then exit 1)
 * Only the public header, as a user's program.
 */
#include "bcommon.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

static void status_of_self(long *rss, long *threads)
{
    char line[256];
    *rss = *threads = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld", rss);
        sscanf(line, "Threads: %ld", threads);
    }
    fclose(f);
}

static void say(const char *fmt, ...)
{
    va_list ap;
    long rss, thr;
    status_of_self(&rss, &thr);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" rss_kib=%ld threads=%ld\n", rss, thr);
    fflush(stdout);
}

static void failed(const char *what)
{
    printf("FAILED what=%s\n", what);
    fflush(stdout);
    die("%s", what);
}

static int nel, nsess;
static zkelect_client_t **cl;
static struct fleet f;


/* Sweeps every queue until counts[state] == nel or the deadline; 0 or -1. */
static int sweep_until(int state, int64_t deadline_mono)
{
    for (;;) {
        int64_t t = mono_ns();
        for (int i = 0; i < nel; i++) fleet_take(&f, i);
        if (f.counts[state] == nel) return 0;
        if (mono_ns() > deadline_mono) return -1;
        /* rest at least as long as the sweep took (1 ms at the least): the
         * sweeper takes at most half a core from the library's threads */
        int64_t took = mono_ns() - t;
        struct timespec gap = {0, took > 1000000 ? (took < 999999999 ? took : 999999999) : 1000000};
        nanosleep(&gap, NULL);
    }
}

/* The first and the last time a handle entered `state`, relative to t0. */
static void span(int state, int64_t t0, double *first_ms, double *last_ms)
{
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < nel; i++)
        if (f.state[i] == state) {
            if (f.last_ns[i] < lo) lo = f.last_ns[i];
            if (f.last_ns[i] > hi) hi = f.last_ns[i];
        }
    *first_ms = (lo - t0) / 1e6;
    *last_ms = (hi - t0) / 1e6;
}

static int resign_first;
static void *leave_session(void *arg)
{
    int s = (int)(intptr_t)arg;
    if (resign_first)
        for (int i = s; i < nel; i += nsess) zkelect_resign(f.e[i]);
    for (int i = s; i < nel; i += nsess) zkelect_election_destroy(f.e[i]);
    zkelect_client_destroy(cl[s]);
    return NULL;
}

/* Every session's elections left and its client destroyed, one thread per
 * session (as scale.c's teardown). */
static double leave_all(void)
{
    int64_t t = mono_ns();
    pthread_t *th = calloc(nsess, sizeof *th);
    for (int s = 0; s < nsess; s++) pthread_create(&th[s], NULL, leave_session, (void *)(intptr_t)s);
    for (int s = 0; s < nsess; s++) pthread_join(th[s], NULL);
    free(th);
    return (mono_ns() - t) / 1e6;
}

/* One line from the driver. The event queues are swept meanwhile, as in
 * sweep_until: a handle whose events nobody reads holds up to 1024 of them
 * (docs/limits.md), and every reconnect of a session adds a SUSPENDED and a
 * RECONNECTED to each of its elections: a leader of 10,000 elections on 10
 * sessions that read nothing while it waited for the driver grew by 5.7 MB
 * a round of reconnects, which its resident memory then counted (issue 35).
 * stdin is read a byte at a time with read(2), never through stdio's
 * buffer, so poll() sees every byte not yet read. */
static int read_cmd(char *buf, size_t n)
{
    size_t len = 0;
    for (;;) {
        int64_t t = mono_ns();
        for (int i = 0; i < nel; i++) fleet_take(&f, i);
        int64_t took = mono_ns() - t;
        int rest_ms = took > 1000000 ? (int)(took < 999999999 ? took / 1000000 : 999) : 1;
        struct pollfd p = {.fd = 0, .events = POLLIN};
        int r = poll(&p, 1, rest_ms);
        if (r < 0 && errno != EINTR) return -1;
        if (r <= 0) continue;
        char c;
        ssize_t got = read(0, &c, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        if (c == '\n') break;
        if (len + 1 < n) buf[len++] = c;
    }
    buf[len] = 0;
    return 0;
}

int main(int argc, char **argv)
{
    const char *hosts = opt(argc, argv, "--connect", BENCH_DEFAULT_HOSTS);
    const char *role = opt(argc, argv, "--role", "");
    const char *prefix = opt(argc, argv, "--prefix", NULL);
    nel = (int)opt_long(argc, argv, "--elections", 1000);
    nsess = (int)opt_long(argc, argv, "--sessions", 1);
    int session_ms = (int)opt_long(argc, argv, "--session-timeout-ms", 10000);
    int timeout_ms = (int)opt_long(argc, argv, "--timeout-ms", 600000);
    const char *guard = opt(argc, argv, "--guard", "auto");
    const char *graceful = opt(argc, argv, "--graceful", "resign-first");
    const char *max_bytes = opt(argc, argv, "--nodes-max-bytes", NULL);
    int leader = strcmp(role, "leader") == 0;
    if (!leader && strcmp(role, "standby")) die("--role leader|standby");
    if (!prefix || nel < 1 || nsess < 1 || nsess > nel) die("bad options");
    if (strcmp(graceful, "resign-first") && strcmp(graceful, "destroy")) die("bad --graceful");
    resign_first = strcmp(graceful, "resign-first") == 0;

    int64_t t = mono_ns();
    cl = calloc(nsess, sizeof *cl);
    for (int s = 0; s < nsess; s++)
        cl[s] = client_open_with2(hosts, session_ms, "crash.guard", guard,
                                  max_bytes ? "zk.session.nodes.max.bytes" : NULL, max_bytes);
    for (int s = 0; s < nsess; s++) client_wait(cl[s]);
    say("CONNECTED ms=%.1f sessions=%d negotiated_timeout_ms=%d", (mono_ns() - t) / 1e6, nsess,
        zkelect_client_session_timeout_ms(cl[0]));

    fleet_init(&f, nel);
    char path[256], id[32];
    for (int i = 0; i < nel; i++) {
        char err[256];
        snprintf(path, sizeof path, "%s/e%d", prefix, i);
        snprintf(id, sizeof id, "%s%d", leader ? "L" : "S", i);
        f.e[i] = zkelect_election_new(cl[i % nsess], path, id, err, sizeof err);
        if (!f.e[i]) die("election_new: %s", err);
    }
    int64_t t0 = real_ns();
    for (int i = 0; i < nel; i++)
        if (zkelect_volunteer(f.e[i])) die("volunteer %d", i);
    int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
    double first_ms, last_ms;
    char cmd[128];

    if (leader) {
        if (sweep_until(ST_ELECTED, deadline)) failed("join");
        span(ST_ELECTED, t0, &first_ms, &last_ms);
        say("JOINED ms=%.1f first_ms=%.1f errors=%ld", last_ms, first_ms, f.errors);
        /* Until told: the driver kills us (crash), or asks for a graceful
         * leave; EOF (the driver is done with us) leaves too. */
        int go = read_cmd(cmd, sizeof cmd) == 0 && strcmp(cmd, "graceful") == 0;
        int64_t g0 = mono_ns();
        double resign_ms = 0;
        if (go && resign_first) {
            /* leave_all resigns per session; time the resign calls alone */
            for (int i = 0; i < nel; i++) zkelect_resign(f.e[i]);
            resign_ms = (mono_ns() - g0) / 1e6;
            resign_first = 0;
        }
        double leave_ms = leave_all();
        if (go)
            say("GRACEFUL ms=%.1f resign_ms=%.1f destroy_and_clients_ms=%.1f", (mono_ns() - g0) / 1e6,
                resign_ms, leave_ms);
        return 0;
    }

    if (sweep_until(ST_FOLLOWING, deadline)) {
        if (f.counts[ST_ELECTED]) note("standby: %d ELECTED before the leader left", f.counts[ST_ELECTED]);
        failed("following");
    }
    span(ST_FOLLOWING, t0, &first_ms, &last_ms);
    say("FOLLOWING ms=%.1f first_ms=%.1f errors=%ld", last_ms, first_ms, f.errors);
    if (read_cmd(cmd, sizeof cmd) || strncmp(cmd, "T0 ", 3)) failed("no T0 line");
    int64_t h0 = strtoll(cmd + 3, NULL, 10);
    deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
    if (sweep_until(ST_ELECTED, deadline)) failed("led");
    span(ST_ELECTED, h0, &first_ms, &last_ms);
    int leading = 0;
    for (int i = 0; i < nel; i++) leading += zkelect_is_leader(f.e[i]);
    say("LED ms=%.1f first_ms=%.1f is_leader=%d errors=%ld", last_ms, first_ms, leading, f.errors);
    if (read_cmd(cmd, sizeof cmd) || strcmp(cmd, "teardown")) return leading == nel ? 0 : 1;
    resign_first = 1;
    double tear_ms = leave_all();
    say("TEARDOWN ms=%.1f", tear_ms);
    /* until the driver has read this process's /proc after the teardown */
    while (read_cmd(cmd, sizeof cmd) == 0) {
    }
    return leading == nel ? 0 : 1;
}
