/*
 * The one connect helper of the zkelect tool: options to a client, and the
 * wait for its session. Apart from parse.c, so that the option parser is
 * fuzzed (fuzz/fuzz_cli.cpp) without starting sessions.
 */
#define _GNU_SOURCE
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Connecting ----------------------------------------------------------- */

/* Credentials stay off the command line (ps shows argv to every user): a
 * file or the environment. Returns 0 with *out set (NULL when none given),
 * -1 after printing why. */
static int read_auth(const struct zt_opts *o, char *buf, size_t len, const char **out)
{
    *out = NULL;
    if (o->auth_file) {
        int fd = open(o->auth_file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            zt_err("--auth-file %s: %s", o->auth_file, strerror(errno));
            return -1;
        }
        ssize_t n = read(fd, buf, len - 1);
        close(fd);
        if (n < 0 || (size_t)n >= len - 1) {
            zt_err("--auth-file %s: %s", o->auth_file,
                   n < 0 ? strerror(errno) : "longer than 4 KiB");
            return -1;
        }
        buf[n] = '\0';
        buf[strcspn(buf, "\r\n")] = '\0';
        *out = buf;
        return 0;
    }
    const char *env = getenv("ZKELECT_AUTH");
    if (env && *env)
        *out = env;
    return 0;
}

/* One log line of the library (asked for with --verbose), on stderr. */
static void print_log(int level, const char *message, void *opaque)
{
    (void)level;
    (void)opaque;
    fprintf(stderr, "zkelect: zk: %s\n", message);
}

zkelect_conf_t *zt_conf(const struct zt_opts *o, int *exit_code)
{
    char err[512] = "";
    char num[32], authbuf[4096];
    /* The library's messages name the key; `what` adds where a value came
     * from when the key alone would not say. */
    const char *what = NULL;
    zkelect_conf_t *conf = zkelect_conf_new();
    if (!conf) {
        zt_err("out of memory");
        *exit_code = ZT_EXIT_FAILURE;
        return NULL;
    }
    if (o->hosts && zkelect_conf_set(conf, "zk.hosts", o->hosts, err, sizeof err) != 0)
        goto bad;
    snprintf(num, sizeof num, "%" PRId64, o->session_ms);
    if (zkelect_conf_set(conf, "zk.session.timeout.ms", num, err, sizeof err) != 0)
        goto bad;
    snprintf(num, sizeof num, "%" PRId64, o->connect_ms);
    if (zkelect_conf_set(conf, "zk.connect.timeout.ms", num, err, sizeof err) != 0)
        goto bad;
    snprintf(num, sizeof num, "%" PRId64, o->priority);
    if (o->priority >= 0 && zkelect_conf_set(conf, "election.priority", num, err, sizeof err) != 0)
        goto bad;
    const char *auth = NULL;
    if (read_auth(o, authbuf, sizeof authbuf, &auth) != 0) {
        zkelect_conf_destroy(conf);
        *exit_code = ZT_EXIT_USAGE;
        return NULL;
    }
    what = o->auth_file ? "--auth-file" : "ZKELECT_AUTH";
    if (auth && zkelect_conf_set(conf, "zk.auth", auth, err, sizeof err) != 0)
        goto bad;
    explicit_bzero(authbuf, sizeof authbuf);
    /* run (the one command with a CMD): a transfer's target is elected only
     * once CMD's whole tree is gone, within --grace and a second for the
     * SIGKILL and the release (run.c); --set may say otherwise. */
    if (o->cmd) {
        int64_t drain = o->grace_ms + 1000;
        snprintf(num, sizeof num, "%" PRId64, drain < 86400000 ? drain : 86400000);
        if (zkelect_conf_set(conf, "transfer.drain.ms", num, err, sizeof err) != 0)
            goto bad;
    }
    /* A signal asked for on LEASE_LOW needs the warning on (off by default);
     * --set below may still choose another mark. */
    if (o->lease_low_signal &&
        zkelect_conf_set(conf, "lease.warn.percent", "50", err, sizeof err) != 0)
        goto bad;
    for (int i = 0; i < o->nsettings; i++) {
        char key[128];
        const char *eq = strchr(o->settings[i], '=');
        size_t klen = (size_t)(eq - o->settings[i]);
        if (klen >= sizeof key) {
            zt_err("--set: key too long in '%s'", o->settings[i]);
            zkelect_conf_destroy(conf);
            *exit_code = ZT_EXIT_USAGE;
            return NULL;
        }
        memcpy(key, o->settings[i], klen);
        key[klen] = '\0';
        what = "--set";
        if (zkelect_conf_set(conf, key, eq + 1, err, sizeof err) != 0)
            goto bad;
    }
    return conf;
bad:
    explicit_bzero(authbuf, sizeof authbuf);
    if (what)
        zt_err("%s: %s", what, err);
    else
        zt_err("%s", err);
    zkelect_conf_destroy(conf);
    *exit_code = ZT_EXIT_USAGE;
    return NULL;
}

static zkelect_client_t *client_of(zkelect_conf_t *conf, const struct zt_opts *o, int *exit_code);

zkelect_client_t *zt_client(const struct zt_opts *o, int *exit_code)
{
    zkelect_conf_t *conf = zt_conf(o, exit_code);
    if (!conf)
        return NULL;
    return client_of(conf, o, exit_code);
}

zkelect_client_t *zt_observer_client(const struct zt_opts *o, int *exit_code)
{
    zkelect_conf_t *conf = zt_conf(o, exit_code);
    if (!conf)
        return NULL;
    /* It never holds a node: nothing of it for a crash guard to close, so
     * no guard process for it, unless --set asks for one. */
    int named = 0;
    for (int i = 0; i < o->nsettings; i++)
        named |= strncmp(o->settings[i], "crash.guard=", strlen("crash.guard=")) == 0;
    char err[256];
    if (!named && zkelect_conf_set(conf, "crash.guard", "off", err, sizeof err) != 0) {
        zt_err("%s", err);
        zkelect_conf_destroy(conf);
        *exit_code = ZT_EXIT_FAILURE;
        return NULL;
    }
    return client_of(conf, o, exit_code);
}

static zkelect_client_t *client_of(zkelect_conf_t *conf, const struct zt_opts *o, int *exit_code)
{
    /* The library's log (libzookeeper's own) goes nowhere unless asked for:
     * --verbose prints it at info level, ZKELECT_ZK_LOG_LEVEL at any. */
    const char *zk_log = getenv("ZKELECT_ZK_LOG_LEVEL");
    int level = o->verbose ? ZKELECT_LOG_INFO : ZKELECT_LOG_NONE;
    if (zk_log && *zk_log) {
        static const char *const names[] = {"none", "error", "warn", "info", "debug"};
        level = -1;
        for (int i = 0; i < 5; i++)
            if (strcmp(zk_log, names[i]) == 0) level = i;
        if (level < 0) {
            zt_err("ZKELECT_ZK_LOG_LEVEL must be none, error, warn, info or debug");
            zkelect_conf_destroy(conf);
            *exit_code = ZT_EXIT_USAGE;
            return NULL;
        }
    }
    zkelect_set_log_cb(level, print_log, NULL);
    char err[512] = "";
    zkelect_client_t *client = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!client) {
        /* A server that refused our TLS certificates, or whose certificate
         * we refused, is a denial (ZKELECT_EAUTH, named with its cause);
         * everything else that makes client_new fail is in what we were
         * given (a malformed connect string, an unreadable key): a usage
         * error. */
        const char *last = zkelect_last_error();
        if (zt_exit_for_message(last) == ZT_EXIT_DENIED) {
            zt_err("cannot start a ZooKeeper client for %s: %s", o->hosts, last);
            *exit_code = ZT_EXIT_DENIED;
            return NULL;
        }
        zt_err("cannot start a ZooKeeper client for %s: %s", o->hosts, err);
        *exit_code = ZT_EXIT_USAGE;
        return NULL;
    }
    return client;
}

int zt_exit_for(int code)
{
    switch (code) {
    case ZKELECT_OK: return ZT_EXIT_OK;
    case ZKELECT_EAUTH: return ZT_EXIT_DENIED;
    case ZKELECT_ETIMEDOUT: return ZT_EXIT_CONNECT;
    case ZKELECT_EINVAL: return ZT_EXIT_USAGE;
    default: return ZT_EXIT_FAILURE;
    }
}

int zt_check_margin(const zkelect_conf_t *conf)
{
    char v[64] = "", t[64] = "";
    size_t vn = sizeof v, tn = sizeof t;
    if (zkelect_conf_get(conf, "lease.margin.ms", v, &vn) != 0 || !*v)
        return -1;
    int64_t m, session;
    if (zt_parse_i64(v, ZT_MARGIN_MIN_MS, ZT_MARGIN_MAX_MS, &m) != 0) {
        zt_err("zkelect run needs lease.margin.ms from %d to %d, not %s: half of it is how "
               "long the command may outlive a confirmed lease",
               ZT_MARGIN_MIN_MS, ZT_MARGIN_MAX_MS, v);
        return ZT_EXIT_USAGE;
    }
    /* The library's own check, made when a client is created: config
     * creates none, and says the same. */
    if (zkelect_conf_get(conf, "zk.session.timeout.ms", t, &tn) == 0 &&
        zt_parse_i64(t, 1, INT64_MAX / 4, &session) == 0 && 2 * m >= session) {
        zt_err("lease.margin.ms (%" PRId64 ") must be below half of zk.session.timeout.ms (%" PRId64
               "): no lease would be left",
               m, session);
        return ZT_EXIT_USAGE;
    }
    return -1;
}

int zt_exit_for_message(const char *msg)
{
    /* The library's messages begin with the code's name. Only a denial has
     * an exit status of its own here: whatever else stopped a query, it
     * could not be asked. */
    static const char auth[] = "ZKELECT_EAUTH";
    size_t n = sizeof auth - 1;
    if (msg && !strncmp(msg, auth, n) && !isalnum((unsigned char)msg[n]) && msg[n] != '_')
        return ZT_EXIT_DENIED;
    return ZT_EXIT_FAILURE;
}

int zt_crash_guarded(zkelect_client_t *client)
{
    char err[256];
    zkelect_stats_t *st = zkelect_client_stats(client, err, sizeof err);
    if (!st)
        return -1;
    json_object *doc = json_tokener_parse(zkelect_stats_json(st)), *v;
    int got = -1;
    if (doc && json_object_object_get_ex(doc, "crash_guarded", &v))
        got = json_object_get_boolean(v) ? 1 : 0;
    json_object_put(doc);
    zkelect_stats_destroy(st);
    return got;
}

int zt_await(zkelect_client_t *client, const struct zt_opts *o)
{
    return zt_await_for(client, o, o->connect_ms);
}

int zt_await_for(zkelect_client_t *client, const struct zt_opts *o, int64_t wait_ms)
{
    int rc = zkelect_client_await_connected(client, (int)(wait_ms < 1 ? 1 : wait_ms));
    if (rc == 0)
        return -1;
    if (rc == ZKELECT_ETIMEDOUT && strstr(zkelect_last_error(), "answers in TLS"))
        /* The port speaks TLS: the library's message says which and what to set. */
        zt_err("cannot connect to ZooKeeper at %s within %" PRId64 " ms: %s", o->hosts,
               o->connect_ms, zkelect_last_error() + strlen("ZKELECT_ETIMEDOUT: "));
    else if (rc == ZKELECT_ETIMEDOUT)
        zt_err("cannot connect to ZooKeeper at %s within %" PRId64 " ms", o->hosts,
               o->connect_ms);
    else if (rc == ZKELECT_EAUTH)
        /* The message names what the servers refused (no secret in it). */
        zt_err("cannot connect to ZooKeeper at %s: %s", o->hosts, zkelect_last_error());
    else
        zt_err("cannot connect to ZooKeeper at %s: %s", o->hosts, zkelect_strerror(rc));
    return rc == ZKELECT_EINVAL ? ZT_EXIT_FAILURE : zt_exit_for(rc);
}
