#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *zt_prog = "zkelect";

void zt_err(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    zt_writeln(STDERR_FILENO, "%s: %s", zt_prog, msg);
}

int zt_writeln(int fd, const char *fmt, ...)
{
    char small[1024];
    char *buf = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n >= sizeof small - 1) {
        /* Rare long line (an ERROR message): format again into the heap
         * rather than cut it, the line must stay one write. */
        buf = malloc((size_t)n + 2);
        if (!buf)
            return -1;
        va_start(ap, fmt);
        vsnprintf(buf, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    buf[n++] = '\n';
    size_t off = 0;
    int rc = 0;
    /* Bounded: each pass either writes something or fails. */
    while (off < (size_t)n) {
        ssize_t w = write(fd, buf + off, (size_t)n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            break;
        }
        off += (size_t)w;
    }
    if (buf != small)
        free(buf);
    return rc;
}

int64_t zt_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t zt_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

int zt_signalfd(int with_sigchld)
{
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    if (with_sigchld)
        sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        zt_err("signalfd: %s", strerror(errno));
    return sfd;
}

int zt_opt_i64(const char *name, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
    if (zt_parse_i64(arg, lo, hi, out) == 0)
        return 0;
    zt_err("%s: expected %" PRId64 "..%" PRId64 ", got '%s'", name, lo, hi, arg);
    return -1;
}

int zt_settings_add(struct zt_settings *s, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        zt_err("--set: expected KEY=VALUE, got '%s'", kv);
        return -1;
    }
    if (s->n >= ZT_MAX_SETTINGS) {
        zt_err("--set: at most %d settings", ZT_MAX_SETTINGS);
        return -1;
    }
    s->kv[s->n++] = kv;
    return 0;
}

int zt_settings_apply(const struct zt_settings *s, zkelect_conf_t *conf)
{
    for (int i = 0; i < s->n; i++) {
        char key[128], err[512] = "";
        const char *eq = strchr(s->kv[i], '=');
        size_t klen = (size_t)(eq - s->kv[i]);
        if (klen >= sizeof key) {
            zt_err("--set: key too long in '%s'", s->kv[i]);
            return -1;
        }
        memcpy(key, s->kv[i], klen);
        key[klen] = '\0';
        if (zkelect_conf_set(conf, key, eq + 1, err, sizeof err) != 0) {
            zt_err("--set %s: %s", s->kv[i], err);
            return -1;
        }
    }
    return 0;
}

zkelect_conf_t *zt_make_conf(const char *hosts, int64_t session_timeout_ms,
                             int64_t connect_timeout_ms)
{
    char err[512] = "";
    char num[32];
    zkelect_conf_t *conf = zkelect_conf_new();
    if (!conf) {
        zt_err("out of memory");
        return NULL;
    }
    if (zkelect_conf_set(conf, "zk.hosts", hosts, err, sizeof err) != 0)
        goto bad;
    /* The library leaves libzookeeper's own (chatty, INFO) log alone unless
     * told; a command-line tool keeps stderr for its own one-line errors. */
    const char *zk_log = getenv("ZKELECT_ZK_LOG_LEVEL");
    if (zkelect_conf_set(conf, "zk.log.level", zk_log && *zk_log ? zk_log : "none", err,
                         sizeof err) != 0)
        goto bad;
    if (session_timeout_ms > 0) {
        snprintf(num, sizeof num, "%" PRId64, session_timeout_ms);
        if (zkelect_conf_set(conf, "zk.session.timeout.ms", num, err, sizeof err) != 0)
            goto bad;
    }
    if (connect_timeout_ms > 0) {
        snprintf(num, sizeof num, "%" PRId64, connect_timeout_ms);
        if (zkelect_conf_set(conf, "zk.connect.timeout.ms", num, err, sizeof err) != 0)
            goto bad;
    }
    return conf;
bad:
    zt_err("%s", err);
    zkelect_conf_destroy(conf);
    return NULL;
}

zkelect_client_t *zt_connect(const zkelect_conf_t *conf, const char *hosts,
                             int64_t connect_timeout_ms, int *exit_code)
{
    char err[512] = "";
    zkelect_client_t *client = zkelect_client_new(conf, err, sizeof err);
    if (!client) {
        zt_err("cannot start a ZooKeeper client for %s: %s", hosts, err);
        *exit_code = ZT_EXIT_FAILURE;
        return NULL;
    }
    int rc = zkelect_client_await_connected(client, (int)connect_timeout_ms);
    if (rc != 0) {
        if (rc == ZKELECT_ETIMEDOUT)
            zt_err("cannot connect to ZooKeeper at %s within %" PRId64 " ms", hosts,
                   connect_timeout_ms);
        else
            zt_err("cannot connect to ZooKeeper at %s: %s", hosts, zkelect_strerror(rc));
        *exit_code = rc == ZKELECT_ETIMEDOUT ? ZT_EXIT_CONNECT : ZT_EXIT_FAILURE;
        zkelect_client_destroy(client);
        return NULL;
    }
    return client;
}

void zt_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void zt_format_time_ms(int64_t epoch_ms, char *buf, size_t len)
{
    time_t secs = (time_t)(epoch_ms / 1000);
    struct tm tm;
    char base[64];
    if (!localtime_r(&secs, &tm) || !strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(buf, len, "%" PRId64, epoch_ms);
        return;
    }
    char zone[16] = "";
    strftime(zone, sizeof zone, "%z", &tm);
    snprintf(buf, len, "%s.%03d%s", base, (int)(epoch_ms % 1000), zone);
}
