/* The idle-cost bench's libzkelect holder (bench/idle_cost.py): one client
 * (one ZooKeeper session) leading E elections on distinct paths, then doing
 * nothing until stdin ends, so the driver can count what ZooKeeper writes
 * and receives meanwhile.
 *
 *   zkelect-bench-idlehold --connect HOSTS --path P --elections E
 *                          --session-timeout-ms T [--follow 1]
 *
 * Prints "READY E" once every election is led, "LOST i" if one stops
 * leading before stdin ends, and exits 0 at the end of stdin. With
 * --follow 1 it joins the same E elections behind a holder already there:
 * "READY E" once each is FOLLOWING, and at the end of stdin "LOST i" for
 * one that leads (a follower must not). */
#include "bcommon.h"

int main(int argc, char **argv)
{
    const char *hosts = opt(argc, argv, "--connect", BENCH_DEFAULT_HOSTS);
    const char *path = opt(argc, argv, "--path", "/idle");
    long n = opt_long(argc, argv, "--elections", 1);
    long t = opt_long(argc, argv, "--session-timeout-ms", 10000);
    int follow = opt_long(argc, argv, "--follow", 0) != 0;
    if (n < 1 || n > 100000) die("--elections must be 1..100000");
    /* Past some 10,000 of these paths the default zk.session.nodes.max.bytes
     * refuses a volunteer (bench/run.py's UNBOUNDED_PER_SESSION). */
    zkelect_client_t *cl = n >= 5000 ? client_open_with(hosts, (int)t, "zk.session.nodes.max.bytes", "0")
                                     : client_open(hosts, (int)t);
    client_wait(cl);
    zkelect_election_t **es = calloc((size_t)n, sizeof *es);
    if (!es) die("out of memory");
    char p[512], err[256];
    for (long i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/e%ld", path, i);
        es[i] = zkelect_election_new(cl, p, "idle", err, sizeof err);
        if (!es[i]) die("election_new %s: %s", p, err);
        int rc = zkelect_volunteer(es[i]);
        if (rc) die("volunteer %s: %s", p, zkelect_strerror(rc));
    }
    for (long i = 0; i < n && !follow; i++) {
        int rc = zkelect_await_leader(es[i], 60000);
        if (rc) die("await_leader e%ld: %s", i, zkelect_strerror(rc));
    }
    for (long i = 0; i < n && follow; i++) {
        int ty = 0;
        for (int k = 0; k < 600 && ty != ZKELECT_EV_FOLLOWING; k++) {
            zkelect_event_t *ev = zkelect_next_event(es[i], 100);
            ty = ev ? zkelect_event_type(ev) : 0;
            zkelect_event_destroy(ev);
        }
        if (ty != ZKELECT_EV_FOLLOWING) die("e%ld: no FOLLOWING within 60 s", i);
    }
    printf("READY %ld\n", n);
    fflush(stdout);
    char buf[256];
    while (fgets(buf, sizeof buf, stdin)) {
    }
    long lost = 0;
    for (long i = 0; i < n; i++)
        if (zkelect_is_leader(es[i]) == follow) {
            printf("LOST %ld\n", i);
            lost++;
        }
    fflush(stdout);
    /* Every node deleted, pipelined, before the session closes: a session
     * close that left 100,000 ephemerals to the servers would be one
     * transaction past jute.maxbuffer (docs/limits.md). */
    int rc = zkelect_client_shutdown(cl, 120000);
    if (rc) fprintf(stderr, "client_shutdown: %s\n", zkelect_strerror(rc));
    for (long i = 0; i < n; i++) zkelect_election_destroy(es[i]);
    zkelect_client_destroy(cl);
    free(es);
    return lost ? 3 : 0;
}
