/*
 * Command lines: numbers, the options of every command (their table is
 * options.c, generated from gen/cli.toml) and the usage text.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int zt_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* A numeric key's default as the library has it: the tool keeps no copy of
 * the library's defaults (gen/vocabulary.toml holds them). Only memory
 * running out gets 0 here, and the library then refuses the value. */
static int64_t library_default(const char *key)
{
    zkelect_conf_t *conf = zkelect_conf_new();
    char v[32];
    size_t n = sizeof v;
    int64_t out = 0;
    if (conf && zkelect_conf_get(conf, key, v, &n) == ZKELECT_OK)
        zt_parse_i64(v, 0, INT64_MAX, &out);
    zkelect_conf_destroy(conf);
    return out;
}

static int opt_i64(const char *name, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
    if (zt_parse_i64(arg, lo, hi, out) == 0)
        return 0;
    zt_err("%s: expected %" PRId64 "..%" PRId64 ", got '%s'", name, lo, hi, arg);
    return -1;
}

/* A signal by name (USR1, SIGUSR1) or number. KILL and STOP are refused:
 * they are not warnings a command can act on. */
static int opt_signal(const char *name, const char *arg, int *out)
{
    const char *bare = strncasecmp(arg, "SIG", 3) == 0 ? arg + 3 : arg;
    int sig = 0;
    int64_t n;
    if (zt_parse_i64(arg, 1, NSIG - 1, &n) == 0) {
        sig = (int)n;
    } else {
        for (int i = 1; i < NSIG && !sig; i++) {
            const char *abbrev = sigabbrev_np(i);
            if (abbrev && strcasecmp(abbrev, bare) == 0)
                sig = i;
        }
    }
    if (sig == SIGKILL || sig == SIGSTOP) {
        zt_err("%s: %s cannot be caught: name a signal the command handles, such as USR1",
               name, arg);
        return -1;
    }
    if (!sig) {
        zt_err("%s: expected a signal name such as USR1 or a number 1..%d, got '%s'", name,
               NSIG - 1, arg);
        return -1;
    }
    *out = sig;
    return 0;
}

int zt_parse(int argc, char **argv, enum zt_cmd cmd, struct zt_opts *o,
             void (*usage)(FILE *))
{
    const struct zt_command_spec *command = &zt_commands[cmd];

    int64_t count_max = o->count_max > 0 ? o->count_max : INT64_MAX;
    memset(o, 0, sizeof *o);
    o->hosts = getenv("ZKELECT_CONNECT");
    o->node = getenv("ZKELECT_NODE");
    o->token = getenv("ZKELECT_TOKEN");
    o->session_ms = library_default("zk.session.timeout.ms");
    o->connect_ms = library_default("zk.connect.timeout.ms");
    o->grace_ms = ZT_GRACE_DEFAULT;
    o->metrics_interval_ms = ZT_METRICS_INTERVAL_MS_DEFAULT;
    o->timeout_ms = ZT_TIMEOUT_DEFAULT;
    o->priority = -1;
    o->count_max = count_max;

    /* 0, not 1: glibc then forgets where a previous scan stopped inside a
     * cluster such as -hh, which it would otherwise resume in this argv. */
    optind = 0;
    opterr = 0;
    int c, at = 1;
    const char *last_value = NULL;
    while ((c = getopt_long(argc, argv, ZT_SHORT_OPTIONS, command->getopt, NULL)) != -1) {
        int bad = 0;
        last_value = optarg;
        /* The argument at fault: optind moves past it, unless the fault is
         * inside a cluster of short options (-xh), which stays current. */
        const char *culprit = optind == at && optind < argc ? argv[optind] : argv[optind - 1];
        at = optind;
        switch (c) {
        case ZT_OPT_CONNECT: o->hosts = optarg; break;
        case ZT_OPT_PATH: o->path = optarg; break;
        case ZT_OPT_GROUP: o->group = optarg; break;
        case ZT_OPT_ID: o->id = optarg; break;
        case ZT_OPT_AUTH_FILE: o->auth_file = optarg; break;
        case ZT_OPT_TO: o->to = optarg; break;
        case ZT_OPT_NODE: o->node = optarg; break;
        case ZT_OPT_FENCING_TOKEN: o->token = optarg; break;
        case ZT_OPT_PRIORITY:
            bad = opt_i64("--priority", optarg, ZT_PRIORITY_MIN, ZT_PRIORITY_MAX, &o->priority);
            break;
        case ZT_OPT_TIMEOUT:
            bad = opt_i64("--timeout", optarg, ZT_TIMEOUT_MIN, ZT_TIMEOUT_MAX, &o->timeout_ms);
            break;
        case ZT_OPT_SESSION_TIMEOUT_MS:
            bad = opt_i64("--session-timeout-ms", optarg, ZT_SESSION_TIMEOUT_MS_MIN,
                          ZT_SESSION_TIMEOUT_MS_MAX, &o->session_ms);
            break;
        case ZT_OPT_CONNECT_TIMEOUT_MS:
            bad = opt_i64("--connect-timeout-ms", optarg, ZT_CONNECT_TIMEOUT_MS_MIN,
                          ZT_CONNECT_TIMEOUT_MS_MAX, &o->connect_ms);
            break;
        case ZT_OPT_GRACE:
            bad = opt_i64("--grace", optarg, ZT_GRACE_MIN, ZT_GRACE_MAX, &o->grace_ms);
            break;
        case ZT_OPT_COUNT: bad = opt_i64("--count", optarg, ZT_COUNT_MIN, count_max, &o->count); break;
        case ZT_OPT_FIRST_ID:
            bad = opt_i64("--first-id", optarg, INT64_MIN / 2, INT64_MAX / 2, &o->first_id);
            o->have_first = 1;
            break;
        case ZT_OPT_METRICS_LISTEN: o->metrics_listen = optarg; break;
        case ZT_OPT_METRICS_TEXTFILE: o->metrics_textfile = optarg; break;
        case ZT_OPT_METRICS_INTERVAL_MS:
            bad = opt_i64("--metrics-interval-ms", optarg, ZT_METRICS_INTERVAL_MS_MIN,
                          ZT_METRICS_INTERVAL_MS_MAX, &o->metrics_interval_ms);
            break;
        case ZT_OPT_LEASE_LOW_SIGNAL:
            bad = opt_signal("--lease-low-signal", optarg, &o->lease_low_signal);
            break;
        case ZT_OPT_JSON: o->json = 1; break;
        case ZT_OPT_PROMETHEUS: o->prometheus = 1; break;
        case ZT_OPT_ONCE: o->once = 1; break;
        case ZT_OPT_QUIET: o->quiet = 1; break;
        case ZT_OPT_SHARED_SESSION: o->shared = 1; break;
        case ZT_OPT_VERBOSE: o->verbose = 1; break;
        case ZT_OPT_SET: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                zt_err("--set: expected KEY=VALUE, got '%s'", optarg);
                bad = 1;
            } else if (o->nsettings >= ZT_MAX_SETTINGS) {
                zt_err("--set: at most %d settings", ZT_MAX_SETTINGS);
                bad = 1;
            } else {
                o->settings[o->nsettings++] = optarg;
            }
            break;
        }
        case ZT_OPT_HELP: usage(stdout); return ZT_EXIT_OK;
        default:
            zt_err("unknown option or missing value: %s", culprit);
            bad = 1;
        }
        if (bad) {
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
    }
    if (command->takes_cmd) {
        /* "--" ends the options only when it was not an option's value
         * (--id -- CMD gives no id: the command does not start at CMD). */
        if (optind < argc && (strcmp(argv[optind - 1], "--") != 0 || argv[optind - 1] == last_value)) {
            zt_err("the command must follow '--'");
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
        if (optind >= argc) {
            zt_err("no command given (zkelect run [options] -- CMD [ARGS...])");
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
        o->cmd = argv + optind;
    } else if (command->takes_operands) {
        if (optind >= argc) {
            zt_err("nothing to do: no operand given");
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
        o->operands = argv + optind;
        o->noperands = argc - optind;
    } else if (optind < argc) {
        zt_err("unexpected argument: %s", argv[optind]);
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    if (command->needs_target && (!o->hosts || !*o->hosts || !o->path)) {
        zt_err("--connect (or ZKELECT_CONNECT) and --path are required");
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    return -1;
}

void zt_usage(FILE *f, enum zt_cmd cmd, const char *about, const char *exit_status)
{
    /* After an error the one line that said what is wrong must stay
     * visible: stderr gets the synopsis and where the rest is, --help
     * (stdout) the whole page. */
    if (f == stderr) {
        fputs(zt_commands[cmd].synopsis, f);
        fprintf(f, "Try 'zkelect %s --help' for the options.\n", zt_commands[cmd].name);
        return;
    }
    fputs(zt_commands[cmd].synopsis, f);
    fputs("\n", f);
    fputs(about, f);
    fputs("\noptions:\n", f);
    fputs(zt_commands[cmd].options, f);
    fputs("\n", f);
    fputs(exit_status, f);
}
