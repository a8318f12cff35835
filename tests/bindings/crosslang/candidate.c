/*
 * The C candidate of the cross-language test (test_crosslang.py), on the
 * public C API only, built with `pkg-config --cflags --libs libzkelect`.
 * Same request/response protocol as
 * bindings/rust/zkelect/examples/candidate.rs:
 *
 *   candidate HOSTS PATH ID [KEY=VALUE...]   ->  READY
 *   join | resign | await MS | leader? | who | events MS | counters | quit
 */
#include <zkelect/zkelect.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_event(const zkelect_event_t *ev)
{
    int type = zkelect_event_type(ev);
    switch (type) {
    case ZKELECT_EV_ELECTED:
        printf("EVENT ELECTED %" PRId64 "\n", zkelect_event_token(ev));
        break;
    case ZKELECT_EV_DEPOSED:
        printf("EVENT DEPOSED %s\n", zkelect_reason_name(zkelect_event_reason(ev)));
        break;
    case ZKELECT_EV_FOLLOWING:
        printf("EVENT FOLLOWING %s\n", zkelect_event_id(ev));
        break;
    case ZKELECT_EV_WARNING:
        printf("EVENT WARNING %s\n", zkelect_event_message(ev));
        break;
    default:
        printf("EVENT %s\n", zkelect_event_type_name(type));
        break;
    }
}

int main(int argc, char **argv)
{
    char err[256] = "", line[256], cmd[32], leader[ZKELECT_ID_MAX + 1];
    zkelect_conf_t *conf;
    zkelect_client_t *client;
    zkelect_election_t *e;
    zkelect_event_t *ev;
    int64_t token;
    int rc, ms;

    if (argc < 4) {
        fprintf(stderr, "usage: candidate HOSTS PATH ID [KEY=VALUE...]\n");
        return 2;
    }
    conf = zkelect_conf_new();
    if (!conf || zkelect_conf_set(conf, "zk.hosts", argv[1], err, sizeof err) != 0 ||
        zkelect_conf_set(conf, "zk.session.timeout.ms", "6000", err, sizeof err) != 0) {
        fprintf(stderr, "candidate: %s\n", err);
        return 1;
    }
    /* More keys as the other languages' candidates take them (zk.tls.*,
     * zk.sasl.* for the secure ensemble of tests/sasl). */
    for (int i = 4; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq)
            *eq = '\0';
        if (zkelect_conf_set(conf, argv[i], eq ? eq + 1 : "", err, sizeof err) != 0) {
            fprintf(stderr, "candidate: %s\n", err);
            return 1;
        }
    }
    client = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!client || zkelect_client_await_connected(client, 30000) != 0) {
        fprintf(stderr, "candidate: cannot connect: %s\n", err);
        return 1;
    }
    e = zkelect_election_new(client, argv[2], argv[3], err, sizeof err);
    if (!e) {
        fprintf(stderr, "candidate: %s\n", err);
        return 1;
    }
    printf("READY\n");
    fflush(stdout);

    while (fgets(line, sizeof line, stdin)) {
        ms = 0;
        cmd[0] = '\0';
        if (sscanf(line, "%31s %d", cmd, &ms) < 1)
            continue;
        rc = 0;
        if (strcmp(cmd, "join") == 0) {
            if ((rc = zkelect_volunteer(e)) == 0)
                printf("OK\n");
        } else if (strcmp(cmd, "resign") == 0) {
            if ((rc = zkelect_resign(e)) == 0)
                printf("OK\n");
        } else if (strcmp(cmd, "await") == 0) {
            rc = zkelect_await_leader(e, ms);
            if (rc == 0 && (rc = zkelect_fencing_token(e, &token)) == 0)
                printf("LEADER %" PRId64 "\n", token);
            else if (rc == ZKELECT_ETIMEDOUT) {
                rc = 0;
                printf("TIMEOUT\n");
            }
        } else if (strcmp(cmd, "leader?") == 0) {
            printf("IS %d\n", zkelect_is_leader(e));
        } else if (strcmp(cmd, "who") == 0) {
            if ((rc = zkelect_leader_id(e, leader, sizeof leader)) == 0)
                printf("LEADS %s\n", leader);
        } else if (strcmp(cmd, "events") == 0) {
            /* Wait for the first, then take what is already queued. */
            for (ev = zkelect_next_event(e, ms); ev; ev = zkelect_next_event(e, 0)) {
                print_event(ev);
                zkelect_event_destroy(ev);
            }
            printf("END\n");
        } else if (strcmp(cmd, "counters") == 0) {
            uint64_t v;
            int i;
            printf("COUNTERS");
            for (i = 0; i < ZKELECT_COUNTER__COUNT; i++) {
                if ((rc = zkelect_client_counter(client, i, &v)) != 0)
                    break;
                printf(" %s=%" PRIu64, zkelect_counter_name(i), v);
            }
            printf("\n");
        } else if (strcmp(cmd, "quit") == 0) {
            break;
        } else {
            printf("ERR unknown command %s\n", cmd);
        }
        if (rc != 0)
            printf("ERR %s (%s)\n", zkelect_strerror(rc), zkelect_err_name(rc));
        fflush(stdout);
    }
    zkelect_election_destroy(e);
    zkelect_client_destroy(client);
    printf("BYE\n");
    return 0;
}
