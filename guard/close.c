/*
 * zkelect-guard's closing: once the owner is dead, each session is opened
 * with its id and password and closed (zkelect-guard.c says when and why).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "guard.h"
#ifdef ZKELECT_HAVE_ZK_TLS_SASL
#include "zkelect_ssl_sasl.h"
#endif

#define CLOSERS 8       /* sessions closed at a time (issue 35) */
#define WINDOW_MAX 128  /* handles open at a time, at most */

static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t state_cv = PTHREAD_COND_INITIALIZER;

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)path;
    if (type != ZOO_SESSION_EVENT)
        return;
    struct session *s = ctx;
    pthread_mutex_lock(&state_mu);
    s->state = state;
    pthread_cond_broadcast(&state_cv);
    pthread_mutex_unlock(&state_mu);
}

/* The closing round under way (close_picked): guarded by state_mu, like
 * each session's zh, state, opened, taken and deadline. */
static size_t round_left;   /* picked sessions no closer has taken yet */
static size_t round_open;   /* handles open and not closed yet */

static int connected_or_done(int state)
{
    return state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

/* A picked session a closer may take now: its handle is open and it is
 * connected, reported expired or refused, or its bound is over. */
static int ready(const struct session *s, int64_t now)
{
    return s->picked && s->opened && !s->taken && (connected_or_done(s->state) || now >= s->deadline);
}

static void close_one(struct session *s, zhandle_t *zh, int st)
{
    int64_t t0 = now_ms();
    int rc = zookeeper_close(zh);
    say("%016llx: %s, zookeeper_close %d (%lld ms)", (unsigned long long)s->id.client_id,
        st == ZOO_CONNECTED_STATE           ? "connected, closed"
        : st == ZOO_EXPIRED_SESSION_STATE   ? "expired already"
        : st == ZOO_AUTH_FAILED_STATE       ? "refused"
                                            : "no connection within the bound",
        rc, (long long)(now_ms() - t0));
}

static void wait_until(int64_t until)
{
    int64_t left = until - now_ms();
    if (left <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&state_cv, &state_mu, &ts);
}

/* A closer: takes each session as soon as it is ready and closes it
 * (zookeeper_close sends closeSession and waits for its answer, a round
 * trip and a commit; the C client bounds that wait), until every picked
 * session is taken. Never holds state_mu across zookeeper_close: the
 * handle's watcher takes it, and the close joins the watcher's thread.
 * Bounded: each session is taken at the latest CONNECT_BOUND_MS after it
 * was opened, and the opener opens each (or fails to) in turn. */
static void *closer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&state_mu);
    while (round_left > 0) {
        int64_t now = now_ms(), next = now + 50;
        struct session *s = NULL;
        for (size_t i = 0; i < n_sessions && !s; i++) {
            if (ready(&sessions[i], now))
                s = &sessions[i];
            else if (sessions[i].picked && sessions[i].opened && !sessions[i].taken && sessions[i].deadline < next)
                next = sessions[i].deadline;
        }
        if (s) {
            s->taken = 1;
            round_left--;
            zhandle_t *zh = s->zh;
            int st = s->state;
            s->zh = NULL;
            pthread_mutex_unlock(&state_mu);
            close_one(s, zh, st);
            pthread_mutex_lock(&state_mu);
            round_open--;
            pthread_cond_broadcast(&state_cv);
            continue;
        }
        /* Until a watcher, a closer or the opener says something, or the
         * next bound. */
        wait_until(next);
    }
    pthread_mutex_unlock(&state_mu);
    return NULL;
}

/* Handles open at a time: each costs descriptors (a socket and the
 * client's wake-up pipe) and two threads; the table may be larger than the
 * descriptor limit allows at once. */
static size_t window(void)
{
    struct rlimit rl;
    size_t w = WINDOW_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        size_t room = rl.rlim_cur > 64 + 4 ? (size_t)(rl.rlim_cur - 64) / 4 : 1;
        if (room < w)
            w = room;
    }
    return w;
}

/* A handle on s's session (its id and password), connected as the owner
 * was: over TLS with its files, with its SASL credentials (the server's
 * CONNECTED comes once SASL has succeeded: a server that requires SASL
 * refuses the closeSession of a connection without it). NULL when it
 * cannot be opened, or not as the owner was (this guard's client lacks
 * TLS or SASL): then it is not closed, and expires after its timeout. */
static zhandle_t *open_session(struct session *s)
{
    unsigned long long sid = (unsigned long long)s->id.client_id;
    zhandle_t *zh = NULL;
    void *sasl = sasl_params_of(s);
    if (s->sasl && !sasl) {
        say("%016llx: this guard cannot authenticate with SASL; not closed", sid);
        return NULL;
    }
    if (s->tls && sasl) {
#ifdef ZKELECT_HAVE_ZK_TLS_SASL
        zh = zkelect_zookeeper_init_ssl_sasl(s->hosts, s->tls, watcher, s->timeout_ms, &s->id, s,
                                             drop_log, sasl);
#else
        say("%016llx: this guard's client has no TLS and SASL together; not closed", sid);
        return NULL;
#endif
    } else if (sasl) {
#ifdef ZKELECT_HAVE_ZK_SASL
        zh = zookeeper_init_sasl(s->hosts, watcher, s->timeout_ms, &s->id, s, 0, drop_log, sasl);
#endif
    } else if (s->tls) {
#ifdef ZKELECT_HAVE_ZK_TLS
        /* zookeeper_init_ssl takes no log callback: what it says before
         * the one set here goes to stderr, /dev/null without --debug. */
        zh = zookeeper_init_ssl(s->hosts, s->tls, watcher, s->timeout_ms, &s->id, s, 0);
        if (zh)
            zoo_set_log_callback(zh, drop_log);
#else
        say("%016llx: this guard was built without TLS; not closed", sid);
        return NULL;
#endif
    } else {
        zh = zookeeper_init2(s->hosts, watcher, s->timeout_ms, &s->id, s, 0, drop_log);
    }
    if (!zh)
        say("zookeeper_init %016llx: %s", sid, strerror(errno));
    return zh;
}

/* Closes the picked sessions: opens them (zookeeper_init with each one's
 * id and password), up to a window of handles at a time, and closes each as
 * soon as it is connected (or reported expired, or refused), up to CLOSERS
 * at a time (CLOSERS - 1 threads and this one, once it has opened them
 * all); one slow to connect holds no other back. What is not connected
 * within CONNECT_BOUND_MS of its opening is given up (its handle freed).
 * Returns once every picked session is done. */
static void close_picked(int dry_run)
{
    if (dry_run) {
        for (size_t i = 0; i < n_sessions; i++)
            if (sessions[i].picked)
                say("dry run: would close %016llx", (unsigned long long)sessions[i].id.client_id);
        return;
    }
    size_t picked = 0;
    const size_t win = window();
    pthread_mutex_lock(&state_mu);
    for (size_t i = 0; i < n_sessions; i++) {
        struct session *s = &sessions[i];
        s->opened = s->taken = 0;
        s->state = 0;
        s->zh = NULL;
        picked += (size_t)s->picked;
    }
    round_left = picked;
    round_open = 0;
    pthread_mutex_unlock(&state_mu);

    /* The closers first, so that the first session connected is closed
     * while the others are still being opened. */
    pthread_t threads[CLOSERS];
    size_t n_threads = 0;
    while (n_threads + 1 < CLOSERS && n_threads + 1 < picked) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        int rc = pthread_create(&threads[n_threads], &attr, closer, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            say("pthread_create: %s (%zu closer(s))", strerror(rc), n_threads);
            break;
        }
        n_threads++;
    }

    for (size_t i = 0; i < n_sessions; i++) {
        struct session *s = &sessions[i];
        if (!s->picked)
            continue;
        pthread_mutex_lock(&state_mu);
        /* Bounded: each open handle is closed within CONNECT_BOUND_MS of its
         * opening. Without a closer thread (none could be made) this one
         * closes only once it has opened everything: no window then. */
        while (n_threads > 0 && round_open >= win)
            wait_until(now_ms() + 50);
        pthread_mutex_unlock(&state_mu);
        zhandle_t *zh = open_session(s);
        pthread_mutex_lock(&state_mu);
        s->zh = zh;
        s->opened = 1;
        s->deadline = now_ms() + CONNECT_BOUND_MS;
        if (!zh) {
            /* Nothing to close. */
            s->taken = 1;
            round_left--;
        } else {
            round_open++;
        }
        pthread_cond_broadcast(&state_cv);
        pthread_mutex_unlock(&state_mu);
    }

    closer(NULL);
    for (size_t k = 0; k < n_threads; k++)
        pthread_join(threads[k], NULL);
}


/* Waits until every picked session's WAIT process has ended, or the longest
 * of their timeouts has passed since the evidence. The time the last one
 * ended. */
static int64_t wait_for_waits(int64_t evidence)
{
    int64_t longest = 0;
    for (size_t i = 0; i < n_sessions; i++)
        if (sessions[i].picked && sessions[i].timeout_ms > longest)
            longest = sessions[i].timeout_ms;
    const int64_t until = evidence + longest;
    struct pollfd *p = calloc(n_sessions ? n_sessions : 1, sizeof *p);
    if (!p)
        return now_ms();
    for (int rounds = 0; rounds < 100000; rounds++) {
        nfds_t n = 0;
        for (size_t i = 0; i < n_sessions; i++)
            if (sessions[i].picked && sessions[i].wait_fd >= 0)
                p[n++] = (struct pollfd){.fd = sessions[i].wait_fd, .events = POLLIN};
        if (n == 0)
            break;
        int64_t left = until - now_ms();
        if (left <= 0) {
            say("a waited-for process is still there at the session timeout: closing anyway");
            break;
        }
        int r = poll(p, n, (int)left);
        if (r < 0 && errno != EINTR)
            break;
        for (nfds_t k = 0; r > 0 && k < n; k++) {
            if (!p[k].revents)
                continue;
            for (size_t i = 0; i < n_sessions; i++)
                if (sessions[i].wait_fd == p[k].fd) {
                    say("%016llx: the process it waits for has ended", (unsigned long long)sessions[i].id.client_id);
                    close(sessions[i].wait_fd);
                    sessions[i].wait_fd = -1;
                }
        }
    }
    free(p);
    return now_ms();
}

/* The owner is dead (first evidence at `evidence`): the sessions that wait
 * for nobody first, then the others once what they wait for has ended. */
void close_all(int64_t evidence, long delay_ms, int dry_run)
{
    for (int phase = 0; phase < 2; phase++) {
        size_t picked = 0;
        for (size_t i = 0; i < n_sessions; i++) {
            sessions[i].picked = (sessions[i].wait_fd >= 0) == (phase == 1);
            picked += (size_t)sessions[i].picked;
        }
        if (picked == 0)
            continue;
        int64_t since = evidence;
        if (phase == 1)
            since = wait_for_waits(evidence);
        drain(since, delay_ms);
        say("closing %zu session(s)%s", picked, phase == 1 ? " that waited" : "");
        close_picked(dry_run);
    }
}
