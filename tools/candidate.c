/*
 * zkelect candidate: the participant line protocol of docs/design.md
 * ("The participant line protocol"). Benchmarks and
 * cross-checks parse its stdout, so every EVENT line is a contract.
 *
 * One thread: poll(2) over stdin, a signalfd and every election's event fd.
 * Lines go out with one write(2) each, so they never interleave and need no
 * flushing.
 */
#define _GNU_SOURCE
#include "common.h"
#include "lines.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

enum pstate { P_IDLE, P_FOLLOWER, P_LEADER, P_LOST, P_RESIGNING };

/* `transfer`'s bound: a step back costs a few round trips, so even the last
 * of a long line leads well within it on a LAN; at the bound the leader
 * hands over to whoever is next (ZKELECT_ETIMEDOUT). */
#define TRANSFER_TIMEOUT_MS 10000

struct participant {
    char id[32];
    zkelect_client_t *client;   /* owned unless shared */
    zkelect_election_t *election;
    enum pstate state;          /* the last state printed */
    int joined;
    int rejoin;                 /* volunteer again once RESIGNED arrives */
    char pred[4 * ZKELECT_ID_MAX + 8]; /* escaped: ids come from ZooKeeper */
};

static void usage(FILE *f)
{
    zt_usage(f, ZT_CMD_CANDIDATE,
             "Hosts K election participants with ids I..I+K-1, each on its own ZooKeeper\n"
             "session (one shared session with --shared-session), driven by commands on\n"
             "stdin: join, resign <id>, status <id>, transfer <id> <target>, quit. Prints one\n"
             "line per event:\n"
             "  EVENT <CONNECTED|FOLLOWER|LEADER|RESIGNED|LOST> <id> <epoch_ns> [key=value...]\n"
             "  INFO <id> ...\n"
             "--set passes a library option, e.g. --set leadership=strict (see zkelect(1)).\n",
             "Exit status: 0 after quit or end of input, 2 bad arguments, 3 no connection\n"
             "within the connect timeout, 5 permission denied, 1 other failures.\n");
}

static int out_fd = STDOUT_FILENO;

static void event_line(const char *kind, const struct participant *p, int64_t ns,
                       const char *extra)
{
    if (extra && *extra)
        zt_writeln(out_fd, "EVENT %s %s %" PRId64 " %s", kind, p->id, ns, extra);
    else
        zt_writeln(out_fd, "EVENT %s %s %" PRId64, kind, p->id, ns);
}

static void info_event(const struct participant *p, const zkelect_event_t *ev)
{
    int type = zkelect_event_type(ev);
    char msg[2048];
    zt_escape_text(zkelect_event_message(ev), msg, sizeof msg);
    if (type == ZKELECT_EV_ERROR)
        zt_writeln(out_fd, "INFO %s error %" PRId64 " code=%s zk_rc=%d message=%s", p->id,
                   zkelect_event_time_ns(ev), zkelect_err_name(zkelect_event_error(ev)),
                   zkelect_event_zk_rc(ev), msg);
    else
        zt_writeln(out_fd, "INFO %s %s %" PRId64 " message=%s", p->id,
                   zkelect_event_type_name(type), zkelect_event_time_ns(ev), msg);
}

static void volunteer(struct participant *p)
{
    int rc = zkelect_volunteer(p->election);
    if (rc == 0 || rc == ZKELECT_ESTATE) {
        p->joined = 1;
        return;
    }
    zt_writeln(out_fd, "INFO %s volunteer_failed code=%s message=%s", p->id,
               zkelect_err_name(rc), zkelect_strerror(rc));
}

static void handle_event(struct participant *p, zkelect_event_t *ev, int quitting)
{
    char extra[4 * ZKELECT_ID_MAX + 64];
    int64_t ns = zkelect_event_time_ns(ev);
    switch (zkelect_event_type(ev)) {
    case ZKELECT_EV_ELECTED:
        snprintf(extra, sizeof extra, "token=%" PRId64, zkelect_event_token(ev));
        event_line("LEADER", p, ns, extra);
        p->state = P_LEADER;
        break;
    case ZKELECT_EV_DEPOSED:
        if (zkelect_event_reason(ev) == ZKELECT_REASON_TRANSFERRED && p->state == P_LEADER) {
            /* The term ended at the event's time, before the target could
             * be elected: the same line as a resign's, for the same spans. */
            event_line("RESIGNED", p, ns, "reason=transferred");
            p->state = P_RESIGNING;
            break;
        }
        if (zkelect_event_reason(ev) == ZKELECT_REASON_RESIGNED) {
            /* RESIGNED went out before zkelect_resign was called. */
            if (p->state == P_LEADER)
                p->state = P_RESIGNING;
            break;
        }
        if (p->state == P_LEADER) {
            snprintf(extra, sizeof extra, "reason=%s",
                     zkelect_reason_name(zkelect_event_reason(ev)));
            event_line("LOST", p, ns, extra);
            p->state = P_LOST;
        }
        break;
    case ZKELECT_EV_FOLLOWING: {
        char pred[sizeof p->pred];
        zt_escape(zkelect_event_id(ev), pred, sizeof pred);
        if (p->state != P_FOLLOWER) {
            snprintf(extra, sizeof extra, "pred=%s", pred);
            event_line("FOLLOWER", p, ns, extra);
            p->state = P_FOLLOWER;
        } else if (strcmp(pred, p->pred) != 0) {
            zt_writeln(out_fd, "INFO %s pred %" PRId64 " pred=%s", p->id, ns, pred);
        }
        snprintf(p->pred, sizeof p->pred, "%s", pred);
        break;
    }
    case ZKELECT_EV_RESIGNED:
        if (p->state == P_LEADER || p->state == P_RESIGNING)
            p->state = P_IDLE;
        if (p->rejoin && !quitting) {
            p->rejoin = 0;
            p->pred[0] = 0;
            volunteer(p);
        }
        break;
    default:
        info_event(p, ev);
        break;
    }
}

/* Take at most a bounded batch so stdin is never starved by a busy queue. */
static void drain(struct participant *p, int quitting)
{
    for (int i = 0; i < 256; i++) {
        zkelect_event_t *ev = zkelect_next_event(p->election, 0);
        if (!ev)
            return;
        handle_event(p, ev, quitting);
        zkelect_event_destroy(ev);
    }
}

static struct participant *find(struct participant *ps, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ps[i].id, id))
            return &ps[i];
    return NULL;
}

static void do_resign(struct participant *p)
{
    drain(p, 0); /* act on the freshest state: a LOST may be waiting */
    if (p->state != P_LEADER)
        return;
    event_line("RESIGNED", p, zt_realtime_ns(), NULL);
    p->state = P_RESIGNING;
    int rc = zkelect_resign(p->election);
    if (rc != 0) {
        zt_writeln(out_fd, "INFO %s resign_failed code=%s", p->id, zkelect_err_name(rc));
        return;
    }
    p->rejoin = 1;
}

/* Blocks this process's loop until the target leads or the call gives up:
 * the events of its other participants wait in their queues meanwhile,
 * stamped by the library, so their lines keep their times. */
static void do_transfer(struct participant *p, const char *target)
{
    char word[4 * ZKELECT_ID_MAX + 8];
    drain(p, 0);
    if (p->state != P_LEADER) {
        zt_writeln(out_fd, "INFO %s transfer_not_leader", p->id);
        return;
    }
    int rc = zkelect_transfer(p->election, target, TRANSFER_TIMEOUT_MS);
    zt_escape(target, word, sizeof word);
    zt_writeln(out_fd, "INFO %s transfer %" PRId64 " to=%s code=%s", p->id, zt_realtime_ns(), word,
               rc == 0 ? "OK" : zkelect_err_name(rc));
}

static void do_status(struct participant *p)
{
    int64_t token = 0;
    /* Read before is_leader: the sample written is as fresh as ever. */
    int guarded = zt_crash_guarded(p->client);
    int leading = zkelect_is_leader(p->election);
    const char *st = p->state == P_LEADER     ? "leader"
                     : p->state == P_FOLLOWER ? "follower"
                     : p->state == P_LOST     ? "lost"
                     : p->state == P_RESIGNING ? "resigning"
                                               : "idle";
    if (leading)
        zkelect_fencing_token(p->election, &token);
    zt_writeln(out_fd,
               "INFO %s status state=%s is_leader=%d token=%" PRId64
               " connected=%d session_timeout_ms=%d pred=%s crash_guarded=%d",
               p->id, st, leading, token, zkelect_client_is_connected(p->client),
               zkelect_client_session_timeout_ms(p->client), p->pred[0] ? p->pred : "-", guarded);
}

struct session {
    struct participant *ps;
    int n;
};

/* One line of stdin (NULL: one too long, dropped). Returns 1 when it asks to
 * quit. Words are echoed escaped: the driver's bytes must not break our
 * one-line-per-record output either. */
static int command(void *ctx, char *line)
{
    struct session *s = ctx;
    char word[256];
    if (!line) {
        zt_writeln(out_fd, "INFO - line_too_long max=%d", ZT_LINE_MAX);
        return 0;
    }
    struct zt_command c;
    zt_command_parse(line, &c);
    switch (c.verb) {
    case ZT_VERB_NONE:
        break;
    case ZT_VERB_JOIN:
        for (int i = 0; i < s->n; i++)
            if (!s->ps[i].joined)
                volunteer(&s->ps[i]);
        break;
    case ZT_VERB_TRANSFER: {
        struct participant *p = c.arg ? find(s->ps, s->n, c.arg) : NULL;
        if (!p || !c.arg2) {
            zt_escape(c.arg ? c.arg : "-", word, sizeof word);
            zt_writeln(out_fd, "INFO %s %s", word, p ? "transfer_needs_target" : "unknown_participant");
        } else {
            do_transfer(p, c.arg2);
        }
        break;
    }
    case ZT_VERB_RESIGN:
    case ZT_VERB_STATUS: {
        struct participant *p = c.arg ? find(s->ps, s->n, c.arg) : NULL;
        if (!p) {
            zt_escape(c.arg ? c.arg : "-", word, sizeof word);
            zt_writeln(out_fd, "INFO %s unknown_participant", word);
        } else if (c.verb == ZT_VERB_RESIGN) {
            do_resign(p);
        } else {
            do_status(p);
        }
        break;
    }
    case ZT_VERB_QUIT:
        return 1;
    case ZT_VERB_UNKNOWN:
        zt_escape(c.word, word, sizeof word);
        zt_writeln(out_fd, "INFO - unknown_command %s", word);
        break;
    }
    return 0;
}

static void shutdown_all(struct participant *ps, int n, zkelect_client_t *shared)
{
    for (int i = 0; i < n; i++) {
        if (!ps[i].election)
            continue;
        drain(&ps[i], 1);
        if (ps[i].state == P_LEADER || zkelect_is_leader(ps[i].election)) {
            event_line("RESIGNED", &ps[i], zt_realtime_ns(), NULL);
            ps[i].state = P_RESIGNING;
        }
        /* Resign everybody first: the deletes then travel in parallel and
         * each destroy below waits for one already under way. */
        zkelect_resign(ps[i].election);
    }
    for (int i = 0; i < n; i++) {
        if (ps[i].election)
            zkelect_election_destroy(ps[i].election);
        ps[i].election = NULL;
    }
    for (int i = 0; i < n; i++) {
        if (ps[i].client && ps[i].client != shared)
            zkelect_client_destroy(ps[i].client);
        ps[i].client = NULL;
    }
    if (shared)
        zkelect_client_destroy(shared);
}

int zt_cmd_candidate(int argc, char **argv)
{
    struct zt_opts o = {0};
    o.count_max = ZT_COUNT_MAX_CANDIDATE;
    int prc = zt_parse(argc, argv, ZT_CMD_CANDIDATE, &o, usage);
    if (prc >= 0)
        return prc;
    if (!o.have_first || o.count < 1) {
        zt_err("--connect (or ZKELECT_CONNECT), --path, --first-id and --count are required");
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    const char *path = o.path;
    int64_t first = o.first_id, count = o.count;
    int shared_session = o.shared;

    /* A driver that went away must not kill us mid-shutdown. */
    int sfd = zt_signalfd(0);

    int n = (int)count;
    struct participant *ps = calloc((size_t)n, sizeof *ps);
    if (!ps) {
        zt_err("out of memory");
        return ZT_EXIT_FAILURE;
    }
    char err[512] = "";
    int rc_exit = ZT_EXIT_OK;
    zkelect_client_t *shared = NULL;

    /* Open every session first, then wait: they connect in parallel. */
    for (int i = 0; i < n; i++) {
        snprintf(ps[i].id, sizeof ps[i].id, "%" PRId64, first + i);
        if (shared_session && shared) {
            ps[i].client = shared;
            continue;
        }
        ps[i].client = zt_client(&o, &rc_exit);
        if (!ps[i].client) {
            if (rc_exit == ZT_EXIT_USAGE)
                usage(stderr);
            goto out;
        }
        if (shared_session)
            shared = ps[i].client;
    }
    /* Elections validate the path without a connection: a bad path is a
     * usage error even when ZooKeeper is down. They stay idle until join. */
    for (int i = 0; i < n; i++) {
        ps[i].election = zkelect_election_new(ps[i].client, path, ps[i].id, err, sizeof err);
        if (!ps[i].election) {
            zt_err("%s", err);
            usage(stderr);
            rc_exit = ZT_EXIT_USAGE;
            goto out;
        }
    }
    int64_t deadline = zt_monotonic_ms() + o.connect_ms;
    for (int i = 0; i < n; i++) {
        /* One deadline for all: they were connecting in parallel. */
        int rc = zt_await_for(ps[i].client, &o, deadline - zt_monotonic_ms());
        if (rc >= 0) {
            rc_exit = rc;
            goto out;
        }
        event_line("CONNECTED", &ps[i], zt_realtime_ns(), NULL);
        zt_writeln(out_fd, "INFO %s negotiated_session_timeout_ms=%d", ps[i].id,
                   zkelect_client_session_timeout_ms(ps[i].client));
    }

    struct pollfd *pfd = calloc((size_t)n + 2, sizeof *pfd);
    if (!pfd) {
        zt_err("out of memory");
        rc_exit = ZT_EXIT_FAILURE;
        goto out;
    }
    struct zt_lines in = {0};
    struct session sess = {ps, n};
    int quit = 0, stdin_open = 1;
    while (!quit) {
        pfd[0].fd = stdin_open ? STDIN_FILENO : -1;
        pfd[0].events = POLLIN;
        pfd[1].fd = sfd;
        pfd[1].events = POLLIN;
        for (int i = 0; i < n; i++) {
            pfd[i + 2].fd = zkelect_event_fd(ps[i].election);
            pfd[i + 2].events = POLLIN;
        }
        int r = poll(pfd, (nfds_t)n + 2, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            zt_err("poll: %s", strerror(errno));
            rc_exit = ZT_EXIT_FAILURE;
            break;
        }
        for (int i = 0; i < n; i++)
            if (pfd[i + 2].revents)
                drain(&ps[i], 0);
        if (pfd[1].revents) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) > 0)
                quit = 1;
        }
        if (pfd[0].revents && !quit) {
            size_t room;
            char *space = zt_lines_space(&in, &room);
            ssize_t got = read(STDIN_FILENO, space, room);
            if (got < 0 && errno != EINTR && errno != EAGAIN) {
                stdin_open = 0;
                quit = 1;
            } else if (got == 0) {
                stdin_open = 0;
                quit = 1;
                /* EOF with a last unterminated command still runs it. */
                zt_lines_finish(&in, command, &sess);
            } else if (got > 0) {
                quit = zt_lines_commit(&in, (size_t)got, command, &sess);
            }
        }
    }
    free(pfd);
out:
    shutdown_all(ps, n, shared);
    free(ps);
    if (sfd >= 0)
        close(sfd);
    return rc_exit;
}
