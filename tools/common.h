/*
 * Shared pieces of the zkelect command-line tool: exit codes, option
 * helpers, clocks and line output.
 */
#ifndef ZKELECT_TOOL_COMMON_H
#define ZKELECT_TOOL_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <zkelect/zkelect.h>

/* Exit codes. Documented in docs/zkelect.1; scripts depend on them. */
enum {
    ZT_EXIT_OK = 0,
    ZT_EXIT_FAILURE = 1,   /* anything not listed below */
    ZT_EXIT_USAGE = 2,     /* bad arguments */
    ZT_EXIT_CONNECT = 3,   /* ZooKeeper not reachable within the connect timeout */
    ZT_EXIT_LOST = 4       /* run --once: leadership lost */
};

/* Default for how long a subcommand waits for its first connection. */
#define ZT_DEFAULT_CONNECT_TIMEOUT_MS 15000

extern const char *zt_prog; /* "zkelect <subcommand>", for messages */

int zt_cmd_candidate(int argc, char **argv);
int zt_cmd_run(int argc, char **argv);
int zt_cmd_status(int argc, char **argv);
int zt_cmd_observe(int argc, char **argv);

/* One-line error on stderr, prefixed with zt_prog. */
void zt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write one complete line (a '\n' is appended) to fd with as few write(2)
 * calls as the kernel allows, so lines of one process never interleave.
 * Returns 0 or -1 (errno set). */
int zt_writeln(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int64_t zt_realtime_ns(void);
int64_t zt_monotonic_ms(void);

/* Strict integer parse of a whole string into [lo, hi]. 0 ok, -1 bad. */
int zt_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Build a conf with hosts and (when > 0) session and connect timeouts.
 * NULL on failure, with a message already printed. */
/* Ignores SIGPIPE, blocks SIGTERM, SIGINT, SIGHUP (and SIGCHLD when asked)
 * before the library starts its threads, so they inherit the mask and the
 * signals arrive only through the returned signalfd. -1 after printing why. */
int zt_signalfd(int with_sigchld);

/* Parses option name's value arg into *out within [lo, hi]; prints
 * "name: expected lo..hi, got 'arg'" and returns -1 when it does not fit. */
int zt_opt_i64(const char *name, const char *arg, int64_t lo, int64_t hi, int64_t *out);

/* Library options from repeated --set KEY=VALUE, applied after the others. */
#define ZT_MAX_SETTINGS 16
struct zt_settings {
    const char *kv[ZT_MAX_SETTINGS];
    int n;
};
/* Records one --set argument; returns 0, or -1 after printing why. */
int zt_settings_add(struct zt_settings *s, const char *kv);
/* Applies them to conf; returns 0, or -1 after printing the library's error. */
int zt_settings_apply(const struct zt_settings *s, zkelect_conf_t *conf);

zkelect_conf_t *zt_make_conf(const char *hosts, int64_t session_timeout_ms,
                             int64_t connect_timeout_ms);

/* Connect a client and wait for its session. On failure prints one line and
 * returns NULL with *exit_code set (ZT_EXIT_CONNECT on timeout). */
zkelect_client_t *zt_connect(const zkelect_conf_t *conf, const char *hosts,
                             int64_t connect_timeout_ms, int *exit_code);

/* Write s to f as a quoted, escaped JSON string. */
void zt_json_string(FILE *f, const char *s);

/* Format epoch milliseconds as local ISO 8601 with milliseconds. */
void zt_format_time_ms(int64_t epoch_ms, char *buf, size_t len);

#endif
