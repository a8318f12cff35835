/*
 * zkelect run: run a command only while this process leads an election.
 *
 * Process tree:  run  ->  keeper (zkelect __keeper)  ->  CMD  -> ...
 * run is a child subreaper; the keeper is one too, so every descendant of
 * CMD stays below the keeper however it daemonizes, and below run if the
 * keeper dies. See keeper.c for why the keeper exists.
 *
 * The promise: no descendant of CMD is alive once a successor can have been
 * elected. Its arithmetic (docs/semantics.md): when zkelect_is_leader()
 * answers 1 at time t (read before the call), the lease deadline L is after
 * t, and no successor can be elected before L + margin. So run checks
 * is_leader() every margin/4 while CMD runs and tells the keeper "kill
 * everything at t + 3 margin/4" after each yes (the keeper acts only if run
 * is frozen; the last quarter is for the kill itself); when the answer turns 0, or a
 * DEPOSED event comes, the tree gets SIGTERM and, at t + margin/2 at the
 * latest whatever --grace says, SIGKILL. While run still leads (a stop asked
 * by a signal), --grace applies in full. A node deleted by someone else or an
 * expired session may mean a successor already leads: SIGKILL at once.
 *
 * A transfer (asked by anyone, or a priority takeover) deposes run with
 * reason TRANSFERRED but keeps its node for a drain (transfer.drain.ms,
 * which zt_conf sets from --grace): the target is elected only once run
 * calls zkelect_release(), which it does when the whole tree is gone. So
 * --grace applies in full there too, on the same arithmetic with
 * zkelect_is_draining() in place of is_leader(): while it answers 1 the
 * keeper's deadline is renewed; once it answers 0 (the drain's bound, or a
 * session in doubt) SIGKILL comes by margin/2 as after a lost lease.
 *
 * One thread makes every decision: poll(2) over the election's event fd, a
 * signalfd and the keeper's socket. Nothing on the kill path waits on
 * stderr: messages go through the log thread of log.c.
 */
#define _GNU_SOURCE
#include "common.h"
#include "keeper.h"
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void usage(FILE *f)
{
    zt_usage(f, ZT_CMD_RUN,
             "Volunteers in the election at P and runs CMD only while leading, with\n"
             "ZKELECT_TOKEN (fencing token), ZKELECT_PATH, ZKELECT_ID, ZKELECT_NODE (our\n"
             "node: zkelect fenced writes only while this term lasts) and ZKELECT_CONNECT\n"
             "in its environment (and, with --metrics-listen, ZKELECT_LEADER_URL: GET it\n"
             "for the lease's time left).\n"
             "On loss of leadership every descendant of CMD gets SIGTERM at once and SIGKILL\n"
             "after --grace ms (default 5000), but never later than lease.margin.ms/2 after\n"
             "run last saw itself leading; then it waits to lead again (--once: exits 4).\n"
             "On a transfer (zkelect transfer, --priority) --grace applies in full and the\n"
             "next leader starts only once every process of CMD is gone.\n"
             "When CMD exits by itself: its leftover descendants get SIGKILL, run resigns\n"
             "and exits with CMD's status (128+N if killed by signal N).\n"
             "SIGTERM/SIGINT/SIGHUP: stop CMD the same way, resign, exit 128+N.\n",
             "Exit status: CMD's status; 1 failure; 2 bad arguments; 3 no connection within\n"
             "the connect timeout; 4 leadership lost under --once; 5 permission denied;\n"
             "6 the metrics endpoint or textfile cannot be set up; 128+N stopped by signal N.\n");
}

struct runner {
    struct zt_opts o;
    zkelect_client_t *client;
    zkelect_election_t *election;
    const char *id;
    int64_t window;      /* ms after a yes from is_leader() by which run kills CMD */
    int64_t keeper_window; /* ... the keeper, if run is frozen: it leaves a quarter
                              of the margin for the kill itself */
    int64_t beat;        /* how often is_leader() is asked while CMD runs */

    int leading; /* between ELECTED and DEPOSED, per the events */
    int draining; /* deposed by a transfer: our node waits for zkelect_release */
    int drain_lost; /* ... but zkelect_is_draining() said 0 once: no more grace */
    int64_t token;
    char node[256];  /* our node's name, from ELECTED (at most ~90 bytes) */

    pid_t keeper; /* 0: none */
    int ctl;      /* socket to the keeper, -1: none */
    pid_t child;  /* CMD's pid, once started */
    int64_t last_yes;  /* boottime ms read before the last is_leader() == 1 */
    int64_t last_sent; /* boottime ms of the last deadline sent */
    int tree_lost;     /* leadership ended for this tree: no more deadlines */
    int stopping;      /* the tree got SIGTERM from us */
    int killed;        /* ... and SIGKILL */
    int64_t kill_at;   /* boottime ms of the SIGKILL, while stopping */
    int64_t killed_at;
    int done_seen;     /* the keeper said the tree is empty */
    int orphans;       /* the keeper died early: its tree is ours to kill */

    int lost;         /* leadership was lost (for --once) */
    int quit_sig;     /* a signal asked us to leave */
    int fatal;        /* exit code of an error we cannot go on from, 0: none */
    int last_error;   /* the last ERROR event's code */
    int resigning;    /* we called zkelect_resign */
    int child_done;   /* CMD exited by itself */
    int child_status; /* its exit code, shell style */
    char leader_url[320]; /* --metrics-listen's /leader, for CMD; "": none */
};

static void note(const struct runner *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(const struct runner *r, const char *fmt, ...)
{
    if (r->o.quiet)
        return;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    zt_err("%s", msg);
}

/* The child's environment: ours minus stale ZKELECT_* values, plus the
 * term's. Built before fork because the child may only make
 * async-signal-safe calls (the parent has library threads). */
static const char *const child_keys[] = {"ZKELECT_TOKEN=", "ZKELECT_PATH=", "ZKELECT_ID=",
                                         "ZKELECT_AUTH=", "ZKELECT_LEADER_URL=",
                                         "ZKELECT_NODE=", "ZKELECT_CONNECT="};

static char **child_env(const struct runner *r)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 7, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int ours = 0;
        for (size_t j = 0; j < sizeof child_keys / sizeof *child_keys; j++)
            ours |= !strncmp(environ[i], child_keys[j], strlen(child_keys[j]));
        if (!ours)
            env[k++] = environ[i];
    }
    /* Ours from here on, to the end (free_env). */
    char *tok = NULL, *path = NULL, *id = NULL, *url = NULL, *node = NULL, *hosts = NULL;
    if (asprintf(&tok, "ZKELECT_TOKEN=%" PRId64, r->token) < 0)
        tok = NULL;
    if (asprintf(&path, "ZKELECT_PATH=%s", r->o.path) < 0)
        path = NULL;
    if (asprintf(&id, "ZKELECT_ID=%s", r->id) < 0)
        id = NULL;
    /* What `zkelect fenced` in CMD needs to write only while this term
     * lasts: the node that leads (with ZKELECT_TOKEN) and where it is. */
    if (asprintf(&node, "ZKELECT_NODE=%s/%s", r->o.path, r->node) < 0)
        node = NULL;
    if (asprintf(&hosts, "ZKELECT_CONNECT=%s", r->o.hosts) < 0)
        hosts = NULL;
    /* Where the command asks whether it still leads, and for how long
     * (GET: lease_left_ms), the same answer a load balancer gets. */
    if (*r->leader_url && asprintf(&url, "ZKELECT_LEADER_URL=%s", r->leader_url) < 0)
        url = NULL;
    if (!tok || !path || !id || !node || !hosts || (*r->leader_url && !url)) {
        free(tok);
        free(path);
        free(id);
        free(url);
        free(node);
        free(hosts);
        free(env);
        return NULL;
    }
    env[k++] = tok;
    env[k++] = path;
    env[k++] = id;
    env[k++] = node;
    env[k++] = hosts;
    if (url)
        env[k++] = url;
    env[k] = NULL;
    return env;
}

static void free_env(char **env)
{
    /* The entries from our ZKELECT_TOKEN on are ours; the rest belong to
     * environ. */
    size_t i = 0;
    while (env[i] && strncmp(env[i], "ZKELECT_TOKEN=", 14))
        i++;
    for (; env[i]; i++)
        free(env[i]);
    free(env);
}

static void send_msg(struct runner *r, int type, int32_t a, int64_t b)
{
    if (r->ctl < 0)
        return;
    struct zt_kmsg m = {type, a, b};
    /* Never waits: the keeper drains its socket at once, and if it does not
     * a missing deadline errs on the safe side (it kills). */
    ssize_t ignored = send(r->ctl, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
}

/* Signal every descendant of CMD (everything below the keeper, or below us
 * when the keeper is gone). Checks every kill; reports after signalling. */
static void signal_tree(struct runner *r, int sig)
{
    int failed = 0, err = 0;
    pid_t who = 0;
    pid_t root = r->keeper ? r->keeper : getpid();
    int n = zt_signal_tree(root, 0, sig, &failed, &err, &who);
    if (n < 0) {
        int e = errno;
        /* Without /proc, the child's process group is the best left. */
        if (r->child)
            killpg(r->child, sig);
        zt_err("cannot list processes in /proc (%s): signalled the command's process group "
               "only", strerror(e));
    }
    if (failed)
        zt_err("cannot send %s to pid %d (%s) and %d more: it may outlive leadership",
               sigabbrev_np(sig), (int)who, strerror(err), failed - 1);
}

/* Whether the node stands for our drain (no successor before the margin):
 * a yes like is_leader()'s, for the same deadlines. */
static int still_draining(struct runner *r)
{
    if (!r->draining || r->drain_lost)
        return 0;
    int64_t t = zt_boottime_ms();
    if (!zkelect_is_draining(r->election))
        return 0;
    r->last_yes = t;
    return 1;
}

/* hard: SIGKILL at once (a successor may already lead). */
static void stop_tree(struct runner *r, const char *why, int hard)
{
    if (!r->keeper && !r->orphans)
        return;
    int64_t now = zt_boottime_ms();
    const char *did = "SIGKILL";
    if (!r->stopping) {
        r->stopping = 1;
        r->kill_at = now + r->o.grace_ms;
        if (!hard && r->o.grace_ms > 0) {
            signal_tree(r, SIGTERM);
            did = "sent SIGTERM to every process of the command";
        }
    } else {
        did = "the command is stopping";
    }
    if (!zkelect_is_leader(r->election) && !still_draining(r) &&
        r->kill_at > r->last_yes + r->window)
        r->kill_at = r->last_yes + r->window;
    if (hard)
        r->kill_at = now;
    if (!r->killed && now >= r->kill_at) {
        signal_tree(r, SIGKILL);
        r->killed = 1;
        r->killed_at = now;
        note(r, "%s: sent SIGKILL to every process of the command", why);
    } else if (!r->killed) {
        note(r, "%s: %s (SIGKILL in %" PRId64 " ms)", why, did, r->kill_at - now);
    }
}

/* Leadership ended for the current tree (event or is_leader() == 0). */
static void tree_lost(struct runner *r, const char *why, int hard)
{
    if (!r->keeper)
        return;
    r->tree_lost = 1;
    stop_tree(r, why, hard);
}

static void on_keeper_msg(struct runner *r, const struct zt_kmsg *m)
{
    switch (m->type) {
    case ZT_K_STARTED:
        r->child = (pid_t)m->a;
        note(r, "leading (token %" PRId64 "): started '%s', pid %d", r->token, r->o.cmd[0],
             (int)r->child);
        break;
    case ZT_K_EXECFAIL:
        zt_err("cannot execute '%s': %s", r->o.cmd[0], strerror(m->a));
        break;
    case ZT_K_KILLFAIL:
        if (m->b == 0)
            zt_err("keeper: cannot list processes in /proc (%s): killed the command's "
                   "process group only", strerror(m->a));
        else
            zt_err("keeper: cannot kill pid %d: %s: it may outlive leadership", (int)m->b,
                   strerror(m->a));
        break;
    case ZT_K_DEADLINE:
        zt_err("no leadership confirmed in time (%" PRId64
               " ms late; was this process stopped?): the command was killed",
               m->b);
        r->tree_lost = 1;
        break;
    case ZT_K_DONE: {
        int st = m->a;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
        r->done_seen = 1;
        if (r->stopping || m->b) {
            note(r, "command stopped (status %d)", code);
        } else {
            note(r, "command exited by itself (status %d)", code);
            r->child_done = 1;
            r->child_status = code;
        }
        break;
    }
    default:
        break;
    }
}

/* Reads what the keeper sent; closes the socket at its end. */
static void read_keeper(struct runner *r)
{
    for (int i = 0; i < 64 && r->ctl >= 0; i++) {
        struct zt_kmsg m;
        ssize_t got = recv(r->ctl, &m, sizeof m, MSG_DONTWAIT);
        if (got == (ssize_t)sizeof m) {
            on_keeper_msg(r, &m);
            continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        /* A keeper that exits with our LEASE records unread resets the
         * socket, and the kernel reports that reset before the records the
         * keeper sent first (its DONE among them). The error is cleared by
         * reporting it: read on to the end of the socket. */
        if (got < 0 && errno == ECONNRESET)
            continue;
        close(r->ctl);
        r->ctl = -1;
    }
}

/* Waits (bounded) for one message of the keeper. 0, or -1 at its end. */
static int keeper_wait(struct runner *r, struct zt_kmsg *m, int timeout_ms)
{
    struct pollfd p = {.fd = r->ctl, .events = POLLIN};
    int64_t until = zt_monotonic_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - zt_monotonic_ms();
        if (left <= 0)
            return -1;
        int n = poll(&p, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        ssize_t got = recv(r->ctl, m, sizeof *m, MSG_DONTWAIT);
        if (got == (ssize_t)sizeof *m)
            return 0;
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        return -1;
    }
}

static void reap(struct runner *r)
{
    /* We are a subreaper: anything orphaned below us comes here too. */
    for (int i = 0; i < 100000; i++) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p <= 0)
            return;
        if (p != r->keeper)
            continue;
        read_keeper(r); /* its last words first */
        r->keeper = 0;
        zkelect_client_crash_guard_wait(r->client, 0);
        if (r->ctl >= 0) {
            close(r->ctl);
            r->ctl = -1;
        }
        if (!r->done_seen) {
            /* Whatever the keeper left (nothing, when it was told not to
             * start) is reparented to us: kill it until none is left. */
            r->orphans = 1;
            r->stopping = r->killed = 1;
            if (r->child && !r->tree_lost && !r->quit_sig && !r->fatal) {
                zt_err("the keeper process died (status %d): killing the command's processes",
                       st);
                r->fatal = ZT_EXIT_FAILURE;
            }
        }
        r->child = 0;
    }
}

static void resolve_window(struct runner *r)
{
    /* The library's margin for the negotiated timeout, never derived here:
     * run spawns only while leading, so a session was negotiated. Without
     * one (not reached) the smallest window is the safe side. */
    int64_t margin = zkelect_client_lease_margin_ms(r->client);
    if (margin < 4)
        margin = 4;
    r->window = margin / 2;
    r->keeper_window = margin * 3 / 4;
    r->beat = margin / 4 > 1 ? margin / 4 : 1;
}

static int spawn(struct runner *r)
{
    resolve_window(r);
    char **env = child_env(r);
    size_t nc = 0;
    while (r->o.cmd[nc])
        nc++;
    char **argv = calloc(nc + 4, sizeof *argv);
    int sv[2] = {-1, -1};
    if (!env || !argv) {
        zt_err("out of memory");
        goto fail;
    }
    argv[0] = "zkelect";
    argv[1] = ZT_KEEPER_ARG;
    argv[2] = "--";
    for (size_t i = 0; i < nc; i++)
        argv[3 + i] = r->o.cmd[i];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        zt_err("socketpair: %s", strerror(errno));
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        zt_err("fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        /* Async-signal-safe calls only from here to exec. The signal mask
         * (TERM, INT, HUP, CHLD blocked) is what the keeper wants.
         * A session of its own: whatever signals our process group or
         * session (kill -KILL -- -PGID, timeout -s KILL, a terminal's ^Z,
         * pkill -s) reaches us but not the keeper, which then kills the
         * command's tree when our socket closes or our deadlines stop. In
         * our group the keeper would die or freeze with us, and nothing
         * would be left that knows the tree. */
        if (setsid() < 0)
            _exit(126);
        if (sv[1] == ZT_KEEPER_FD)
            fcntl(sv[1], F_SETFD, 0);
        else if (dup2(sv[1], ZT_KEEPER_FD) < 0)
            _exit(126);
        if (close_range(ZT_KEEPER_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
            for (int fd = ZT_KEEPER_FD + 1; fd < 65536; fd++)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        execve("/proc/self/exe", argv, env);
        _exit(126);
    }
    close(sv[1]);
    free(argv);
    free_env(env);
    r->keeper = pid;
    r->ctl = sv[0];
    /* Should we die, the crash guard closes our session only once the keeper
     * has killed the command's tree and exited: the command is gone before
     * the next leader can be elected, by construction rather than by the
     * keeper beating the guard's drain. Before GO, so before CMD exists. */
    int wrc = zkelect_client_crash_guard_wait(r->client, pid);
    if (wrc != 0)
        zt_err("crash guard: cannot wait for the keeper (%s): a crash of this process "
               "may hand over before the command is killed",
               zkelect_strerror(wrc));
    r->child = 0;
    r->tree_lost = r->stopping = r->killed = r->done_seen = 0;

    struct zt_kmsg m;
    if (keeper_wait(r, &m, 10000) != 0 || m.type != ZT_K_READY) {
        zt_err("the keeper process did not start");
        kill(pid, SIGKILL);
        return -1;
    }
    /* Forking took time: ask again, right before CMD may start. */
    int64_t t = zt_boottime_ms();
    if (!zkelect_is_leader(r->election)) {
        note(r, "leadership ended before the command started");
        close(r->ctl); /* the keeper exits without starting anything */
        r->ctl = -1;
        r->tree_lost = 1;
        return 0;
    }
    r->last_yes = r->last_sent = t;
    /* No waiting for the exec: the main loop must go on renewing the
     * keeper's deadline meanwhile, or a slow exec would be killed. */
    send_msg(r, ZT_K_GO, 0, t + r->keeper_window);
    return 0;
fail:
    if (sv[0] >= 0) {
        close(sv[0]);
        close(sv[1]);
    }
    free(argv);
    if (env)
        free_env(env);
    return -1;
}

static void on_event(struct runner *r, zkelect_event_t *ev)
{
    int type = zkelect_event_type(ev);
    int reason = zkelect_event_reason(ev);
    switch (type) {
    case ZKELECT_EV_ELECTED:
        r->leading = 1;
        r->token = zkelect_event_token(ev);
        snprintf(r->node, sizeof r->node, "%s", zkelect_event_node(ev));
        break;
    case ZKELECT_EV_DEPOSED:
        if (r->leading && reason != ZKELECT_REASON_RESIGNED)
            r->lost = 1;
        r->leading = 0;
        /* Our node stays until we release it: the tree gets its --grace. */
        if (reason == ZKELECT_REASON_TRANSFERRED) {
            r->draining = 1;
            r->drain_lost = 0;
        }
        {
            /* A deleted node or an expired session may mean another leader
             * already runs: no grace. */
            int hard = reason == ZKELECT_REASON_NODE_DELETED ||
                       reason == ZKELECT_REASON_EXPIRED || reason == ZKELECT_REASON_NONE;
            char why[64];
            snprintf(why, sizeof why, "leadership lost (%s)", zkelect_reason_name(reason));
            tree_lost(r, why, hard);
            if (reason != ZKELECT_REASON_RESIGNED)
                note(r, "%s", why);
        }
        break;
    case ZKELECT_EV_FOLLOWING: {
        char id[256];
        zt_escape(zkelect_event_id(ev), id, sizeof id);
        note(r, "waiting: queued behind %s", id);
        break;
    }
    case ZKELECT_EV_ERROR:
        r->last_error = zkelect_event_error(ev);
        {
            char msg[2048];
            zt_escape_text(zkelect_event_message(ev), msg, sizeof msg);
            zt_err("%s (%s)", msg, zkelect_err_name(r->last_error));
        }
        /* Not every ERROR ends the candidacy (a leftover node we may not
         * delete does not): the RESIGNED that follows a final one does. */
        break;
    case ZKELECT_EV_LEASE_LOW: {
        char msg[2048];
        zt_escape_text(zkelect_event_message(ev), msg, sizeof msg);
        /* A warning for the command, not a decision of ours: if the lease
         * does run out, the stop above follows on the lease's own clock. */
        if (r->o.lease_low_signal && r->keeper && r->child && !r->stopping) {
            send_msg(r, ZT_K_SIGNAL, r->o.lease_low_signal, 0);
            note(r, "LEASE_LOW: %s: sent %s to the command", msg,
                 sigabbrev_np(r->o.lease_low_signal));
        } else {
            note(r, "LEASE_LOW: %s", msg);
        }
        break;
    }
    case ZKELECT_EV_RESIGNED:
        /* Not asked for: the library gave up on the candidacy for good
         * (an ERROR came first). Nothing would ever elect us again. */
        if (!r->resigning && !r->fatal) {
            r->fatal = r->last_error == ZKELECT_EAUTH ? ZT_EXIT_DENIED : ZT_EXIT_FAILURE;
            zt_err("the election failed for good: leaving");
            tree_lost(r, "election failed", 1);
        }
        break;
    default: {
        char msg[2048];
        zt_escape_text(zkelect_event_message(ev), msg, sizeof msg);
        note(r, "%s: %s", zkelect_event_type_name(type), msg);
        break;
    }
    }
}

/* How long after volunteering the crash guard's note waits for the guard
 * to take the session before it says the guard is off. */
#define GUARD_NOTE_WAIT_MS 1000

/* Who reads run's notes must know how soon a crash of this process hands
 * over: at once with the guard, after T without (semantics.md). Says so
 * once the guard has the session, or once by is past; returns the deadline
 * still due, 0 once said. */
static int64_t guard_note(struct runner *r, int64_t by, int64_t now)
{
    int guarded = zt_crash_guarded(r->client);
    if (guarded == 1) {
        note(r, "crash guard: on (if this process dies, its session ends within "
                "crash.guard.delay.ms, not the session timeout)");
        return 0;
    }
    if (now < by && guarded == 0)
        return by;
    if (guarded == 0)
        note(r, "crash guard: off (if this process dies, the next leader waits for the "
                "session timeout, %d ms)",
             zkelect_client_session_timeout_ms(r->client));
    return 0;
}

int zt_cmd_run(int argc, char **argv)
{
    struct runner r;
    memset(&r, 0, sizeof r);
    r.ctl = -1;
    int rc = zt_parse(argc, argv, ZT_CMD_RUN, &r.o, usage);
    if (rc >= 0)
        return rc;
    {
        /* The options as the library will take them (config checks them
         * the same way). */
        int code = ZT_EXIT_FAILURE;
        zkelect_conf_t *conf = zt_conf(&r.o, &code);
        if (!conf) {
            usage(stderr);
            return code;
        }
        rc = zt_check_margin(conf);
        zkelect_conf_destroy(conf);
        if (rc >= 0) {
            usage(stderr);
            return rc;
        }
    }
    char default_id[300];
    r.id = r.o.id;
    if (!r.id) {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        snprintf(default_id, sizeof default_id, "%s-%d", host, (int)getpid());
        r.id = default_id;
    }

    /* The tree walk reads pids from /proc and signals them: a /proc of
     * another PID namespace (unshare --pid without --mount-proc) would name
     * unrelated processes. Checked before anything is started. */
    {
        char self[32] = "";
        ssize_t n = readlink("/proc/self", self, sizeof self - 1);
        if (n > 0)
            self[n] = '\0';
        int64_t pid;
        if (n <= 0 || zt_parse_i64(self, 1, INT32_MAX, &pid) != 0 || pid != getpid()) {
            zt_err("/proc is not this process's (/proc/self is '%s', the pid is %d): run finds "
                   "the command's processes there and would signal others; mount a /proc of "
                   "this PID namespace (unshare --mount-proc)",
                   n > 0 ? self : strerror(errno), (int)getpid());
            return ZT_EXIT_FAILURE;
        }
    }
    /* Before anything forks or starts threads: see zt_signalfd. */
    int sfd = zt_signalfd(1);
    if (sfd < 0)
        return ZT_EXIT_FAILURE;
    int exit_code = ZT_EXIT_FAILURE;
    char err[512] = "";
    struct zt_metrics *metrics = NULL;
    int64_t guard_note_by = 0; /* boottime ms: the crash guard's note is due */
    /* The client first: it starts the process's crash guard, whose helper
     * is orphaned at once; made before we are a subreaper, it goes to init
     * (or an outer subreaper), not below us, where the tree kills of a
     * dead keeper would take it too. */
    r.client = zt_client(&r.o, &exit_code);
    if (!r.client) {
        if (exit_code == ZT_EXIT_USAGE)
            usage(stderr);
        goto out;
    }
    /* Orphans below us come to us, not to init: we can find and kill them. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        zt_err("prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
        exit_code = ZT_EXIT_FAILURE;
        goto out;
    }
    r.election = zkelect_election_new(r.client, r.o.path, r.id, err, sizeof err);
    if (!r.election) {
        zt_err("%s", err);
        usage(stderr);
        exit_code = ZT_EXIT_USAGE;
        goto out;
    }
    {
        /* Before connecting: a taken port or an unwritable textfile is an
         * error at start, never a run without the metrics asked for. */
        int failed = 0;
        metrics = zt_metrics_start(r.client, r.election, r.o.path, r.id, r.o.metrics_listen,
                                   r.o.metrics_textfile, r.o.metrics_interval_ms, &failed);
        if (failed) {
            exit_code = ZT_EXIT_METRICS;
            goto out;
        }
    }
    rc = zt_await(r.client, &r.o);
    if (rc >= 0) {
        exit_code = rc;
        goto out;
    }
    rc = zkelect_volunteer(r.election);
    if (rc != 0) {
        zt_err("volunteer: %s", zkelect_last_error()); /* the code and why (ZKELECT_ELIMIT: the sizes) */
        goto out;
    }
    /* From here on a kill may be due at any moment: nothing may wait on
     * stderr (the usage above was written directly, in order). */
    zt_log_start();
    {
        char id[256];
        zt_escape(r.id, id, sizeof id);
        note(&r, "volunteered as %s at %s", id, r.o.path);
        /* The crash guard's note comes from the main loop (guard_note):
         * the guard counts a session only once its line is in the guard's
         * pipe, a few ms after the session is up. */
        guard_note_by = zt_boottime_ms() + GUARD_NOTE_WAIT_MS;
        /* A port the system chose is known only from this line: it is
         * written even under --quiet. */
        if (*zt_metrics_url(metrics)) {
            const char *u = zt_metrics_url(metrics);
            const char *tail = strrchr(u, '/');
            snprintf(r.leader_url, sizeof r.leader_url, "%.*s/leader",
                     (int)(tail ? tail - u : (ptrdiff_t)strlen(u)), u);
            const char *port = strrchr(r.o.metrics_listen, ':');
            int64_t asked;
            if (r.o.quiet && port && zt_parse_i64(port + 1, 0, 0, &asked) == 0)
                zt_err("metrics at %s", zt_metrics_url(metrics));
            else
                note(&r, "metrics at %s", zt_metrics_url(metrics));
        }
    }

    /* Bounded by the events and signals that end it; each pass waits. */
    for (;;) {
        int64_t now = zt_boottime_ms();
        if (guard_note_by)
            guard_note_by = guard_note(&r, guard_note_by, now);
        /* Stop by the lease, not only by events: the library's thread may be
         * late, the clock is not. Read the clock first, then ask. */
        if (r.keeper && !r.tree_lost && !r.killed) {
            if (zkelect_is_leader(r.election)) {
                r.last_yes = now;
                if (now - r.last_sent >= r.beat / 2) {
                    send_msg(&r, ZT_K_LEASE, 0, now + r.keeper_window);
                    r.last_sent = now;
                }
            } else {
                tree_lost(&r, "leadership lost (lease)", 0);
            }
        } else if (r.keeper && r.draining && !r.drain_lost && !r.killed) {
            if (still_draining(&r)) {
                if (now - r.last_sent >= r.beat / 2) {
                    send_msg(&r, ZT_K_LEASE, 0, r.last_yes + r.keeper_window);
                    r.last_sent = now;
                }
            } else {
                /* The drain's bound, or the session in doubt: the node may
                 * go; the lease's bound applies from the last yes. The
                 * release still follows the tree's end (a session that
                 * comes back keeps the node until then). */
                r.drain_lost = 1;
                stop_tree(&r, "leadership transferred, the drain ended", 0);
            }
        }
        if (r.stopping && !r.killed && zt_boottime_ms() >= r.kill_at)
            stop_tree(&r, "grace period over", 0);
        if (r.killed && r.keeper && zt_boottime_ms() - r.killed_at > 2000) {
            /* The keeper should have reaped and left by now. */
            kill(r.keeper, SIGKILL);
            r.killed_at = zt_boottime_ms();
        }
        if (!r.keeper && r.orphans) {
            int n = zt_signal_tree(getpid(), 0, SIGKILL, NULL, NULL, NULL);
            reap(&r);
            if (n <= 0)
                r.orphans = 0;
        }
        if (!r.keeper && !r.orphans) {
            if (r.draining) {
                /* Every process of the command is gone: the target may lead. */
                r.draining = 0;
                int rrc = zkelect_release(r.election);
                if (rrc == 0)
                    note(&r, "leadership transferred: the command stopped, node released");
            }
            if (r.child_done) {
                exit_code = r.child_status;
                break;
            }
            if (r.quit_sig) {
                exit_code = 128 + r.quit_sig;
                break;
            }
            if (r.fatal) {
                exit_code = r.fatal;
                break;
            }
            if (r.o.once && r.lost) {
                exit_code = ZT_EXIT_LOST;
                break;
            }
            if (r.leading && zkelect_is_leader(r.election)) {
                if (spawn(&r) != 0)
                    break;
                continue;
            }
        }
        int timeout = -1;
        now = zt_boottime_ms();
        if (r.keeper && (!r.tree_lost || (r.draining && !r.drain_lost)) && !r.killed)
            timeout = (int)r.beat;
        if (r.stopping && !r.killed) {
            int64_t left = r.kill_at - now;
            if (left < 0)
                left = 0;
            if (timeout < 0 || left < timeout)
                timeout = (int)left;
        }
        if (r.killed && r.keeper && (timeout < 0 || timeout > 100))
            timeout = 100;
        if (r.orphans)
            timeout = 5;
        if (guard_note_by && (timeout < 0 || timeout > 10))
            timeout = 10;
        if (!r.keeper && r.leading && timeout < 0) {
            /* ELECTED came but the lease is not (or no longer) running: ask
             * again soon rather than rely on one more event. */
            resolve_window(&r);
            timeout = (int)r.beat;
        }
        struct pollfd pfd[3] = {
            {.fd = zkelect_event_fd(r.election), .events = POLLIN},
            {.fd = sfd, .events = POLLIN},
            {.fd = r.ctl, .events = POLLIN},
        };
        int n = poll(pfd, 3, timeout);
        if (n < 0 && errno != EINTR) {
            zt_err("poll: %s", strerror(errno));
            break;
        }
        if (n <= 0)
            continue;
        if (pfd[0].revents) {
            for (int i = 0; i < 256; i++) {
                zkelect_event_t *ev = zkelect_next_event(r.election, 0);
                if (!ev)
                    break;
                on_event(&r, ev);
                zkelect_event_destroy(ev);
                zt_metrics_changed(metrics);
            }
        }
        if (pfd[2].revents)
            read_keeper(&r);
        if (pfd[1].revents) {
            struct signalfd_siginfo si;
            for (int i = 0; i < 64 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si; i++) {
                if (si.ssi_signo == SIGCHLD)
                    continue;
                if (!r.quit_sig) {
                    r.quit_sig = (int)si.ssi_signo;
                    stop_tree(&r, "stop requested", 0);
                    note(&r, "got %s: stopping", strsignal((int)si.ssi_signo));
                }
            }
            /* SIGCHLD coalesces: reap whatever is there. */
            reap(&r);
        }
    }

out:
    if (r.keeper || r.orphans) {
        /* Only on internal failure: never leave the tree behind. */
        int64_t until = zt_monotonic_ms() + 10000;
        while ((r.keeper || r.orphans) && zt_monotonic_ms() < until) {
            int n = zt_signal_tree(getpid(), 0, SIGKILL, NULL, NULL, NULL);
            reap(&r);
            if (n <= 0 && !r.keeper)
                r.orphans = 0;
            struct pollfd none;
            poll(&none, 0, 5);
        }
    }
    if (r.ctl >= 0)
        close(r.ctl);
    if (r.election) {
        r.resigning = 1;
        zkelect_resign(r.election);
    }
    /* After the resign, so the last textfile says "not leader"; before the
     * destroys, since its threads take snapshots of the client and election. */
    zt_metrics_stop(metrics);
    if (r.election)
        zkelect_election_destroy(r.election);
    if (r.client)
        zkelect_client_destroy(r.client);
    close(sfd);
    zt_log_stop();
    return exit_code;
}
