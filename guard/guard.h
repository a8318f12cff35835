/*
 * What the parts of zkelect-guard share: the guarded sessions, the log and
 * the clock. The program, its protocol and its evidence of death are
 * described at the top of zkelect-guard.c.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <zookeeper/zookeeper.h>

#define MAX_LINE 4096
/* The drain delay's default and bound: crash.guard.delay.ms's row. */
// BEGIN gen/vocab.py delay
#define DEFAULT_DELAY_MS 100
#define MAX_DELAY_MS 150
// END gen/vocab.py delay
#define CONNECT_BOUND_MS 5000
/* The protocol's version, in the hello line (cxx/session/guard_link.cpp). */
#define PROTOCOL_VERSION 3

/* The exit statuses (the private guard's start: its verdict). */
enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_NOT_OWNER = 2, EXIT_SYS = 3, EXIT_PROTOCOL = 4, EXIT_VERSION = 5 };

struct session {
    clientid_t id;
    int timeout_ms;
    char *hosts;
    char *tls;          /* "ca,cert,key[,password]"; NULL: plain TCP */
    struct guard_sasl *sasl; /* sasl.c: how to authenticate; NULL: no SASL */
    zhandle_t *zh;
    int state;          /* last state the watcher saw; 0 = none yet */
    int wait_fd;        /* pidfd of the WAIT process; -1: none */
    int picked;         /* in the closing round under way */
    int opened;         /* in that round: zookeeper_init has returned */
    int taken;          /* in that round: a closer has it (or nothing to close) */
    int64_t deadline;   /* in that round: given up if not connected by then */
};

/* The table grows with the sessions (zkelect-guard.c): as many as the
 * owner has, bounded by memory and, for the WAITs' pidfds, descriptors. */
extern struct session *sessions;
extern size_t n_sessions;
extern int debug;

int64_t now_ms(void);
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void drop_log(const char *message);

/* drain.c: the ZooKeeper servers' addresses, as numbers only (the guard
 * resolves no name: the owner sends the addresses it connected to), and
 * the wait for a dead owner's unacknowledged writes. */
void learn_servers(const char *list);
void drain(int64_t since, long delay_ms);

/* sasl.c: a SASL record's fields after the session id (the mechanism, then
 * the hex-encoded rest) for s: 0, or -1 when malformed. */
struct guard_sasl;
int sasl_record(struct session *s, const char *fields);
void sasl_drop(struct session *s);
/* The zoo_sasl_params_t * to open s with: NULL when s has no SASL or this
 * guard cannot do it (no SASL in its client, or Cyrus SASL did not start). */
void *sasl_params_of(const struct session *s);
/* A hex digit's value, or -1. */
int hex_digit(int c);

/* records.c: the records, read from in_fd (the pipe, fd 3; or a worker's
 * connection, in_socket set, whose WAIT takes a passed pidfd). 1 on EOF,
 * 0 otherwise, -1 on a protocol error. */
extern int in_fd, in_socket;
int read_records(char *buf, size_t *len);
void lock_memory(const void *p, size_t n);

/* zkelect-guard.c, for the service's workers too: the hello line (over a
 * connection with the owner's drain delay, into *delay_ms), the guard
 * proper (its exit status), the capabilities dropped, and the owner's
 * effective user as SO_PEERCRED gave it (-1: the private guard's own). */
int hello(long *delay_ms);
int guard_owner(long owner, int pidfd, long delay_ms, int dry_run);
void drop_caps(int keep_setid);
extern long owner_euid;

/* service.c: zkelect-guard --serve (its arguments after --serve; the
 * listening socket systemd passed, or -1; $RUNTIME_DIRECTORY's first
 * path, or NULL). */
int serve(int argc, char **argv, int activated_fd, const char *runtime_dir);

/* close.c: closes every session once the owner is dead. */
void close_all(int64_t evidence, long delay_ms, int dry_run);
