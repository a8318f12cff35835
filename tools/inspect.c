/*
 * zkelect status / zkelect observe: look at an election without taking part.
 */
#define _GNU_SOURCE
#include "common.h"
#include "metrics.h"

#include <json-c/json.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <unistd.h>

/* The library checks paths when a handle is made; status makes none, so
 * catch the obvious mistakes here, before any connection attempt. */
static int path_ok(const char *p)
{
    size_t n = strlen(p);
    return n >= 2 && p[0] == '/' && p[n - 1] != '/' && !strstr(p, "//");
}

static void status_usage(FILE *f)
{
    zt_usage(f, ZT_CMD_STATUS,
             "Lists the candidates of the election at P in queue order (the leader\n"
             "first) with their ids, fencing tokens and node ages. The leader's node age\n"
             "bounds from above how long it has led. Positions count from 0, the leader.\n"
             "The last line names the servers this command's own client used (zk.hosts,\n"
             "or the ensemble's configuration's servers once followed: zk.hosts.follow).\n"
             "--json prints one JSON object.\n"
             "\n"
             "With --group G instead of --path: the members of the balanced group at G\n"
             "(balance.group), one line each (its node, session, how many of its\n"
             "candidacies lead and stand in line; \"invalid\" for a member node whose\n"
             "data does not parse), then the total leading; --json prints the library's\n"
             "document (zkelect_client_group_stats).\n"
             "\n"
             "Ids and node names are escaped (\\xNN) so that one candidate is one line.\n",
             "Exit status: 0 shown (also with no candidates), 1 ZooKeeper could not be\n"
             "asked, 2 bad arguments, 3 no connection within the connect timeout,\n"
             "5 permission denied.\n");
}

/* The servers status's own client uses: zk.hosts, or, once the client has
 * read the ensemble's configuration (zk.hosts.follow), the servers it names.
 * An operator replacing servers sees here whether clients have followed.
 * Caller frees; NULL when the library does not say. */
static char *client_hosts(zkelect_client_t *client)
{
    char err[256];
    zkelect_stats_t *st = zkelect_client_stats(client, err, sizeof err);
    if (!st)
        return NULL;
    char *out = NULL;
    json_object *doc = json_tokener_parse(zkelect_stats_json(st)), *v;
    if (doc && json_object_object_get_ex(doc, "hosts", &v) && json_object_is_type(v, json_type_string))
        out = strdup(json_object_get_string(v));
    json_object_put(doc);
    zkelect_stats_destroy(st);
    return out;
}

static void fmt_age(int64_t ms, char *buf, size_t len)
{
    if (ms < 0)
        ms = 0;
    if (ms < 60000)
        snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
    else if (ms < 3600000)
        snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000, (ms / 1000) % 60);
    else
        snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000, (ms / 60000) % 60);
}

/* The text of status --group: a line per member, then the total. */
static void print_group(const struct zt_opts *o, json_object *doc)
{
    json_object *members = NULL, *v;
    if (!json_object_object_get_ex(doc, "members", &members) ||
        !json_object_is_type(members, json_type_array))
        members = NULL;
    size_t n = members ? json_object_array_length(members) : 0;
    char node[1024], session[64];
    printf("%s: %zu member%s\n", o->group, n, n == 1 ? "" : "s");
    if (n > 0)
        printf("\n%-28s %-20s %-8s %s\n", "NODE", "SESSION", "LEADING", "IN LINE");
    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(members, i);
        zt_escape(json_object_object_get_ex(m, "node", &v) ? json_object_get_string(v) : "", node,
                  sizeof node);
        zt_escape(json_object_object_get_ex(m, "session", &v) ? json_object_get_string(v) : "",
                  session, sizeof session);
        int valid = json_object_object_get_ex(m, "valid", &v) && json_object_get_boolean(v);
        if (!valid) {
            printf("%-28s %-20s invalid (its data is not a member's counts)\n", node, session);
            continue;
        }
        int64_t leading = json_object_object_get_ex(m, "leading", &v) ? json_object_get_int64(v) : 0;
        int64_t in_line = json_object_object_get_ex(m, "in_line", &v) ? json_object_get_int64(v) : 0;
        printf("%-28s %-20s %-8" PRId64 " %" PRId64 "\n", node, session, leading, in_line);
    }
    int64_t total = json_object_object_get_ex(doc, "leading", &v) ? json_object_get_int64(v) : 0;
    int64_t unread = json_object_object_get_ex(doc, "unread", &v) ? json_object_get_int64(v) : 0;
    printf("\ntotal leading: %" PRId64 "\n", total);
    if (unread > 0)
        printf("member nodes not read (past the first 4096): %" PRId64 "\n", unread);
}

/* status --group: the balanced group's members, as the library reads them. */
static int status_group(const struct zt_opts *o, zkelect_client_t *client)
{
    char err[512] = "";
    zkelect_stats_t *st = zkelect_client_group_stats(client, o->group, err, sizeof err);
    if (!st) {
        int code = zkelect_last_error_code();
        zt_err("cannot read the group %s: %s", o->group, err);
        return code == ZKELECT_EINVAL ? ZT_EXIT_USAGE : zt_exit_for_message(err);
    }
    const char *text = zkelect_stats_json(st);
    if (o->json) {
        fputs(text, stdout);
        fputc('\n', stdout);
    } else {
        json_object *doc = json_tokener_parse(text);
        if (!doc) {
            zt_err("out of memory");
            zkelect_stats_destroy(st);
            return ZT_EXIT_FAILURE;
        }
        print_group(o, doc);
        json_object_put(doc);
        char *hosts = client_hosts(client);
        if (hosts) {
            char esc[1024];
            zt_escape(hosts, esc, sizeof esc);
            printf("\nhosts in use: %s\n", esc);
        }
        free(hosts);
    }
    fflush(stdout);
    zkelect_stats_destroy(st);
    return ZT_EXIT_OK;
}

/* --connect, and --path or --group (one of them, well formed). */
static int status_args_ok(const struct zt_opts *o)
{
    if (!o->hosts || !*o->hosts || (!o->path == !o->group)) {
        zt_err("--connect (or ZKELECT_CONNECT) and one of --path or --group are required");
        return 0;
    }
    const char *p = o->path ? o->path : o->group;
    if (!path_ok(p)) {
        zt_err("bad %s path '%s' (absolute, no trailing '/', no '//')",
               o->path ? "election" : "group", p);
        return 0;
    }
    return 1;
}

int zt_cmd_status(int argc, char **argv)
{
    struct zt_opts o = {0};
    int rc = zt_parse(argc, argv, ZT_CMD_STATUS, &o, status_usage);
    if (rc >= 0)
        return rc;
    if (!status_args_ok(&o)) {
        status_usage(stderr);
        return ZT_EXIT_USAGE;
    }
    int exit_code = ZT_EXIT_FAILURE;
    zkelect_client_t *client = zt_observer_client(&o, &exit_code);
    if (!client) {
        if (exit_code == ZT_EXIT_USAGE)
            status_usage(stderr);
        return exit_code;
    }
    rc = zt_await(client, &o);
    if (rc >= 0) {
        zkelect_client_destroy(client);
        return rc;
    }
    if (o.group) {
        rc = status_group(&o, client);
        zkelect_client_destroy(client);
        return rc;
    }

    char err[512] = "";
    zkelect_participants_t *ps = zkelect_client_participants(client, o.path, err, sizeof err);
    if (!ps) {
        zt_err("cannot list %s: %s", o.path, err);
        zkelect_client_destroy(client);
        return zt_exit_for_message(err);
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    int64_t now_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    size_t n = zkelect_participants_count(ps);
    char when[64], age[32], id[4 * ZKELECT_ID_MAX + 8], node[1024];
    char *hosts = client_hosts(client);

    if (o.json) {
        fputs("{\"path\":", stdout);
        zt_json_string(stdout, o.path);
        fputs(",\"hosts\":", stdout);
        if (hosts)
            zt_json_string(stdout, hosts);
        else
            fputs("null", stdout);
        printf(",\"count\":%zu,\"leader\":", n);
        if (n == 0) {
            fputs("null", stdout);
        } else {
            fputs("{\"id\":", stdout);
            zt_json_string(stdout, zkelect_participants_id(ps, 0));
            fputs(",\"node\":", stdout);
            zt_json_string(stdout, zkelect_participants_node(ps, 0));
            printf(",\"token\":%" PRId64 ",\"ctime_ms\":%" PRId64 ",\"age_ms\":%" PRId64 "}",
                   zkelect_participants_token(ps, 0), zkelect_participants_ctime_ms(ps, 0),
                   now_ms - zkelect_participants_ctime_ms(ps, 0));
        }
        fputs(",\"participants\":[", stdout);
        for (size_t i = 0; i < n; i++) {
            printf("%s{\"position\":%zu,\"id\":", i ? "," : "", i);
            zt_json_string(stdout, zkelect_participants_id(ps, i));
            fputs(",\"node\":", stdout);
            zt_json_string(stdout, zkelect_participants_node(ps, i));
            printf(",\"token\":%" PRId64 ",\"ctime_ms\":%" PRId64 ",\"priority\":%d,\"leader\":%s}",
                   zkelect_participants_token(ps, i), zkelect_participants_ctime_ms(ps, i),
                   zkelect_participants_priority(ps, i), i == 0 ? "true" : "false");
        }
        fputs("]}\n", stdout);
    } else if (n == 0) {
        printf("%s: no candidates, no leader\n", o.path);
    } else {
        int64_t ct = zkelect_participants_ctime_ms(ps, 0);
        zt_format_time_ms(ct, when, sizeof when);
        fmt_age(now_ms - ct, age, sizeof age);
        printf("%s: %zu candidate%s\n", o.path, n, n == 1 ? "" : "s");
        zt_escape(zkelect_participants_id(ps, 0), id, sizeof id);
        printf("leader: %s  token %" PRId64 "  node created %s (%s ago; leading at most that "
               "long)\n\n",
               id, zkelect_participants_token(ps, 0), when, age);
        printf("%-4s %-6s %-24s %-20s %-9s %-4s %s\n", "POS", "ROLE", "ID", "TOKEN", "AGE", "PRIO",
               "NODE");
        for (size_t i = 0; i < n; i++) {
            fmt_age(now_ms - zkelect_participants_ctime_ms(ps, i), age, sizeof age);
            zt_escape(zkelect_participants_id(ps, i), id, sizeof id);
            zt_escape(zkelect_participants_node(ps, i), node, sizeof node);
            /* From 0, the leader, as the JSON and zkelect_queue_position. */
            printf("%-4zu %-6s %-24s %-20" PRId64 " %-9s %-4d %s\n", i, i == 0 ? "leader" : "queued",
                   id, zkelect_participants_token(ps, i), age, zkelect_participants_priority(ps, i),
                   node);
        }
    }
    if (!o.json && hosts) {
        zt_escape(hosts, node, sizeof node);
        printf("\nhosts in use: %s\n", node);
    }
    fflush(stdout);
    free(hosts);
    zkelect_participants_destroy(ps);
    zkelect_client_destroy(client);
    return ZT_EXIT_OK;
}

static void observe_usage(FILE *f)
{
    zt_usage(f, ZT_CMD_OBSERVE,
             "Prints the current leader of the election at P, then one line per leader\n"
             "change, until SIGINT or SIGTERM (or N lines with --count):\n"
             "  <local time> LEADER <id> token=<token> node=<node> priority=<0-255>\n"
             "  <local time> NONE\n"
             "--json prints one JSON object per line instead:\n"
             "  {\"time_ns\":..,\"leader\":\"<id>\"|null,\"token\":..,\"node\":\"..\",\"priority\":..}\n"
             "<id> and <node> are escaped (\\xNN; an empty id is \"\"), so one change is one\n"
             "line. Connection trouble is reported on stderr.\n"
             "--prometheus prints one Prometheus exposition of the election as it is now\n"
             "(candidates, leader id and token, the leader's node age) and exits.\n",
             "Exit status: 0 interrupted, --count reached or stdout closed by its reader,\n"
             "1 failure, 2 bad arguments, 3 no connection within the connect timeout,\n"
             "5 permission denied.\n");
}

/* One record, one write: a reader that went away (EPIPE) ends us. Returns 0,
 * or -1 with errno set. */
static int put(FILE *mem, char **buf, size_t *len)
{
    fflush(mem);
    size_t off = 0;
    int rc = 0;
    while (off < *len) {
        ssize_t w = write(STDOUT_FILENO, *buf + off, *len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        off += (size_t)w;
    }
    rewind(mem);
    return rc;
}

/* observe --prometheus: one exposition of the election as it is now. */
static int observe_prometheus(const struct zt_opts *o)
{
    if (o->json || o->count) {
        zt_err("--prometheus prints one exposition: not with --json or --count");
        observe_usage(stderr);
        return ZT_EXIT_USAGE;
    }
    if (!path_ok(o->path)) {
        zt_err("bad election path '%s' (absolute, no trailing '/', no '//')", o->path);
        observe_usage(stderr);
        return ZT_EXIT_USAGE;
    }
    int exit_code = ZT_EXIT_FAILURE;
    zkelect_client_t *client = zt_observer_client(o, &exit_code);
    if (!client) {
        if (exit_code == ZT_EXIT_USAGE)
            observe_usage(stderr);
        return exit_code;
    }
    int rc = zt_await(client, o);
    if (rc >= 0) {
        zkelect_client_destroy(client);
        return rc;
    }
    char err[512] = "";
    zkelect_participants_t *ps = zkelect_client_participants(client, o->path, err, sizeof err);
    if (!ps) {
        zt_err("cannot list %s: %s", o->path, err);
        zkelect_client_destroy(client);
        return zt_exit_for_message(err);
    }
    size_t len = 0;
    char *text = zt_metrics_render_election(o->path, ps, zt_realtime_ns() / 1000000, &len);
    zkelect_participants_destroy(ps);
    zkelect_client_destroy(client);
    if (!text) {
        zt_err("out of memory");
        return ZT_EXIT_FAILURE;
    }
    int bad = fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0;
    free(text);
    return bad ? ZT_EXIT_FAILURE : ZT_EXIT_OK;
}

int zt_cmd_observe(int argc, char **argv)
{
    struct zt_opts o = {0};
    int rc = zt_parse(argc, argv, ZT_CMD_OBSERVE, &o, observe_usage);
    if (rc >= 0)
        return rc;
    if (o.prometheus)
        return observe_prometheus(&o);

    int sfd = zt_signalfd(0);
    if (sfd < 0)
        return ZT_EXIT_FAILURE;
    int exit_code = ZT_EXIT_FAILURE;
    zkelect_client_t *client = zt_observer_client(&o, &exit_code);
    if (!client) {
        if (exit_code == ZT_EXIT_USAGE)
            observe_usage(stderr);
        close(sfd);
        return exit_code;
    }
    char err[512] = "";
    zkelect_observer_t *obs = zkelect_observer_new(client, o.path, err, sizeof err);
    if (!obs) {
        zt_err("%s", err);
        observe_usage(stderr);
        zkelect_client_destroy(client);
        close(sfd);
        return ZT_EXIT_USAGE;
    }
    rc = zt_await(client, &o);
    if (rc >= 0) {
        exit_code = rc;
        goto out;
    }

    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        zt_err("out of memory");
        goto out;
    }
    int64_t printed = 0;
    /* Bounded by the signals, --count, a closed stdout or a final error. */
    for (;;) {
        struct pollfd pfd[3] = {
            {.fd = zkelect_observer_event_fd(obs), .events = POLLIN},
            {.fd = sfd, .events = POLLIN},
            /* POLLERR on a pipe's write end: the reader closed it, so end
             * now rather than at the next leader change. */
            {.fd = STDOUT_FILENO, .events = 0},
        };
        int n = poll(pfd, 3, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            zt_err("poll: %s", strerror(errno));
            break;
        }
        if (pfd[1].revents) {
            exit_code = ZT_EXIT_OK;
            break;
        }
        if (pfd[2].revents & (POLLERR | POLLHUP)) {
            exit_code = ZT_EXIT_OK;
            break;
        }
        int done = 0;
        for (int i = 0; i < 256 && !done; i++) {
            zkelect_event_t *ev = zkelect_observer_next_event(obs, 0);
            if (!ev)
                break;
            int type = zkelect_event_type(ev);
            if (type == ZKELECT_EV_LEADER_CHANGED) {
                const char *id = zkelect_event_id(ev);
                const char *node = zkelect_event_node(ev);
                /* A leader is known by its node: its id may be empty
                 * (Curator's default). */
                int has_leader = *node != '\0';
                int64_t ns = zkelect_event_time_ns(ev);
                if (o.json) {
                    fprintf(mem, "{\"time_ns\":%" PRId64 ",\"leader\":", ns);
                    if (has_leader)
                        zt_json_string(mem, id);
                    else
                        fputs("null", mem);
                    fprintf(mem, ",\"token\":%" PRId64 ",\"node\":", zkelect_event_token(ev));
                    zt_json_string(mem, node);
                    fprintf(mem, ",\"priority\":%d}\n", zkelect_event_priority(ev));
                } else {
                    char when[64], eid[4 * ZKELECT_ID_MAX + 8], enode[1024];
                    zt_format_time_ms(ns / 1000000, when, sizeof when);
                    if (has_leader) {
                        zt_escape(id, eid, sizeof eid);
                        zt_escape(node, enode, sizeof enode);
                        fprintf(mem, "%s LEADER %s token=%" PRId64 " node=%s priority=%d\n", when,
                                eid, zkelect_event_token(ev), enode, zkelect_event_priority(ev));
                    } else {
                        fprintf(mem, "%s NONE\n", when);
                    }
                }
                if (put(mem, &buf, &len) != 0) {
                    if (errno != EPIPE)
                        zt_err("stdout: %s", strerror(errno));
                    exit_code = errno == EPIPE ? ZT_EXIT_OK : ZT_EXIT_FAILURE;
                    done = 2;
                }
                if (!done && o.count && ++printed >= o.count)
                    done = 1;
            } else if (type == ZKELECT_EV_ERROR) {
                int code = zkelect_event_error(ev);
                char msg[2048];
                zt_escape_text(zkelect_event_message(ev), msg, sizeof msg);
                zt_err("%s (%s)", msg, zkelect_err_name(code));
                /* The observer's only error is final (authentication). */
                exit_code = zt_exit_for(code);
                if (exit_code == ZT_EXIT_OK || exit_code == ZT_EXIT_CONNECT)
                    exit_code = ZT_EXIT_FAILURE;
                done = 2;
            } else {
                char msg[2048];
                zt_escape_text(zkelect_event_message(ev), msg, sizeof msg);
                zt_err("%s: %s", zkelect_event_type_name(type), msg);
            }
            zkelect_event_destroy(ev);
        }
        if (done == 1)
            exit_code = ZT_EXIT_OK;
        if (done)
            break;
    }
    fclose(mem);
    free(buf);
out:
    zkelect_observer_destroy(obs);
    zkelect_client_destroy(client);
    close(sfd);
    return exit_code;
}
