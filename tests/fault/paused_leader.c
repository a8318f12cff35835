/*
 * paused_leader: one candidate that asks zkelect_is_leader() in a tight loop,
 * so a test can SIGSTOP/SIGCONT it and learn what the FIRST call after the
 * pause answered. Only the process itself can see that call: a `status`
 * query from outside would come after the library's threads had run.
 *
 *   paused_leader HOSTS PATH ID SESSION_TIMEOUT_MS MAX_SECONDS [KEY=VALUE...]
 *
 * Lines on stdout (one write(2) each; ns are CLOCK_REALTIME since the epoch):
 *   READY session=<hex> timeout=<ms>
 *   EVENT <TYPE> <ns> reason=<r> session=<hex>          (every library event)
 *   FLIP <0|1> <ns> <first_mono> <prev_mono>
 *                                    is_leader changed (as seen by the loop):
 *                                    <first_mono> is CLOCK_MONOTONIC just
 *                                    before the first call that answered the
 *                                    new value, <prev_mono> just after the
 *                                    last call that answered the old one, so
 *                                    the samples of all processes of one
 *                                    machine can be merged on one clock
 *   GAP <ms> <first> <ns>            the loop was not scheduled for <ms>;
 *                                    <first> is the first is_leader after it
 *   GAPCALL <ms> <value> <ns>        the pause fell inside one is_leader call,
 *                                    so its answer may predate the pause
 *   AFTER <value> <ns>               after a GAP or GAPCALL: the answer of the
 *                                    first is_leader call that began after
 *                                    the pause (the one that counts)
 *   BYE
 *   HOLE <start_mono> <end_mono>      the loop saw 1, was not scheduled for
 *                                    more than 5 ms, and saw 1 again: what
 *                                    is_leader answered in between is not
 *                                    known, so a merge must not count the
 *                                    hole as leading
 *   ACK <resign|volunteer> <rc>      a command from stdin was carried out
 *   END <value> <last_mono>          the loop stopped; <last_mono> is just
 *                                    after its last is_leader call
 *   KEEPALIVES <rc> <n>              answer to "keepalives": acknowledged
 *                                    lease keepalives of the client so far
 * stdin: "resign", "volunteer", "keepalives", "quit". It stops after MAX_SECONDS or when
 * stdin reaches EOF or reads "quit".
 */
#define _GNU_SOURCE
#include <zkelect/zkelect.h>

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static zkelect_client_t *client;
static atomic_int stop_flag;
/* The reader thread's commands against destroy: it is detached and may still
 * sit in fgets when MAX_SECONDS ends the run. */
static pthread_mutex_t cmd_lock = PTHREAD_MUTEX_INITIALIZER;
static int election_gone;

static void say(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* One write per line: lines of the event thread and the loop never mix. */
    ssize_t w = write(STDOUT_FILENO, buf, (size_t)n);
    (void)w;
}

static int64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_event(zkelect_election_t *e, const zkelect_event_t *ev, void *opaque)
{
    (void)e;
    (void)opaque;
    say("EVENT %s %" PRId64 " reason=%s session=%" PRIx64,
        zkelect_event_type_name(zkelect_event_type(ev)), zkelect_event_time_ns(ev),
        zkelect_reason_name(zkelect_event_reason(ev)),
        (uint64_t)zkelect_client_session_id(client));
}

static void *read_stdin(void *arg)
{
    zkelect_election_t *e = arg;
    char line[128];
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "quit", 4))
            break;
        pthread_mutex_lock(&cmd_lock);
        if (election_gone) {
            pthread_mutex_unlock(&cmd_lock);
            break;
        }
        if (!strncmp(line, "resign", 6))
            say("ACK resign %d", zkelect_resign(e));
        else if (!strncmp(line, "volunteer", 9))
            say("ACK volunteer %d", zkelect_volunteer(e));
        else if (!strncmp(line, "keepalives", 10)) {
            uint64_t n = 0;
            int rc = zkelect_client_counter(client, ZKELECT_COUNTER_KEEPALIVES, &n);
            say("KEEPALIVES %d %" PRIu64, rc, n);
        }
        pthread_mutex_unlock(&cmd_lock);
    }
    atomic_store(&stop_flag, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s HOSTS PATH ID SESSION_TIMEOUT_MS MAX_SECONDS [KEY=VALUE...]\n",
                argv[0]);
        return 2;
    }
    char err[512] = "";
    zkelect_conf_t *conf = zkelect_conf_new();
    if (zkelect_conf_set(conf, "zk.hosts", argv[1], err, sizeof err) ||
        zkelect_conf_set(conf, "zk.session.timeout.ms", argv[4], err, sizeof err) ||
        zkelect_conf_set(conf, "zk.log.level", "none", err, sizeof err)) {
        fprintf(stderr, "conf: %s\n", err);
        return 2;
    }
    for (int i = 6; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "expected KEY=VALUE: %s\n", argv[i]);
            return 2;
        }
        *eq = 0;
        if (zkelect_conf_set(conf, argv[i], eq + 1, err, sizeof err)) {
            fprintf(stderr, "conf %s: %s\n", argv[i], err);
            return 2;
        }
    }
    int64_t max_ns = (int64_t)atoi(argv[5]) * 1000000000;
    client = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!client) {
        fprintf(stderr, "client: %s\n", err);
        return 1;
    }
    if (zkelect_client_await_connected(client, 15000) != 0) {
        fprintf(stderr, "no connection\n");
        zkelect_client_destroy(client);
        return 3;
    }
    say("READY session=%" PRIx64 " timeout=%d", (uint64_t)zkelect_client_session_id(client),
        zkelect_client_session_timeout_ms(client));
    zkelect_election_t *e = zkelect_election_new(client, argv[2], argv[3], err, sizeof err);
    if (!e || zkelect_set_background_event_cb(e, on_event, NULL) || zkelect_volunteer(e)) {
        fprintf(stderr, "election: %s\n", err);
        return 1;
    }
    pthread_t reader;
    pthread_create(&reader, NULL, read_stdin, e);
    pthread_detach(reader);

    /* BOOTTIME counts the stopped time, like the lease clock does. */
    const int64_t gap_ns = 300 * 1000000LL;
    const int64_t hole_ns = 5 * 1000000LL;
    int64_t start = now_ns(CLOCK_BOOTTIME);
    int64_t prev_end = start;
    int64_t prev_end_mono = now_ns(CLOCK_MONOTONIC);
    int last = 0;
    int want_after = 0;
    struct timespec nap = {0, 100 * 1000};
    while (!atomic_load(&stop_flag) && prev_end - start < max_ns) {
        int64_t m0 = now_ns(CLOCK_MONOTONIC);
        int64_t t0 = now_ns(CLOCK_BOOTTIME);
        int v = zkelect_is_leader(e);
        int64_t t1 = now_ns(CLOCK_BOOTTIME);
        int64_t m1 = now_ns(CLOCK_MONOTONIC);
        if (t0 - prev_end > gap_ns) {
            say("GAP %" PRId64 " %d %" PRId64, (t0 - prev_end) / 1000000, v,
                now_ns(CLOCK_REALTIME));
            say("AFTER %d %" PRId64, v, now_ns(CLOCK_REALTIME));
            want_after = 0;
        } else if (t1 - t0 > gap_ns) {
            say("GAPCALL %" PRId64 " %d %" PRId64, (t1 - t0) / 1000000, v,
                now_ns(CLOCK_REALTIME));
            want_after = 1;
        } else if (want_after) {
            say("AFTER %d %" PRId64, v, now_ns(CLOCK_REALTIME));
            want_after = 0;
        }
        if (v == 1 && last == 1 && m0 - prev_end_mono > hole_ns)
            say("HOLE %" PRId64 " %" PRId64, prev_end_mono, m0);
        if (v != last) {
            say("FLIP %d %" PRId64 " %" PRId64 " %" PRId64, v, now_ns(CLOCK_REALTIME), m0,
                prev_end_mono);
            last = v;
        }
        prev_end = t1;
        prev_end_mono = m1;
        nanosleep(&nap, NULL);
    }
    say("END %d %" PRId64, last, prev_end_mono);
    zkelect_set_background_event_cb(e, NULL, NULL);
    pthread_mutex_lock(&cmd_lock);
    election_gone = 1;
    pthread_mutex_unlock(&cmd_lock);
    zkelect_election_destroy(e);
    zkelect_client_destroy(client);
    say("BYE");
    return 0;
}
