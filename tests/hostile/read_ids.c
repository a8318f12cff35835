/* Reads an election that others (the test, through kazoo) filled with
 * hostile ids and names, through every C API path that returns them, and
 * prints each byte string hex-encoded, one record per line:
 *   P <id> <node>   zkelect_client_participants, in queue order
 *   L <id>          zkelect_leader_id
 *   F <id> <node>   the FOLLOWING event of a candidacy that joins at the back
 *   O <id> <node>   an observer's first LEADER_CHANGED event
 * Usage: read-ids HOSTS PATH */
#include <stdio.h>
#include <string.h>

#include <zkelect/zkelect.h>

static void hex(const char *s) {
    putchar(' ');
    if (!*s) putchar('-');
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) printf("%02x", *p);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s HOSTS PATH\n", argv[0]);
        return 2;
    }
    char err[512] = "";
    zkelect_conf_t *conf = zkelect_conf_new();
    if (zkelect_conf_set(conf, "zk.hosts", argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    zkelect_client_t *c = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!c || zkelect_client_await_connected(c, 15000) != 0) {
        fprintf(stderr, "connect: %s\n", err);
        return 1;
    }
    int rc = 0;
    zkelect_participants_t *p = zkelect_client_participants(c, argv[2], err, sizeof err);
    if (!p) {
        fprintf(stderr, "participants: %s\n", err);
        rc = 1;
    }
    for (size_t i = 0; p && i < zkelect_participants_count(p); ++i) {
        printf("P");
        hex(zkelect_participants_id(p, i));
        hex(zkelect_participants_node(p, i));
        putchar('\n');
    }
    zkelect_participants_destroy(p);

    zkelect_election_t *e = zkelect_election_new(c, argv[2], "reader", err, sizeof err);
    if (!e || zkelect_volunteer(e) != 0) {
        fprintf(stderr, "election: %s\n", err);
        return 1;
    }
    static char id[1 << 21];
    int lrc = zkelect_leader_id(e, id, sizeof id);
    if (lrc == 0) {
        printf("L");
        hex(id);
        putchar('\n');
    } else {
        printf("L! %s\n", zkelect_err_name(lrc));
    }
    for (int i = 0; i < 50; ++i) {
        zkelect_event_t *ev = zkelect_next_event(e, 200);
        if (!ev) continue;
        int t = zkelect_event_type(ev);
        if (t == ZKELECT_EV_FOLLOWING) {
            printf("F");
            hex(zkelect_event_id(ev));
            hex(zkelect_event_node(ev));
            putchar('\n');
        }
        zkelect_event_destroy(ev);
        if (t == ZKELECT_EV_FOLLOWING || t == ZKELECT_EV_ELECTED || t == ZKELECT_EV_ERROR) break;
    }
    zkelect_election_destroy(e);

    zkelect_observer_t *o = zkelect_observer_new(c, argv[2], err, sizeof err);
    if (!o) {
        fprintf(stderr, "observer: %s\n", err);
        return 1;
    }
    for (int i = 0; i < 50; ++i) {
        zkelect_event_t *ev = zkelect_observer_next_event(o, 200);
        if (!ev) continue;
        int t = zkelect_event_type(ev);
        if (t == ZKELECT_EV_LEADER_CHANGED) {
            printf("O");
            hex(zkelect_event_id(ev));
            hex(zkelect_event_node(ev));
            putchar('\n');
        }
        zkelect_event_destroy(ev);
        if (t == ZKELECT_EV_LEADER_CHANGED) break;
    }
    zkelect_observer_destroy(o);
    zkelect_client_destroy(c);
    fflush(stdout);
    return rc;
}
