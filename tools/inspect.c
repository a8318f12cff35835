/*
 * zkelect status / zkelect observe: look at an election without taking part.
 */
#define _GNU_SOURCE
#include "common.h"

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

struct common_opts {
    const char *hosts;
    const char *path;
    int json;
    int64_t session_ms, connect_ms, count;
};

/* Parses the options status and observe share. Returns -1 to go on, or an
 * exit code. */
static int parse(int argc, char **argv, struct common_opts *o, int with_count,
                 void (*usage)(FILE *))
{
    static const struct option opts[] = {
        {"connect", required_argument, 0, 'c'},
        {"path", required_argument, 0, 'p'},
        {"json", no_argument, 0, 'j'},
        {"session-timeout-ms", required_argument, 0, 't'},
        {"connect-timeout-ms", required_argument, 0, 'C'},
        {"count", required_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    o->hosts = getenv("ZKELECT_CONNECT");
    o->path = NULL;
    o->json = 0;
    o->session_ms = 10000;
    o->connect_ms = ZT_DEFAULT_CONNECT_TIMEOUT_MS;
    o->count = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': o->hosts = optarg; break;
        case 'p': o->path = optarg; break;
        case 'j': o->json = 1; break;
        case 't':
            if (zt_parse_i64(optarg, 1000, 3600000, &o->session_ms)) {
                zt_err("--session-timeout-ms: expected 1000..3600000, got '%s'", optarg);
                usage(stderr);
                return ZT_EXIT_USAGE;
            }
            break;
        case 'C':
            if (zt_parse_i64(optarg, 1, 3600000, &o->connect_ms)) {
                zt_err("--connect-timeout-ms: expected 1..3600000, got '%s'", optarg);
                usage(stderr);
                return ZT_EXIT_USAGE;
            }
            break;
        case 'n':
            if (!with_count || zt_parse_i64(optarg, 1, INT64_MAX, &o->count)) {
                zt_err(with_count ? "--count: expected a positive integer, got '%s'"
                                  : "unknown option --count%s",
                       with_count ? optarg : "");
                usage(stderr);
                return ZT_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return ZT_EXIT_OK;
        default:
            zt_err("unknown option or missing value: %s", argv[optind - 1]);
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        zt_err("unexpected argument: %s", argv[optind]);
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    if (!o->hosts || !*o->hosts || !o->path) {
        zt_err("--connect (or ZKELECT_CONNECT) and --path are required");
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    return -1;
}

/* The library checks paths when a handle is made; status makes none, so
 * catch the obvious mistakes here, before any connection attempt. */
static int path_ok(const char *p)
{
    size_t n = strlen(p);
    return n >= 2 && p[0] == '/' && p[n - 1] != '/' && !strstr(p, "//");
}

static void status_usage(FILE *f)
{
    fputs("usage: zkelect status --connect HOSTS --path P [--json]\n"
          "                      [--session-timeout-ms MS] [--connect-timeout-ms MS]\n"
          "\n"
          "Lists the candidates of the election at P in queue order (the leader\n"
          "first) with their ids, fencing tokens and node ages. The leader's node age\n"
          "bounds from above how long it has led. --json prints one JSON object.\n"
          "\n"
          "Exit status: 0 shown (also with no candidates), 1 ZooKeeper could not be\n"
          "asked, 2 bad arguments, 3 no connection within the connect timeout.\n",
          f);
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

int zt_cmd_status(int argc, char **argv)
{
    struct common_opts o;
    int rc = parse(argc, argv, &o, 0, status_usage);
    if (rc >= 0)
        return rc;
    if (!path_ok(o.path)) {
        zt_err("bad election path '%s' (absolute, no trailing '/', no '//')", o.path);
        status_usage(stderr);
        return ZT_EXIT_USAGE;
    }
    zkelect_conf_t *conf = zt_make_conf(o.hosts, o.session_ms, o.connect_ms);
    if (!conf)
        return ZT_EXIT_USAGE;
    int exit_code = ZT_EXIT_FAILURE;
    zkelect_client_t *client = zt_connect(conf, o.hosts, o.connect_ms, &exit_code);
    zkelect_conf_destroy(conf);
    if (!client)
        return exit_code;

    char err[512] = "";
    zkelect_participants_t *ps = zkelect_client_participants(client, o.path, err, sizeof err);
    if (!ps) {
        zt_err("cannot list %s: %s", o.path, err);
        zkelect_client_destroy(client);
        return ZT_EXIT_FAILURE;
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    int64_t now_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    size_t n = zkelect_participants_count(ps);
    char when[64], age[32];

    if (o.json) {
        fputs("{\"path\":", stdout);
        zt_json_string(stdout, o.path);
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
            printf(",\"token\":%" PRId64 ",\"ctime_ms\":%" PRId64 ",\"leader\":%s}",
                   zkelect_participants_token(ps, i), zkelect_participants_ctime_ms(ps, i),
                   i == 0 ? "true" : "false");
        }
        fputs("]}\n", stdout);
    } else if (n == 0) {
        printf("%s: no candidates, no leader\n", o.path);
    } else {
        int64_t ct = zkelect_participants_ctime_ms(ps, 0);
        zt_format_time_ms(ct, when, sizeof when);
        fmt_age(now_ms - ct, age, sizeof age);
        printf("%s: %zu candidate%s\n", o.path, n, n == 1 ? "" : "s");
        printf("leader: %s  token %" PRId64 "  node created %s (%s ago; leading at most that "
               "long)\n\n",
               zkelect_participants_id(ps, 0), zkelect_participants_token(ps, 0), when, age);
        printf("%-4s %-6s %-24s %-20s %-9s %s\n", "POS", "ROLE", "ID", "TOKEN", "AGE", "NODE");
        for (size_t i = 0; i < n; i++) {
            fmt_age(now_ms - zkelect_participants_ctime_ms(ps, i), age, sizeof age);
            printf("%-4zu %-6s %-24s %-20" PRId64 " %-9s %s\n", i + 1, i == 0 ? "leader" : "queued",
                   zkelect_participants_id(ps, i), zkelect_participants_token(ps, i), age,
                   zkelect_participants_node(ps, i));
        }
    }
    fflush(stdout);
    zkelect_participants_destroy(ps);
    zkelect_client_destroy(client);
    return ZT_EXIT_OK;
}

static void observe_usage(FILE *f)
{
    fputs("usage: zkelect observe --connect HOSTS --path P [--json] [--count N]\n"
          "                       [--session-timeout-ms MS] [--connect-timeout-ms MS]\n"
          "\n"
          "Prints the current leader of the election at P, then one line per leader\n"
          "change, until SIGINT or SIGTERM (or N lines with --count):\n"
          "  <local time> LEADER <id> token=<token> node=<node>\n"
          "  <local time> NONE\n"
          "--json prints one JSON object per line instead:\n"
          "  {\"time_ns\":..,\"leader\":\"<id>\"|null,\"token\":..,\"node\":\"..\"}\n"
          "Connection trouble is reported on stderr.\n"
          "\n"
          "Exit status: 0 interrupted or --count reached, 1 failure, 2 bad arguments,\n"
          "3 no connection within the connect timeout.\n",
          f);
}

int zt_cmd_observe(int argc, char **argv)
{
    struct common_opts o;
    int rc = parse(argc, argv, &o, 1, observe_usage);
    if (rc >= 0)
        return rc;

    int sfd = zt_signalfd(0);
    if (sfd < 0) {
        return ZT_EXIT_FAILURE;
    }

    zkelect_conf_t *conf = zt_make_conf(o.hosts, o.session_ms, o.connect_ms);
    if (!conf) {
        close(sfd);
        return ZT_EXIT_USAGE;
    }
    char err[512] = "";
    int exit_code = ZT_EXIT_FAILURE;
    zkelect_client_t *client = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!client) {
        zt_err("cannot start a ZooKeeper client for %s: %s", o.hosts, err);
        close(sfd);
        return ZT_EXIT_USAGE;
    }
    zkelect_observer_t *obs = zkelect_observer_new(client, o.path, err, sizeof err);
    if (!obs) {
        zt_err("%s", err);
        observe_usage(stderr);
        zkelect_client_destroy(client);
        close(sfd);
        return ZT_EXIT_USAGE;
    }
    rc = zkelect_client_await_connected(client, (int)o.connect_ms);
    if (rc != 0) {
        zt_err("cannot connect to ZooKeeper at %s%s%s", o.hosts,
               rc == ZKELECT_ETIMEDOUT ? " within the connect timeout" : ": ",
               rc == ZKELECT_ETIMEDOUT ? "" : zkelect_strerror(rc));
        exit_code = rc == ZKELECT_ETIMEDOUT ? ZT_EXIT_CONNECT : ZT_EXIT_FAILURE;
        goto out;
    }

    int64_t printed = 0;
    for (;;) {
        struct pollfd pfd[2] = {
            {.fd = zkelect_observer_event_fd(obs), .events = POLLIN},
            {.fd = sfd, .events = POLLIN},
        };
        int n = poll(pfd, 2, -1);
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
        int done = 0;
        for (int i = 0; i < 256 && !done; i++) {
            zkelect_event_t *ev = zkelect_observer_next_event(obs, 0);
            if (!ev)
                break;
            int type = zkelect_event_type(ev);
            if (type == ZKELECT_EV_LEADER_CHANGED) {
                const char *id = zkelect_event_id(ev);
                int64_t ns = zkelect_event_time_ns(ev);
                if (o.json) {
                    printf("{\"time_ns\":%" PRId64 ",\"leader\":", ns);
                    if (*id)
                        zt_json_string(stdout, id);
                    else
                        fputs("null", stdout);
                    printf(",\"token\":%" PRId64 ",\"node\":", zkelect_event_token(ev));
                    zt_json_string(stdout, zkelect_event_node(ev));
                    fputs("}\n", stdout);
                } else {
                    char when[64];
                    zt_format_time_ms(ns / 1000000, when, sizeof when);
                    if (*id)
                        printf("%s LEADER %s token=%" PRId64 " node=%s\n", when, id,
                               zkelect_event_token(ev), zkelect_event_node(ev));
                    else
                        printf("%s NONE\n", when);
                }
                fflush(stdout);
                if (o.count && ++printed >= o.count)
                    done = 1;
            } else if (type == ZKELECT_EV_ERROR) {
                zt_err("%s (%s)", zkelect_event_message(ev),
                       zkelect_err_name(zkelect_event_error(ev)));
            } else {
                zt_err("%s: %s", zkelect_event_type_name(type), zkelect_event_message(ev));
            }
            zkelect_event_destroy(ev);
        }
        if (done) {
            exit_code = ZT_EXIT_OK;
            break;
        }
    }
out:
    zkelect_observer_destroy(obs);
    zkelect_client_destroy(client);
    close(sfd);
    return exit_code;
}
