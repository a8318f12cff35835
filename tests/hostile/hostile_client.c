/* Every public call against one ZooKeeper address that may be hostile
 * (tests/hostile/evilzk.py): prints one line per call, "CALL name rc=..
 * ms=.. msg=..", so the test can hold each call to its documented bound.
 * Usage: hostile-client HOST:PORT CONNECT_TIMEOUT_MS SESSION_TIMEOUT_MS */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zkelect/zkelect.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Messages may hold anything the server sent: print them escaped. */
static void report(const char *name, int rc, double t0, const char *msg) {
    printf("CALL %s rc=%s ms=%.0f msg=", name,
           rc == -1000 ? "NULL" : rc <= 0 ? zkelect_err_name(rc) : "1", now_ms() - t0);
    for (const unsigned char *p = (const unsigned char *)(msg ? msg : ""); *p; ++p)
        if (*p < 0x20 || *p >= 0x7f || *p == '\\') printf("\\x%02x", *p);
        else putchar(*p);
    putchar('\n');
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s HOST:PORT CONNECT_TIMEOUT_MS SESSION_TIMEOUT_MS\n", argv[0]);
        return 2;
    }
    char err[512] = "";
    zkelect_conf_t *conf = zkelect_conf_new();
    if (!conf || zkelect_conf_set(conf, "zk.hosts", argv[1], err, sizeof err) != 0 ||
        zkelect_conf_set(conf, "zk.connect.timeout.ms", argv[2], err, sizeof err) != 0 ||
        zkelect_conf_set(conf, "zk.session.timeout.ms", argv[3], err, sizeof err) != 0 ||
        zkelect_conf_set(conf, "zk.log.level", "none", err, sizeof err) != 0) {
        fprintf(stderr, "conf: %s\n", err);
        return 2;
    }
    double t0 = now_ms();
    zkelect_client_t *c = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    report("client_new", c ? 0 : -1000, t0, c ? "" : err);
    if (!c) return 1;

    t0 = now_ms();
    int rc = zkelect_client_await_connected(c, -1);
    report("await_connected", rc, t0, zkelect_strerror(rc));

    t0 = now_ms();
    zkelect_election_t *e = zkelect_election_new(c, "/hostile/e", "probe", err, sizeof err);
    report("election_new", e ? 0 : -1000, t0, e ? "" : err);

    if (e) {
        t0 = now_ms();
        rc = zkelect_volunteer(e);
        report("volunteer", rc, t0, "");

        t0 = now_ms();
        rc = zkelect_await_leader(e, 1000);
        report("await_leader", rc, t0, zkelect_strerror(rc));

        t0 = now_ms();
        rc = zkelect_is_leader(e);
        report("is_leader", rc, t0, "");

        char id[ZKELECT_ID_MAX + 1];
        t0 = now_ms();
        rc = zkelect_leader_id(e, id, sizeof id);
        report("leader_id", rc, t0, rc == 0 ? id : zkelect_strerror(rc));

        t0 = now_ms();
        err[0] = 0;
        zkelect_participants_t *p = zkelect_participants(e, err, sizeof err);
        report("participants", p ? 0 : -1000, t0, p ? "" : err);
        zkelect_participants_destroy(p);

        /* Whatever events came: each one's message, so the test sees what
         * the library told the user. */
        for (int i = 0; i < 64; ++i) {
            zkelect_event_t *ev = zkelect_next_event(e, 0);
            if (!ev) break;
            char what[600];
            snprintf(what, sizeof what, "%s %s", zkelect_event_type_name(zkelect_event_type(ev)),
                     zkelect_event_message(ev));
            report("event", 0, now_ms(), what);
            zkelect_event_destroy(ev);
        }

        t0 = now_ms();
        rc = zkelect_election_destroy(e);
        report("election_destroy", rc, t0, "");
    }

    t0 = now_ms();
    err[0] = 0;
    zkelect_participants_t *p = zkelect_client_participants(c, "/hostile/other", err, sizeof err);
    report("client_participants", p ? 0 : -1000, t0, p ? "" : err);
    zkelect_participants_destroy(p);

    t0 = now_ms();
    err[0] = 0;
    zkelect_observer_t *o = zkelect_observer_new(c, "/hostile/e", err, sizeof err);
    report("observer_new", o ? 0 : -1000, t0, o ? "" : err);
    if (o) {
        t0 = now_ms();
        zkelect_event_t *ev = zkelect_observer_next_event(o, 500);
        report("observer_next_event", ev ? zkelect_event_type(ev) : 0, t0,
               ev ? zkelect_event_type_name(zkelect_event_type(ev)) : "");
        zkelect_event_destroy(ev);
        t0 = now_ms();
        rc = zkelect_observer_destroy(o);
        report("observer_destroy", rc, t0, "");
    }

    t0 = now_ms();
    rc = zkelect_client_destroy(c);
    report("client_destroy", rc, t0, "");
    return 0;
}
