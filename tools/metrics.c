/*
 * Prometheus exposition of zkelect_client_stats(): see metrics.h and
 * docs/monitoring.md for the names.
 *
 * The snapshot is JSON (the library's stable, extendable form); json-c
 * parses it here, so the tool reads it exactly as any other user would.
 */
#define _GNU_SOURCE
#include "metrics.h"

#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- a growing buffer ------------------------------------------------------ */

static void buf_grow(struct zt_buf *b, size_t more)
{
    if (b->oom || b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static void buf_add(struct zt_buf *b, const char *s, size_t n)
{
    buf_grow(b, n);
    if (b->oom)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_str(struct zt_buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_fmt(struct zt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_fmt(struct zt_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void zt_buf_label(struct zt_buf *b, const char *s)
{
    /* The text format's three escapes. It has no escape for any other byte,
     * and a scraper rejects the whole exposition for a byte that is not
     * UTF-8 (and may take a CR for the end of a line): those, and every
     * other control character, become U+FFFD (the JSON outputs do so with
     * bytes that are not UTF-8). */
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t u = zt_utf8_len(p);
        if (u) {
            buf_add(b, (const char *)p, u);
            p += u;
            continue;
        }
        switch (*p) {
        case '\\': buf_add(b, "\\\\", 2); break;
        case '"': buf_add(b, "\\\"", 2); break;
        case '\n': buf_add(b, "\\n", 2); break;
        default:
            if (*p >= 0x20 && *p < 0x7f)
                buf_add(b, (const char *)p, 1);
            else
                buf_add(b, "\xef\xbf\xbd", 3);
        }
        p++;
    }
}

/* ---- rendering -------------------------------------------------------------- */

static int64_t get_i64(json_object *o, const char *key, int64_t dflt)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v))
        return dflt;
    return json_object_get_int64(v);
}

static const char *get_str(json_object *o, const char *key)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return "";
    return json_object_get_string(v);
}

static json_object *get_obj(json_object *o, const char *key)
{
    json_object *v;
    return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static void head(struct zt_buf *b, const char *name, const char *type, const char *help)
{
    buf_fmt(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{path="..",id=".."[,extra]} */
static void series(struct zt_buf *b, const char *name, const char *suffix, json_object *e,
                   const char *extra_key, const char *extra_val)
{
    buf_str(b, name);
    buf_str(b, suffix);
    buf_str(b, "{path=\"");
    zt_buf_label(b, get_str(e, "path"));
    buf_str(b, "\",id=\"");
    zt_buf_label(b, get_str(e, "id"));
    buf_str(b, "\"");
    if (extra_key) {
        buf_fmt(b, ",%s=\"", extra_key);
        zt_buf_label(b, extra_val);
        buf_str(b, "\"");
    }
    buf_str(b, "} ");
}

static void value_i(struct zt_buf *b, int64_t v) { buf_fmt(b, "%lld\n", (long long)v); }

static void value_s(struct zt_buf *b, int64_t us) { buf_fmt(b, "%.6f\n", (double)us / 1e6); }

/* One metric family of an election. Renderers that read one key of the
 * election's snapshot take it from key (and, for a figure of a histogram,
 * the figure from figure). */
struct family {
    const char *name, *type, *help;
    void (*each)(struct zt_buf *b, json_object *e, const struct family *f);
    const char *key, *figure;
};

/* HELP and TYPE once, then a line (or more) per election. */
static void family(struct zt_buf *b, json_object *elections, const struct family *f)
{
    size_t n = elections ? json_object_array_length(elections) : 0;
    if (n == 0)
        return;
    head(b, f->name, f->type, f->help);
    for (size_t i = 0; i < n; i++)
        f->each(b, json_object_array_get_idx(elections, i), f);
}

static void f_master(struct zt_buf *b, json_object *e, const struct family *f)
{
    json_object *v;
    int leader = json_object_object_get_ex(e, "is_leader", &v) && json_object_get_boolean(v);
    buf_fmt(b, "%s{name=\"", f->name);
    zt_buf_label(b, get_str(e, "path"));
    buf_fmt(b, "\"} %d\n", leader);
}

/* A plain integer key of the election as a gauge or counter. */
static void f_int(struct zt_buf *b, json_object *e, const struct family *f)
{
    series(b, f->name, "", e, NULL, NULL);
    value_i(b, get_i64(e, f->key, 0));
}

static void f_leader(struct zt_buf *b, json_object *e, const struct family *f)
{
    json_object *v;
    series(b, f->name, "", e, NULL, NULL);
    value_i(b, json_object_object_get_ex(e, "is_leader", &v) && json_object_get_boolean(v));
}

static void f_state(struct zt_buf *b, json_object *e, const struct family *f)
{
    static const char *const states[] = {"idle", "candidate", "follower", "leader", "resigning"};
    const char *now = get_str(e, "state");
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        series(b, f->name, "", e, "state", states[i]);
        value_i(b, strcmp(now, states[i]) == 0);
    }
}

/* A key in milliseconds since the epoch, as Unix time. */
static void f_time(struct zt_buf *b, json_object *e, const struct family *f)
{
    series(b, f->name, "", e, NULL, NULL);
    buf_fmt(b, "%.3f\n", (double)get_i64(e, f->key, 0) / 1e3);
}

/* A key in microseconds, in seconds. */
static void f_seconds(struct zt_buf *b, json_object *e, const struct family *f)
{
    series(b, f->name, "", e, NULL, NULL);
    value_s(b, get_i64(e, f->key, 0));
}

static void f_losses(struct zt_buf *b, json_object *e, const struct family *f)
{
    json_object *losses = get_obj(e, f->key);
    if (!losses)
        return;
    json_object_object_foreach(losses, reason, v)
    {
        series(b, f->name, "", e, "reason", reason);
        value_i(b, json_object_get_int64(v));
    }
}

/* A histogram of the snapshot; its buckets are cumulative. */
static void f_hist(struct zt_buf *b, json_object *e, const struct family *f)
{
    json_object *h = get_obj(e, f->key);
    json_object *buckets = get_obj(h, "buckets");
    if (!h || !buckets)
        return;
    size_t n = json_object_array_length(buckets);
    for (size_t i = 0; i < n; i++) {
        json_object *bk = json_object_array_get_idx(buckets, i);
        char le[32];
        snprintf(le, sizeof le, "%g", (double)get_i64(bk, "le_us", 0) / 1e6);
        series(b, f->name, "_bucket", e, "le", le);
        value_i(b, get_i64(bk, "count", 0));
    }
    series(b, f->name, "_bucket", e, "le", "+Inf");
    value_i(b, get_i64(h, "count", 0));
    series(b, f->name, "_sum", e, NULL, NULL);
    value_s(b, get_i64(h, "sum_us", 0));
    series(b, f->name, "_count", e, NULL, NULL);
    value_i(b, get_i64(h, "count", 0));
}

/* A figure of a histogram, in seconds, only once something was measured. */
static void f_hist_figure(struct zt_buf *b, json_object *e, const struct family *f)
{
    int64_t us = get_i64(get_obj(e, f->key), f->figure, -1);
    if (us < 0)
        return;
    series(b, f->name, "", e, NULL, NULL);
    value_s(b, us);
}

/* Every family of an election, in the order they are rendered. */
static const struct family kElectionFamilies[] = {
    {"leader_election_master_status", "gauge",
     "1 while this process leads the election named by its path, else 0 (client-go's name).",
     f_master, NULL, NULL},
    {"zkelect_is_leader", "gauge", "1 while this candidacy leads, else 0.", f_leader, NULL, NULL},
    {"zkelect_state", "gauge",
     "1 for the candidacy's current state (idle, candidate, follower, leader, resigning).", f_state,
     NULL, NULL},
    {"zkelect_state_since_timestamp_seconds", "gauge", "When the current state began (Unix time).",
     f_time, "state_since_at_ms", NULL},
    {"zkelect_fencing_token", "gauge", "The fencing token while leading, else 0.", f_int, "token",
     NULL},
    {"zkelect_queue_position", "gauge",
     "Place in the queue (0 leads; the last listing's, less the deletions ahead seen since), -1 when not enrolled.", f_int,
     "queue_position", NULL},
    {"zkelect_queue_length", "gauge", "Candidates in the last listing.", f_int, "queue_length",
     NULL},
    {"zkelect_term_start_timestamp_seconds", "gauge",
     "When the current or last term began (Unix time), 0 none.", f_time, "term_began_at_ms", NULL},
    {"zkelect_lease_remaining_seconds", "gauge", "Lease time left while leading, else 0.",
     f_seconds, "lease_left_us", NULL},
    {"zkelect_terms_won_total", "counter", "Terms this candidacy won (ELECTED events).", f_int,
     "terms_won", NULL},
    {"zkelect_leadership_losses_total", "counter", "Terms that ended (DEPOSED events), by reason.",
     f_losses, "losses", NULL},
    {"zkelect_requests_total", "counter", "Requests this candidacy sent to ZooKeeper.", f_int,
     "requests", NULL},
    {"zkelect_notifications_total", "counter", "Watch notifications this candidacy received.",
     f_int, "notifications", NULL},
    {"zkelect_failover_latency_seconds", "histogram",
     "Failovers this candidacy won: from the notification of its predecessor's deletion to "
     "ELECTED.",
     f_hist, "failover", NULL},
    {"zkelect_last_failover_latency_seconds", "gauge", "The latest failover this candidacy won.",
     f_hist_figure, "failover", "last_us"},
    {"zkelect_keepalive_rtt_seconds", "histogram",
     "Round trips of lease keepalives (a write to the quorum).", f_hist, "keepalive_rtt", NULL},
    {"zkelect_keepalive_rtt_last_seconds", "gauge", "The latest keepalive round trip.",
     f_hist_figure, "keepalive_rtt", "last_us"},
    {"zkelect_keepalive_rtt_min_seconds", "gauge", "The shortest keepalive round trip.",
     f_hist_figure, "keepalive_rtt", "min_us"},
    {"zkelect_keepalive_rtt_max_seconds", "gauge", "The longest keepalive round trip.",
     f_hist_figure, "keepalive_rtt", "max_us"},
};

static void client_counter(struct zt_buf *b, json_object *doc, const char *name, const char *key,
                           const char *help)
{
    head(b, name, "counter", help);
    buf_fmt(b, "%s %lld\n", name, (long long)get_i64(get_obj(doc, "counters"), key, 0));
}

/* One figure of the client's "balance" object, labelled with its group. */
static void balance_gauge(struct zt_buf *b, json_object *bal, const char *name, const char *key,
                          const char *help)
{
    head(b, name, "gauge", help);
    buf_fmt(b, "%s{group=\"", name);
    zt_buf_label(b, get_str(bal, "group"));
    buf_fmt(b, "\"} %lld\n", (long long)get_i64(bal, key, 0));
}

char *zt_metrics_render(const char *client_json, size_t *len)
{
    json_object *doc = json_tokener_parse(client_json);
    if (!doc || !json_object_is_type(doc, json_type_object)) {
        if (doc)
            json_object_put(doc);
        errno = EINVAL;
        return NULL;
    }
    struct zt_buf b = {0};
    json_object *el = get_obj(doc, "elections");
    if (el && !json_object_is_type(el, json_type_array))
        el = NULL;

    for (size_t i = 0; i < sizeof kElectionFamilies / sizeof kElectionFamilies[0]; i++)
        family(&b, el, &kElectionFamilies[i]);

    /* The client: one per process of the tool, so no labels. */
    json_object *v;
    head(&b, "zkelect_session_connected", "gauge", "1 while the ZooKeeper session is connected.");
    buf_fmt(&b, "zkelect_session_connected %d\n",
            json_object_object_get_ex(doc, "connected", &v) && json_object_get_boolean(v));
    head(&b, "zkelect_session_timeout_seconds", "gauge",
         "The session timeout the server negotiated (0 before the first connection).");
    buf_fmt(&b, "zkelect_session_timeout_seconds %.3f\n",
            (double)get_i64(doc, "session_timeout_us", 0) / 1e6);
    head(&b, "zkelect_session_crash_guarded", "gauge",
         "1 while the session is in the process's crash guard (crash.guard).");
    buf_fmt(&b, "zkelect_session_crash_guarded %d\n",
            json_object_object_get_ex(doc, "crash_guarded", &v) && json_object_get_boolean(v));
    /* A balanced group's part (balance.group), only for a client in one. */
    json_object *bal = get_obj(doc, "balance");
    if (bal && json_object_is_type(bal, json_type_object)) {
        balance_gauge(&b, bal, "zkelect_balance_leading", "leading",
                      "Candidacies of this client that lead now, in its balanced group.");
        balance_gauge(&b, bal, "zkelect_balance_in_line", "in_line",
                      "Candidacies of this client in line (leading or waiting), in its balanced "
                      "group: the most it can lead.");
    }
    /* The counters with a metric in gen/vocabulary.toml. */
    // BEGIN gen/vocab.py client counters
    client_counter(&b, doc, "zkelect_session_reconnects_total", "reconnects",
                   "Reconnects within a session.");
    client_counter(&b, doc, "zkelect_session_expirations_total", "expiries",
                   "ZooKeeper sessions that expired.");
    client_counter(&b, doc, "zkelect_zk_requests_total", "zk_requests",
                   "Requests the client sent to ZooKeeper.");
    client_counter(&b, doc, "zkelect_keepalives_total", "keepalives",
                   "Lease keepalives acknowledged.");
    client_counter(&b, doc, "zkelect_sequence_near_wrap_total", "sequence_near_wrap",
                   "WARNING events: an election path's sequence numbers near their wrap.");
    client_counter(&b, doc, "zkelect_servers_below_two_ticks_total",
                   "session_timeout_below_two_ticks",
                   "Servers that granted a session timeout below 2 x their tickTime.");
    client_counter(&b, doc, "zkelect_crash_guard_warnings_total", "crash_guard_warnings",
                   "WARNING events: the crash guard could not be started, or died or stopped reading and was replaced.");
    client_counter(&b, doc, "zkelect_lease_low_total", "lease_low",
                   "LEASE_LOW events: a leader's lease ran low while its renewal was late.");
    client_counter(&b, doc, "zkelect_balance_moves_total", "balance_moves",
                   "Leaderships this client handed to another client of its balanced group.");
    // END gen/vocab.py client counters
    json_object_put(doc);
    if (b.oom) {
        free(b.p);
        errno = ENOMEM;
        return NULL;
    }
    *len = b.len;
    return b.p;
}

char *zt_metrics_render_election(const char *path, const zkelect_participants_t *ps,
                                 int64_t now_ms, size_t *len)
{
    struct zt_buf b = {0};
    size_t n = zkelect_participants_count(ps);
    head(&b, "zkelect_election_candidates", "gauge", "Candidates in the election's queue.");
    buf_str(&b, "zkelect_election_candidates{path=\"");
    zt_buf_label(&b, path);
    buf_fmt(&b, "\"} %zu\n", n);
    if (n > 0) {
        head(&b, "zkelect_election_leader_info", "gauge",
             "1, labelled with the leader's participant id and node.");
        buf_str(&b, "zkelect_election_leader_info{path=\"");
        zt_buf_label(&b, path);
        buf_str(&b, "\",id=\"");
        zt_buf_label(&b, zkelect_participants_id(ps, 0));
        buf_str(&b, "\",node=\"");
        zt_buf_label(&b, zkelect_participants_node(ps, 0));
        buf_str(&b, "\"} 1\n");
        head(&b, "zkelect_election_leader_token", "gauge", "The leader's fencing token.");
        buf_str(&b, "zkelect_election_leader_token{path=\"");
        zt_buf_label(&b, path);
        buf_fmt(&b, "\"} %lld\n", (long long)zkelect_participants_token(ps, 0));
        /* From outside, only the leader's node age is known: its term began
         * at its node's creation or later (when its predecessor went). */
        head(&b, "zkelect_election_leader_node_age_seconds", "gauge",
             "Age of the leader's node: an upper bound of how long it has led.");
        buf_str(&b, "zkelect_election_leader_node_age_seconds{path=\"");
        zt_buf_label(&b, path);
        int64_t age = now_ms - zkelect_participants_ctime_ms(ps, 0);
        buf_fmt(&b, "\"} %.3f\n", (double)(age > 0 ? age : 0) / 1e3);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

static char *snapshot(zkelect_client_t *client, size_t *len)
{
    zkelect_stats_t *st = zkelect_client_stats(client, NULL, 0);
    if (!st)
        return NULL;
    char *out = zt_metrics_render(zkelect_stats_json(st), len);
    zkelect_stats_destroy(st);
    return out;
}

/* ---- the HTTP endpoint and the textfile ---------------------------------------- */

/* What one HTTP client may hold: the endpoint serves one scraper or two, so
 * a few connections per address, and a request's headers must be in within
 * a few seconds of the connection (or of its previous request's end). A
 * client that trickles its headers a byte at a time resets libmicrohttpd's
 * idle timeout for ever; the header deadline is what frees its place. */
#define METRICS_CONNECTIONS 64
#define METRICS_PER_ADDRESS 4
#define METRICS_IDLE_S 10
#define METRICS_HEADER_MS 5000

/* A connection of the endpoint, from libmicrohttpd's STARTED notification
 * to its CLOSED one. fd is our own duplicate of its socket, closed with the
 * entry: a shutdown(2) through it can never reach another file that took
 * the number after libmicrohttpd closed its own. */
struct conn {
    struct conn *prev, *next;
    int fd;
    int64_t since;   /* monotonic ms: connected, or its last request ended */
    int in_request;  /* headers received, the request is being answered */
    int cut;         /* shut down for missing the header deadline */
};

struct zt_metrics {
    zkelect_client_t *client;
    zkelect_election_t *election; /* /leader's; may be NULL */
    const char *path, *id;        /* ... its path and participant id */
    struct MHD_Daemon *httpd;
    int listen_fd;
    char url[300];
    char *textfile;
    int64_t interval_ms;
    pthread_t writer;
    int writer_started;
    pthread_t sweeper;
    int sweeper_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int changed; /* the election's state changed since the last write */
    pthread_mutex_t conns_mu;
    struct conn *conns;
};

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode what)
{
    struct zt_metrics *m = cls;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct conn *c = calloc(1, sizeof *c);
        if (c)
            c->fd = ci ? fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
        if (!c || c->fd < 0) {
            free(c);
            return; /* unwatched: still bounded by the idle timeout */
        }
        c->since = zt_monotonic_ms();
        pthread_mutex_lock(&m->conns_mu);
        c->next = m->conns;
        if (m->conns)
            m->conns->prev = c;
        m->conns = c;
        pthread_mutex_unlock(&m->conns_mu);
        *socket_context = c;
    } else if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn *c = *socket_context;
        if (!c)
            return;
        pthread_mutex_lock(&m->conns_mu);
        if (c->prev)
            c->prev->next = c->next;
        else
            m->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        pthread_mutex_unlock(&m->conns_mu);
        close(c->fd);
        free(c);
        *socket_context = NULL;
    }
}

static struct conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)con_cls, (void)toe;
    struct zt_metrics *m = cls;
    struct conn *c = conn_of(conn);
    if (!c)
        return;
    pthread_mutex_lock(&m->conns_mu);
    c->in_request = 0;
    c->since = zt_monotonic_ms(); /* the next request's headers are due */
    pthread_mutex_unlock(&m->conns_mu);
}

/* Shuts down every connection past its header deadline; libmicrohttpd sees
 * the end of the socket and closes the connection itself. */
static void *sweeper_main(void *arg)
{
    struct zt_metrics *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 250 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&m->cv, &m->mu, &until);
        if (m->stop)
            break;
        int64_t now = zt_monotonic_ms();
        pthread_mutex_lock(&m->conns_mu);
        /* Bounded by the connection limit. */
        for (struct conn *c = m->conns; c; c = c->next) {
            if (!c->in_request && !c->cut && now - c->since > METRICS_HEADER_MS) {
                shutdown(c->fd, SHUT_RDWR);
                c->cut = 1;
            }
        }
        pthread_mutex_unlock(&m->conns_mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* GET /leader: 200 and {"leader":true,"path":..,"id":..,"token":..,
 * "lease_left_ms":..} while this process leads, 503 and {"leader":false}
 * otherwise, for a load balancer's health check or a readiness probe:
 * zkelect_leader_answer() (zkelect.h says how one reading decides). Cheap
 * (no stats): a probe may ask a thousand times a second
 * (bench/leader_endpoint.py). */
static char *leader_body(struct zt_metrics *m, unsigned *status, size_t *len)
#ifdef ZKELECT_MUTATION_LEADER_ENDPOINT_REMEMBERS
/* TEST ONLY (tests/mutation): the answer a health-check cache would give,
 * the last one for up to a second. tests/tools/test_leader_endpoint.py must
 * catch it. */
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char *last;
    static size_t last_len;
    static unsigned last_status;
    static int64_t last_at;
    char *fresh_body(struct zt_metrics *, unsigned *, size_t *);
    pthread_mutex_lock(&mu);
    int64_t now = zt_monotonic_ms();
    if (!last || now - last_at >= 1000) {
        free(last);
        last = fresh_body(m, &last_status, &last_len);
        last_at = now;
    }
    char *out = last ? malloc(last_len + 1) : NULL;
    if (out) {
        memcpy(out, last, last_len + 1);
        *len = last_len;
        *status = last_status;
    }
    pthread_mutex_unlock(&mu);
    return out;
}

char *fresh_body(struct zt_metrics *m, unsigned *status, size_t *len)
#endif
{
    /* The library's answer (zkelect_leader_answer), one source for every
     * program that serves it; a newline for curl's users. */
    char buf[512];
    size_t need = sizeof buf;
    char *out = NULL;
    int rc = ZKELECT_EINVAL;
    if (m->election) {
        rc = zkelect_leader_answer(m->election, buf, &need);
        if (rc == ZKELECT_ERANGE && (out = malloc(need + 1)) != NULL)
            rc = zkelect_leader_answer(m->election, out, &need);
    }
    if (rc != 200 && rc != 503) {
        /* No election (yet): nobody here leads. */
        free(out);
        out = NULL;
        snprintf(buf, sizeof buf, "{\"leader\":false}");
        need = strlen(buf) + 1;
        rc = 503;
    }
    if (!out && (out = malloc(need + 1)) != NULL)
        memcpy(out, buf, need);
    if (!out)
        return NULL;
    *len = need;             /* the JSON without its NUL, and a newline */
    out[need - 1] = '\n';
    out[need] = '\0';
    *status = rc == 200 ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
    return out;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version, (void)upload_data, (void)upload_data_size, (void)con_cls;
    struct zt_metrics *m = cls;
    struct conn *c = conn_of(conn);
    if (c) {
        pthread_mutex_lock(&m->conns_mu);
        c->in_request = 1; /* the headers are in */
        pthread_mutex_unlock(&m->conns_mu);
    }
    struct MHD_Response *resp;
    unsigned status;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        static const char msg[] = "only GET\n";
        resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/healthz") == 0) {
        /* Liveness: this process answers; whether it leads is /leader's. */
        static const char msg[] = "ok\n";
        resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_OK;
    } else if (strcmp(url, "/leader") == 0) {
        size_t len = 0;
        char *body = leader_body(m, &status, &len);
        if (!body) {
            static const char msg[] = "out of memory\n";
            resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg,
                                                   MHD_RESPMEM_PERSISTENT);
            status = MHD_HTTP_SERVICE_UNAVAILABLE;
        } else {
            resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
            if (resp) {
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                /* A probe's answer is of this moment: nothing may cache it. */
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
            } else {
                free(body);
            }
        }
    } else if (strcmp(url, "/metrics") != 0) {
        static const char msg[] =
            "not found: the metrics are at /metrics, leadership at /leader, liveness at /healthz\n";
        resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_NOT_FOUND;
    } else {
        size_t len = 0;
        char *text = snapshot(m->client, &len);
        if (!text) {
            static const char msg[] = "no snapshot\n";
            resp = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg,
                                                   MHD_RESPMEM_PERSISTENT);
            status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        } else {
            resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
            if (resp)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                        "text/plain; version=0.0.4; charset=utf-8");
            else
                free(text);
            status = MHD_HTTP_OK;
        }
    }
    if (!resp)
        return MHD_NO;
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* Writes the textfile: a temporary file beside it, then rename(2), so
 * node_exporter never reads half a file. 0, or -1 with errno. */
static int write_textfile(struct zt_metrics *m)
{
    size_t len = 0;
    char *text = snapshot(m->client, &len);
    if (!text)
        return -1;
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", m->textfile, (int)getpid()) >= (int)sizeof tmp) {
        free(text);
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(text);
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            free(text);
            errno = e;
            return -1;
        }
        off += (size_t)n;
    }
    free(text);
    if (close(fd) != 0 || rename(tmp, m->textfile) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

static void add_ms(struct timespec *t, int64_t ms)
{
    t->tv_sec += ms / 1000;
    t->tv_nsec += (ms % 1000) * 1000000;
    if (t->tv_nsec >= 1000000000) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000;
    }
}

/* Rewrites the file every interval, and soon after every change of the
 * election's state (zt_metrics_changed), so that the file never says
 * "leader" for longer than a write after /metrics stopped saying so. A
 * burst of changes costs one write per TEXTFILE_MIN_GAP_MS at most. */
#define TEXTFILE_MIN_GAP_MS 50

static void *writer_main(void *arg)
{
    struct zt_metrics *m = arg;
    struct timespec last;
    clock_gettime(CLOCK_MONOTONIC, &last); /* zt_metrics_start wrote it */
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        struct timespec until = last;
        add_ms(&until, m->interval_ms);
        while (!m->stop && !m->changed &&
               pthread_cond_timedwait(&m->cv, &m->mu, &until) != ETIMEDOUT) {
        }
        if (m->stop)
            break;
        if (m->changed) {
            struct timespec soonest = last;
            add_ms(&soonest, TEXTFILE_MIN_GAP_MS);
            while (!m->stop && pthread_cond_timedwait(&m->cv, &m->mu, &soonest) != ETIMEDOUT) {
            }
            if (m->stop)
                break;
        }
        m->changed = 0;
        pthread_mutex_unlock(&m->mu);
        if (write_textfile(m) != 0)
            zt_err("--metrics-textfile %s: %s", m->textfile, strerror(errno));
        clock_gettime(CLOCK_MONOTONIC, &last);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

void zt_metrics_changed(struct zt_metrics *m)
{
    if (!m || !m->writer_started)
        return;
    pthread_mutex_lock(&m->mu);
    m->changed = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

const char *zt_metrics_url(const struct zt_metrics *m) { return m ? m->url : ""; }

static void note_url(struct zt_metrics *m)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (getsockname(m->listen_fd, (struct sockaddr *)&ss, &sl) != 0 ||
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return;
    snprintf(m->url, sizeof m->url, ss.ss_family == AF_INET6 ? "http://[%s]:%s/metrics"
                                                             : "http://%s:%s/metrics",
             host, port);
}

/* Binds HOST:PORT ("[v6]:PORT" too). The socket, or -1 after printing why. */
static int bind_listen(const char *spec)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    const char *h = spec;
    size_t hl = colon ? (size_t)(colon - spec) : 0;
    if (hl > 1 && spec[0] == '[' && spec[hl - 1] == ']') {
        h = spec + 1;
        hl -= 2;
    }
    if (!colon || hl == 0 || hl >= sizeof host || !colon[1]) {
        zt_err("--metrics-listen %s: expected HOST:PORT (e.g. 127.0.0.1:9464)", spec);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    int64_t port;
    if (zt_parse_i64(colon + 1, 0, 65535, &port) != 0) {
        zt_err("--metrics-listen %s: bad port '%s' (0..65535)", spec, colon + 1);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, colon + 1, &hints, &res);
    if (gai != 0) {
        zt_err("--metrics-listen %s: cannot resolve '%s': %s", spec, host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        zt_err("--metrics-listen %s: cannot listen: %s%s", spec, strerror(err),
               err == EADDRINUSE ? " (another process has this port)" : "");
    return fd;
}

struct zt_metrics *zt_metrics_start(zkelect_client_t *client, zkelect_election_t *election,
                                    const char *path, const char *id, const char *listen, const char *textfile,
                                    int64_t interval_ms, int *failed)
{
    *failed = 0;
    if (!listen && !textfile)
        return NULL;
    struct zt_metrics *m = calloc(1, sizeof *m);
    if (!m) {
        zt_err("out of memory");
        *failed = 1;
        return NULL;
    }
    m->client = client;
    m->election = election;
    m->path = path ? path : "";
    m->id = id ? id : "";
    m->listen_fd = -1;
    pthread_mutex_init(&m->conns_mu, NULL);
    m->interval_ms = interval_ms > 0 ? interval_ms : 15000;
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (textfile) {
        m->textfile = strdup(textfile);
        /* Written once now: an unwritable path is an error at start, not a
         * run without metrics. */
        if (!m->textfile || write_textfile(m) != 0) {
            zt_err("--metrics-textfile %s: %s", textfile, strerror(m->textfile ? errno : ENOMEM));
            goto fail;
        }
        if (pthread_create(&m->writer, NULL, writer_main, m) != 0) {
            zt_err("--metrics-textfile: cannot start its thread");
            goto fail;
        }
        m->writer_started = 1;
    }
    if (listen) {
        m->listen_fd = bind_listen(listen);
        if (m->listen_fd < 0)
            goto fail;
        note_url(m);
        m->httpd = MHD_start_daemon(
            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL, on_request, m,
            MHD_OPTION_LISTEN_SOCKET, m->listen_fd, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)METRICS_IDLE_S, MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNECTIONS,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)METRICS_PER_ADDRESS,
            MHD_OPTION_NOTIFY_CONNECTION, on_connection, m, MHD_OPTION_NOTIFY_COMPLETED,
            on_completed, m, MHD_OPTION_END);
        if (!m->httpd) {
            zt_err("--metrics-listen %s: the HTTP server did not start", listen);
            goto fail;
        }
        m->listen_fd = -1; /* the daemon's now: MHD_stop_daemon closes it */
        if (pthread_create(&m->sweeper, NULL, sweeper_main, m) != 0) {
            zt_err("--metrics-listen: cannot start its thread");
            goto fail;
        }
        m->sweeper_started = 1;
    }
    return m;
fail:
    *failed = 1;
    zt_metrics_stop(m);
    return NULL;
}

void zt_metrics_stop(struct zt_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    /* The sweeper first: it shuts down sockets the daemon owns. */
    if (m->sweeper_started)
        pthread_join(m->sweeper, NULL);
    if (m->httpd)
        MHD_stop_daemon(m->httpd);
    if (m->listen_fd >= 0)
        close(m->listen_fd);
    if (m->writer_started) {
        pthread_join(m->writer, NULL);
        /* The last word is the state at the end (after run resigned): a file
         * left saying "leader" would be exported as a second leader once
         * another process took over. */
        if (write_textfile(m) != 0)
            zt_err("--metrics-textfile %s: %s", m->textfile, strerror(errno));
    }
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->conns_mu);
    free(m->textfile);
    free(m);
}

int zt_cmd_metrics_render(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct zt_buf in = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
        buf_add(&in, chunk, n);
    if (in.oom || !in.p) {
        zt_err("no input");
        free(in.p);
        return ZT_EXIT_USAGE;
    }
    size_t len = 0;
    char *out = zt_metrics_render(in.p, &len);
    free(in.p);
    if (!out) {
        zt_err("the input is not a zkelect_client_stats document");
        return ZT_EXIT_USAGE;
    }
    fwrite(out, 1, len, stdout);
    free(out);
    return ferror(stdout) ? ZT_EXIT_FAILURE : ZT_EXIT_OK;
}
