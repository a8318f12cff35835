/*
 * Shared pieces of the zkelect command-line tool: exit codes, the one option
 * parser, the one connect helper, clocks, escaping, process trees and a log
 * that never blocks its caller.
 */
#ifndef ZKELECT_TOOL_COMMON_H
#define ZKELECT_TOOL_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include <zkelect/zkelect.h>

/* Exit codes, the same failure giving the same code in every subcommand.
 * Documented in docs/zkelect.1; scripts depend on them. */
enum {
    ZT_EXIT_OK = 0,
    ZT_EXIT_FAILURE = 1,   /* anything not listed below */
    ZT_EXIT_USAGE = 2,     /* bad arguments, bad connect string/path/--set */
    ZT_EXIT_CONNECT = 3,   /* ZooKeeper not reachable within the connect timeout */
    ZT_EXIT_LOST = 4,      /* run --once: leadership lost */
    ZT_EXIT_DENIED = 5,    /* authentication failed or an ACL denied us */
    ZT_EXIT_METRICS = 6,   /* run: --metrics-listen / --metrics-textfile unusable */
    ZT_EXIT_UNKNOWN = 7    /* fenced: the write may or may not have committed */
};

extern const char *zt_prog; /* "zkelect <subcommand>", for messages */

int zt_cmd_candidate(int argc, char **argv);
int zt_cmd_run(int argc, char **argv);
int zt_cmd_status(int argc, char **argv);
int zt_cmd_observe(int argc, char **argv);
int zt_cmd_keeper(int argc, char **argv);
int zt_cmd_config(int argc, char **argv);
int zt_cmd_transfer(int argc, char **argv);
int zt_cmd_fenced(int argc, char **argv);

/* One-line error on stderr, prefixed with zt_prog. Goes through the async
 * log when it is started (zt_log_start), so it never blocks then. */
void zt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write one complete line (a '\n' is appended) to fd with as few write(2)
 * calls as the kernel allows, so lines of one process never interleave.
 * Returns 0 or -1 (errno set). */
int zt_writeln(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A log for processes whose main thread must never wait on stderr (run's
 * kill path): lines go into a private non-blocking pipe read by a thread
 * that does the blocking writes. A full pipe drops the line and counts it.
 * Start before anything may block; stop flushes for at most
 * ZT_LOG_FLUSH_MS (a stderr nobody reads loses the rest; the caller is
 * about to exit then). */
#define ZT_LOG_FLUSH_MS 1000
int zt_log_start(void);
void zt_log_stop(void);

int64_t zt_realtime_ns(void);
int64_t zt_monotonic_ms(void);
/* CLOCK_BOOTTIME, the clock of the library's lease: it runs on through a
 * suspend, so a deadline on it cannot be overslept unnoticed. */
int64_t zt_boottime_ms(void);

/* Strict integer parse of a whole string into [lo, hi]. 0 ok, -1 bad. */
int zt_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Resets SIGCHLD to its default (an inherited SIG_IGN makes the kernel reap
 * children behind our back), ignores SIGPIPE, and blocks SIGTERM, SIGINT,
 * SIGHUP (and SIGCHLD when asked) before the library starts its threads, so
 * they inherit the mask and the signals arrive only through the returned
 * signalfd. -1 after printing why. */
int zt_signalfd(int with_sigchld);

/* ---- The one option parser ---------------------------------------------- */

/* Each option is written once, in gen/cli.toml: gen/cli.py writes from it
 * options.h and options.c (the ids, each command's getopt_long table, its
 * usage lines and option list for --help) and the option lists of
 * docs/zkelect.1. What an option does is zt_parse's switch. */
#include "options.h"

#define ZT_MAX_SETTINGS 16

struct zt_opts {
    const char *hosts, *path, *id, *auth_file, *to;
    const char *group; /* status --group */
    int64_t session_ms, connect_ms, count, count_max, grace_ms, first_id;
    int have_first, json, once, quiet, shared, verbose, prometheus;
    const char *metrics_listen, *metrics_textfile;
    int64_t metrics_interval_ms;
    int64_t timeout_ms; /* transfer --timeout */
    int64_t priority;   /* run, candidate --priority; -1: not given */
    int lease_low_signal; /* run --lease-low-signal; 0: not given */
    const char *settings[ZT_MAX_SETTINGS];
    int nsettings;
    char **cmd; /* a command taking CMD: what follows "--" */
    const char *node, *token; /* fenced: --node, --token (or $ZKELECT_NODE, $ZKELECT_TOKEN) */
    char **operands;          /* a command taking operands: what follows the options */
    int noperands;
};

/* Parses argv (argv[0] is the subcommand) for the options of command cmd.
 * Returns -1 to go on, or an exit code (after printing the usage when the
 * arguments are bad). Checks that --connect (or ZKELECT_CONNECT) and --path
 * are present when the command requires them. */
int zt_parse(int argc, char **argv, enum zt_cmd cmd, struct zt_opts *o,
             void (*usage)(FILE *));

/* The --help of command cmd: its usage lines, about (what it does), its
 * options, then exit_status (each text ends with a newline). */
void zt_usage(FILE *f, enum zt_cmd cmd, const char *about, const char *exit_status);

/* ---- The one connect helper ---------------------------------------------- */

/* The library's configuration from the options: connect string (when
 * given), timeouts, --set, credentials from --auth-file or $ZKELECT_AUTH.
 * NULL after printing one line, with *exit_code set (untouched on success). */
zkelect_conf_t *zt_conf(const struct zt_opts *o, int *exit_code);

/* A client from the options (zt_conf, and the library's log as --verbose or
 * $ZKELECT_ZK_LOG_LEVEL asks). Does not wait for the connection. NULL after
 * printing one line, with *exit_code set (untouched on success). */
zkelect_client_t *zt_client(const struct zt_opts *o, int *exit_code);
/* zt_client for a command that only reads (status, observe): no crash
 * guard (crash.guard off) unless --set names crash.guard. */
zkelect_client_t *zt_observer_client(const struct zt_opts *o, int *exit_code);

/* Waits for the session; returns -1 when connected, else an exit code after
 * printing one line (the wording of every subcommand). */
int zt_await(zkelect_client_t *client, const struct zt_opts *o);
/* The same, waiting at most wait_ms (what is left of a deadline shared by
 * several clients); the message still names --connect-timeout-ms. */
int zt_await_for(zkelect_client_t *client, const struct zt_opts *o, int64_t wait_ms);

/* Whether client's session is in the process's crash guard now (the
 * stats' crash_guarded): 1 or 0; -1 when the stats cannot be had. */
int zt_crash_guarded(zkelect_client_t *client);

/* lease.margin.ms as zkelect run takes it: from 20 to 60000 (half of it is
 * how long the command may outlive a confirmed lease), and, as the library
 * requires of every client, below half the session timeout. -1 when conf's
 * margin is unset or good, else ZT_EXIT_USAGE after printing why. */
int zt_check_margin(const zkelect_conf_t *conf);
#define ZT_MARGIN_MIN_MS 20
#define ZT_MARGIN_MAX_MS 60000

/* The exit code for a ZKELECT_E* code reported by the library. */
int zt_exit_for(int zkelect_code);

/* The exit code for a failed query whose message (errbuf, or
 * zkelect_last_error()) names its code first: ZT_EXIT_DENIED for
 * ZKELECT_EAUTH, else ZT_EXIT_FAILURE. */
int zt_exit_for_message(const char *msg);

/* ---- Output of data read from ZooKeeper (untrusted) ---------------------- */

/* s as one shell-word-safe token: printable ASCII other than space, '"' and
 * '\\' and valid non-control UTF-8 pass, every other byte is \xNN, '\\' is
 * "\\\\", and the empty string is "". Truncated (with "...") to fit out. */
void zt_escape(const char *s, char *out, size_t outlen);

/* The same for free text at the end of a line (a message): spaces and '"'
 * pass, the empty string stays empty. */
void zt_escape_text(const char *s, char *out, size_t outlen);

/* Length of the valid, non-control UTF-8 sequence of 2 to 4 bytes at p, else 0
 * (ASCII, a byte that is not UTF-8, C1 controls, U+2028 and U+2029). */
size_t zt_utf8_len(const unsigned char *p);

/* Write s to f as a quoted JSON string; valid JSON for any bytes (bytes that
 * are not UTF-8 become U+FFFD). */
void zt_json_string(FILE *f, const char *s);

/* Format epoch milliseconds as local ISO 8601 with milliseconds. */
void zt_format_time_ms(int64_t epoch_ms, char *buf, size_t len);

/* ---- Process trees -------------------------------------------------------- */

/* Sends sig to every live (not zombie) process below root, found by parent
 * links in the proc filesystem, skipping `except` (but not its descendants) when > 0.
 * This process's crash guard, orphaned below it, is left alone.
 * Returns how many were signalled; *failed counts kill() failures other than
 * ESRCH, and *first_err and *first_pid name the first. -1 when /proc cannot be
 * read (errno set). */
int zt_signal_tree(pid_t root, pid_t except, int sig, int *failed, int *first_err,
                   pid_t *first_pid);

#endif
