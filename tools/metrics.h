/*
 * Prometheus exposition of the library's stats snapshot (zkelect run
 * --metrics-listen / --metrics-textfile): an HTTP endpoint served by
 * libmicrohttpd's own thread, and a textfile for node_exporter rewritten
 * atomically by a thread of its own. Both only take a snapshot
 * (zkelect_client_stats) and format it; neither touches the election.
 */
#ifndef ZKELECT_TOOL_METRICS_H
#define ZKELECT_TOOL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <zkelect/zkelect.h>

struct zt_metrics;

/* Starts what is asked (listen "HOST:PORT" and/or a textfile path, either
 * may be NULL) for client; the endpoint also answers /leader for election
 * (NULL: never leading), whose path and participant id (kept, not copied)
 * it names, and /healthz. Everything that can fail is tried here, before
 * the caller goes on: the address is resolved and bound, the textfile
 * written once. NULL after printing one line (the caller exits
 * ZT_EXIT_METRICS); also NULL, silently, when nothing was asked. */
struct zt_metrics *zt_metrics_start(zkelect_client_t *client, zkelect_election_t *election,
                                    const char *path, const char *id, const char *listen, const char *textfile,
                                    int64_t interval_ms, int *failed);

/* The election's state changed (an event was handled): the textfile is
 * rewritten soon, within a few tens of ms, rather than at the next
 * interval. Never blocks on the write. NULL is a no-op. */
void zt_metrics_changed(struct zt_metrics *m);

/* "http://HOST:PORT/metrics" as bound (the port a 0 asked for), or "". */
const char *zt_metrics_url(const struct zt_metrics *m);

/* Stops the server and the textfile thread, then writes the textfile once
 * more with the state as it is now (call after resigning, so that it says
 * "not leader"). Call before destroying the client or its elections. NULL
 * is a no-op. */
void zt_metrics_stop(struct zt_metrics *m);

/* The exposition (text format 0.0.4) of a zkelect_client_stats() document.
 * Returns a malloc'd NUL-terminated string (*len its length), or NULL when
 * the document does not parse (errno EINVAL) or memory runs out. */
char *zt_metrics_render(const char *client_json, size_t *len);

/* The exposition of an election seen from outside (zkelect observe
 * --prometheus): candidates in queue order, the leader first, as
 * zkelect_client_participants() gives them; now_ms is the local clock in
 * ms since the epoch. malloc'd, NULL when memory runs out. */
char *zt_metrics_render_election(const char *path, const zkelect_participants_t *ps,
                                 int64_t now_ms, size_t *len);

/* Appends s to the buffer as a Prometheus label value: backslash, double
 * quote and newline escaped as the text format requires; bytes that are not
 * UTF-8 and other control characters as U+FFFD. */
struct zt_buf {
    char *p;
    size_t len, cap;
    int oom;
};
void zt_buf_label(struct zt_buf *b, const char *s);

/* zkelect __metrics-render: a client stats document on stdin, its
 * exposition on stdout (tests feed it documents the library cannot make,
 * such as an id with a newline). */
int zt_cmd_metrics_render(int argc, char **argv);

#endif
