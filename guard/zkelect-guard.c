/*
 * zkelect-guard: closes a dead process's ZooKeeper sessions (issue 37).
 *
 * When a process dies, ZooKeeper keeps its sessions (and their ephemeral
 * nodes) for one session timeout, since a client whose connection broke may
 * come back. A dead process will not. Anyone holding a session's id and
 * password may close it, and ZooKeeper then deletes its ephemeral nodes at
 * once. The guard holds the credentials of its owner's sessions and closes
 * them as soon as the owner is dead; it acts on evidence of death only,
 * never on silence (a stopped or partitioned owner keeps the lease rules).
 *
 * Starting it (the owner):
 *
 *   zkelect-guard [--delay-ms N] [--debug] [--dry-run] OWNER_PID
 *
 *   fd 3   the read end of a pipe whose write end only the owner holds
 *          (O_CLOEXEC in the owner, so no other child inherits it); the
 *          owner keeps the write end for as long as it wants to be guarded.
 *   OWNER_PID  the owner's pid; the owner must be the guard's parent
 *          (fork + exec, posix_spawn, or clone). The guard opens a pidfd on
 *          it and checks getppid() before and after: if the parent is still
 *          OWNER_PID after pidfd_open, the pidfd is the owner's and no
 *          recycled pid can stand in for it.
 *   --delay-ms N  the drain delay (default 100, at most 150): the longest
 *          the guard waits, after the evidence, for the dead owner's last
 *          writes still in its kernel's socket buffers to be acknowledged by
 *          their receivers before it closes anything (below, "Draining").
 *   --debug   write what it does to stderr (otherwise it writes nothing).
 *   --dry-run TEST ONLY: do everything but close the sessions.
 *
 * The process the owner started checks the above, closes every other file
 * descriptor it inherited (close_range(4, ~0)), puts /dev/null on 0, 1 and
 * (unless --debug) 2, ignores SIGINT, SIGHUP and SIGPIPE, starts a session
 * of its own (setsid: a signal to the owner's process group does not reach
 * it) and forks: the guard proper is the grandchild, and the child the
 * owner started exits at once. Its exit status is the start's verdict:
 *
 *   0  the guard runs      1  bad arguments   2  the parent is not OWNER_PID
 *   (or died meanwhile)    3  a system call failed (pidfd_open, fork, ...)
 *
 * The owner reaps that child (waitpid on its pid); the guard proper is an
 * orphan of init (or of the nearest subreaper), never a zombie of the owner.
 * The owner gets no SIGCHLD at all when it starts the child with clone()
 * and an exit signal of 0 (then waitpid(pid, &st, __WALL)); with fork or
 * posix_spawn it gets the one SIGCHLD of that child's exit, at start.
 *
 * The pipe carries lines, each a record, in ASCII, ending in '\n':
 *
 *   ADD <sid> <passwd> <timeout_ms> <connect string>
 *   TLS <sid> <ca>,<cert>,<key>[,<key password>]
 *   WAIT <sid> <pid>
 *   DEL <sid>
 *
 *   <sid>      the session id, 16 hex digits
 *   <passwd>   the session password, 16 bytes as 32 hex digits
 *   <timeout_ms>  the session timeout the owner negotiated (decimal,
 *              1..3600000); the guard reconnects with it
 *   <connect string>  the rest of the line (host:port,...[/chroot])
 *
 * ADD guards a session (again: replaces what was given for that id, TLS
 * and WAIT included), DEL withdraws it. TLS (after the session's ADD) says
 * the session's servers take TLS only: the guard connects to them as the
 * owner did, with the owner's CA file, certificate and key (their paths,
 * as zk.tls.* named them; the key's password too when it has one), the
 * rest of the line. A guard built without TLS takes the record and says
 * (with --debug) that it cannot close that session. WAIT makes the session's closing wait, once
 * the owner is dead, for process <pid> (decimal) to end as well: a
 * supervisor's helper that stops the supervised work when the supervisor
 * dies (zkelect run's keeper kills the command's tree), so that the work is
 * gone before the session, and the leadership, is. <pid> 0 withdraws it;
 * a pid that is gone already holds nothing back. The guard opens a pidfd on
 * it when it reads the record, so a later reuse of the number is not
 * mistaken for it. A line longer than 4096 bytes, a malformed line or more than
 * 1024 sessions is a protocol error: the guard exits (status 4) without
 * closing anything. Nothing goes back over the pipe. The credentials travel
 * in the pipe only: never argv, the environment or a file.
 *
 * The evidence, and what the guard does on it:
 *
 *   - the pidfd turns readable: the owner has exited (its files, hence its
 *     sockets and the pipe's write end, are closed by then).
 *   - EOF on the pipe: the owner closed it, or died. The kernel closes a
 *     dying process's files a moment before its pidfd turns readable, so on
 *     EOF the guard waits on the pidfd for at most 1 s: readable, the owner
 *     is dead; still alive, the owner let go on purpose (its last client
 *     closed, or it exec'd) and the guard exits 0 without closing anything.
 *
 * Once the owner is dead, the guard drains (below), then opens every session
 * without a WAIT at once (zookeeper_init with the session's id and
 * password) and closes each as soon as it is CONNECTED: zookeeper_close,
 * which sends closeSession and waits for its answer (the C client bounds
 * that: 3 s to send, 1.5 s for the answer). Up to 8 closes run at a time (7
 * threads and the main one), so neither a session slow to connect nor one
 * slow to close holds the others back (issue 35). A session the server
 * reports expired (or refuses) is done too; one not connected within 5 s of
 * the start of the closing is given up (its handle freed: ZooKeeper
 * expires it after its timeout). Then the sessions with a WAIT:
 * once every process they wait for has ended (at most the longest of their
 * session timeouts, after which ZooKeeper has expired them anyway), it
 * drains again and closes them the same way. Then it exits 0.
 *
 * Draining: a dead process's TCP connections are orphaned (no file refers
 * to them any more) and go on sending what was left in their buffers, then
 * their FIN. The guard asks the kernel (sock_diag) for this user's orphaned
 * TCP connections in FIN_WAIT1, CLOSING or LAST_ACK, the states in which
 * something they sent is still unacknowledged, leaving out those to the
 * guarded sessions' ZooKeeper servers (resolved when each ADD is read):
 * ZooKeeper orders what the owner sent it against the guard's close. None left: everything the
 * owner wrote has reached its receivers, and the guard closes at once.
 * Otherwise it asks again every millisecond, for at most the drain delay.
 * Without sock_diag (a seccomp profile, no netlink) it waits out the whole
 * delay. An orphan of another process of the same user counts too: the
 * guard waits for it as well (at most the delay), never less. While the owner lives,
 * the guard sleeps in poll() on the pidfd and the pipe, with no timeout: no
 * CPU, no timer. The ZooKeeper C client's log is silenced.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <netdb.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#define PIPE_FD 3
#define MAX_LINE 4096
#define MAX_SESSIONS 1024
#define DEFAULT_DELAY_MS 100
#define MAX_DELAY_MS 150
#define EOF_GRACE_MS 1000
#define CONNECT_BOUND_MS 5000
#define CLOSERS 8       /* sessions closed at a time (issue 35) */

enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_NOT_OWNER = 2, EXIT_SYS = 3, EXIT_PROTOCOL = 4 };

struct session {
    clientid_t id;
    int timeout_ms;
    char *hosts;
    char *tls;          /* "ca,cert,key[,password]"; NULL: plain TCP */
    zhandle_t *zh;
    int state;          /* last state the watcher saw; 0 = none yet */
    int wait_fd;        /* pidfd of the WAIT process; -1: none */
    int picked;         /* in the closing round under way */
    int opened;         /* in that round: zookeeper_init has returned */
    int taken;          /* in that round: a closer has it (or nothing to close) */
};

static struct session sessions[MAX_SESSIONS];

/* The ZooKeeper servers of the guarded sessions, resolved as each ADD is
 * read: the dead owner's own connections to them are not waited for in the
 * drain (what it sent ZooKeeper is ordered before the guard's close or
 * refused after it; a successor acts only after the close). Waiting for
 * them would cost a round trip to the ensemble on every crash. */
#define MAX_SERVERS 64
struct server {
    int family;
    unsigned char addr[16];
    uint16_t port; /* network order */
};
static struct server servers[MAX_SERVERS];
static size_t n_servers;

static void add_server(const struct sockaddr *sa)
{
    struct server v = {.family = sa->sa_family};
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        memcpy(v.addr, &in->sin_addr, 4);
        v.port = in->sin_port;
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        memcpy(v.addr, &in6->sin6_addr, 16);
        v.port = in6->sin6_port;
    } else {
        return;
    }
    for (size_t i = 0; i < n_servers; i++)
        if (memcmp(&servers[i], &v, sizeof v) == 0)
            return;
    if (n_servers < MAX_SERVERS)
        servers[n_servers++] = v;
}

/* host:port,host:port[/chroot]; [v6]:port too. Names are resolved here,
 * once, not when the owner has died. What cannot be resolved is left out:
 * its connections are then waited for like any other (never less). */
static void learn_servers(const char *hosts)
{
    char buf[MAX_LINE + 1];
    snprintf(buf, sizeof buf, "%s", hosts);
    char *slash = strchr(buf, '/');
    if (slash)
        *slash = '\0';
    char *save = NULL;
    int items = 0;
    for (char *h = strtok_r(buf, ",", &save); h && items < MAX_SERVERS; h = strtok_r(NULL, ",", &save), items++) {
        char *port = NULL;
        if (*h == '[') {
            char *close = strchr(h, ']');
            if (!close)
                continue;
            *close = '\0';
            h++;
            if (close[1] == ':')
                port = close + 2;
        } else {
            char *colon = strrchr(h, ':');
            if (colon && strchr(h, ':') == colon) {
                *colon = '\0';
                port = colon + 1;
            }
        }
        struct addrinfo hint = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res = NULL;
        if (getaddrinfo(h, port && *port ? port : "2181", &hint, &res) != 0)
            continue;
        int n = 0;
        for (struct addrinfo *a = res; a && n < 16; a = a->ai_next, n++)
            add_server(a->ai_addr);
        freeaddrinfo(res);
    }
}

/* An IPv4 address also appears as ::ffff:a.b.c.d on a dual-stack socket. */
static int is_server(int family, const uint32_t dst[4], uint16_t dport)
{
    unsigned char a[16];
    memcpy(a, dst, 16);
    for (size_t i = 0; i < n_servers; i++) {
        const struct server *v = &servers[i];
        if (v->port != dport)
            continue;
        if (family == v->family && memcmp(a, v->addr, family == AF_INET ? 4 : 16) == 0)
            return 1;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (family == AF_INET6 && v->family == AF_INET && memcmp(a, mapped, 12) == 0 &&
            memcmp(a + 12, v->addr, 4) == 0)
            return 1;
    }
    return 0;
}
static size_t n_sessions;
static int debug;
static struct timespec t_start;

static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t state_cv = PTHREAD_COND_INITIALIZER;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...)
{
    if (!debug)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t = (double)(ts.tv_sec - t_start.tv_sec) + (double)(ts.tv_nsec - t_start.tv_nsec) / 1e9;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "zkelect-guard[%ld] %.3f %s\n", (long)getpid(), t, buf);
}

static void drop_log(const char *message)
{
    (void)message;
}

static void usage(void)
{
    if (debug)
        fprintf(stderr, "usage: zkelect-guard [--delay-ms N] [--debug] [--dry-run] OWNER_PID "
                        "(the pipe on fd 3)\n");
}

/* ---- the records --------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Exactly n hex digits at s, followed by a space or the end: n/2 bytes. */
static int parse_hex(const char *s, size_t n, unsigned char *out)
{
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval((unsigned char)s[i]), lo = hi < 0 ? -1 : hexval((unsigned char)s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return (s[n] == ' ' || s[n] == '\0') ? 0 : -1;
}

static int parse_sid(const char *s, int64_t *sid)
{
    unsigned char b[8];
    if (parse_hex(s, 16, b) != 0)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | b[i];
    *sid = (int64_t)v;
    return 0;
}

static struct session *find(int64_t sid)
{
    for (size_t i = 0; i < n_sessions; i++)
        if (sessions[i].id.client_id == sid)
            return &sessions[i];
    return NULL;
}

static void drop_wait(struct session *s)
{
    if (s->wait_fd >= 0)
        close(s->wait_fd);
    s->wait_fd = -1;
}

static void drop_tls(struct session *s)
{
    if (s->tls) {
        /* A key's password may be in it. */
        memset(s->tls, 0, strlen(s->tls));
        free(s->tls);
        s->tls = NULL;
    }
}

static void forget(struct session *s)
{
    drop_wait(s);
    drop_tls(s);
    free(s->hosts);
    /* The credentials do not outlive their use. */
    memset(s, 0, sizeof *s);
    *s = sessions[--n_sessions];
    memset(&sessions[n_sessions], 0, sizeof sessions[n_sessions]);
}

/* One record, NUL-terminated, without its '\n'. 0, or -1 on a protocol error. */
static int record(char *line)
{
    int64_t sid;
    if (strncmp(line, "DEL ", 4) == 0) {
        if (parse_sid(line + 4, &sid) != 0 || line[4 + 16] != '\0')
            return -1;
        struct session *s = find(sid);
        say("DEL %016llx%s", (unsigned long long)sid, s ? "" : " (not held)");
        if (s)
            forget(s);
        return 0;
    }
    if (strncmp(line, "WAIT ", 5) == 0) {
        const char *p = line + 5;
        if (parse_sid(p, &sid) != 0 || p[16] != ' ')
            return -1;
        p += 17;
        char *end;
        errno = 0;
        long pid = strtol(p, &end, 10);
        if (errno || end == p || *end != '\0' || *p == '-' || *p == '+' || pid < 0 || pid > INT_MAX)
            return -1;
        struct session *s = find(sid);
        if (!s)
            return -1;
        drop_wait(s);
        if (pid > 0) {
            s->wait_fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
            say("WAIT %016llx for %ld%s", (unsigned long long)sid, pid,
                s->wait_fd < 0 ? " (gone already)" : "");
        }
        return 0;
    }
    if (strncmp(line, "TLS ", 4) == 0) {
        const char *p = line + 4;
        if (parse_sid(p, &sid) != 0 || p[16] != ' ' || p[17] == '\0')
            return -1;
        struct session *s = find(sid);
        if (!s)
            return -1;
        drop_tls(s);
        s->tls = strdup(p + 17);
        if (!s->tls)
            return -1;
        say("TLS %016llx", (unsigned long long)sid);
        return 0;
    }
    if (strncmp(line, "ADD ", 4) != 0)
        return -1;
    const char *p = line + 4;
    if (parse_sid(p, &sid) != 0 || p[16] != ' ')
        return -1;
    p += 17;
    unsigned char pw[16];
    if (parse_hex(p, 32, pw) != 0 || p[32] != ' ')
        return -1;
    p += 33;
    char *end;
    errno = 0;
    long t = strtol(p, &end, 10);
    if (errno || end == p || *end != ' ' || t < 1 || t > 3600000)
        return -1;
    p = end + 1;
    if (*p == '\0')
        return -1;
    char *hosts = strdup(p);
    if (!hosts)
        return -1;
    struct session *s = find(sid);
    if (!s) {
        if (n_sessions == MAX_SESSIONS) {
            free(hosts);
            return -1;
        }
        s = &sessions[n_sessions++];
    } else {
        drop_wait(s);
        drop_tls(s);
        free(s->hosts);
    }
    memset(s, 0, sizeof *s);
    s->wait_fd = -1;
    s->id.client_id = sid;
    memcpy(s->id.passwd, pw, sizeof pw);
    s->timeout_ms = (int)t;
    s->hosts = hosts;
    learn_servers(hosts);
    say("ADD %016llx timeout %ld ms on %s", (unsigned long long)sid, t, hosts);
    return 0;
}

/* Reads what the pipe has. 1 on EOF, 0 otherwise, -1 on a protocol error. */
static int read_pipe(char *buf, size_t *len)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n = read(PIPE_FD, buf + *len, MAX_LINE + 1 - *len);
        if (n < 0)
            return (errno == EINTR || errno == EAGAIN) ? 0 : 1;
        if (n == 0)
            return 1;
        *len += (size_t)n;
        char *nl;
        while ((nl = memchr(buf, '\n', *len)) != NULL) {
            *nl = '\0';
            if (memchr(buf, '\0', (size_t)(nl - buf)) != NULL || record(buf) != 0)
                return -1;
            size_t used = (size_t)(nl - buf) + 1;
            memmove(buf, nl + 1, *len - used);
            *len -= used;
        }
        if (*len > MAX_LINE)
            return -1;
    }
    return 0;
}

/* ---- closing ----------------------------------------------------------- */

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
 * each session's zh, state, opened and taken. */
static int64_t round_deadline;  /* CONNECT_BOUND_MS after the round began */
static size_t round_left;       /* picked sessions no closer has taken yet */

static int connected_or_done(int state)
{
    return state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

/* A picked session a closer may take now: its handle is open and it is
 * connected, reported expired or refused, or the bound is over. */
static int ready(const struct session *s, int64_t now)
{
    return s->picked && s->opened && !s->taken && (connected_or_done(s->state) || now >= round_deadline);
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

/* A closer: takes each session as soon as it is ready and closes it
 * (zookeeper_close sends closeSession and waits for its answer, a round
 * trip and a commit; the C client bounds that wait), until every picked
 * session is taken, or the bound is over and nothing is ready (what is left
 * is not opened yet, and the opener, a closer too once it has opened them
 * all, takes it). Never holds state_mu across zookeeper_close: the handle's
 * watcher takes it, and the close joins the watcher's thread. Its waits end
 * at the bound. */
static void *closer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&state_mu);
    while (round_left > 0) {
        int64_t now = now_ms();
        struct session *s = NULL;
        for (size_t i = 0; i < n_sessions && !s; i++)
            if (ready(&sessions[i], now))
                s = &sessions[i];
        if (s) {
            s->taken = 1;
            round_left--;
            zhandle_t *zh = s->zh;
            int st = s->state;
            s->zh = NULL;
            pthread_mutex_unlock(&state_mu);
            close_one(s, zh, st);
            pthread_mutex_lock(&state_mu);
            continue;
        }
        if (now >= round_deadline)
            break;
        /* Until a watcher or the opener says something, or the bound. */
        int64_t left = round_deadline - now;
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
    pthread_mutex_unlock(&state_mu);
    return NULL;
}

/* Closes the picked sessions: opens them all at once (zookeeper_init with
 * each one's id and password) and closes each as soon as it is connected
 * (or reported expired, or refused), up to CLOSERS at a time (CLOSERS - 1
 * threads and this one); one slow to connect holds no other back. What
 * is not connected within CONNECT_BOUND_MS of the round's start is given
 * up (its handle freed). Returns once every picked session is done. */
static void close_picked(int dry_run)
{
    if (dry_run) {
        for (size_t i = 0; i < n_sessions; i++)
            if (sessions[i].picked)
                say("dry run: would close %016llx", (unsigned long long)sessions[i].id.client_id);
        return;
    }
    size_t picked = 0;
    pthread_mutex_lock(&state_mu);
    round_deadline = now_ms() + CONNECT_BOUND_MS;
    for (size_t i = 0; i < n_sessions; i++) {
        struct session *s = &sessions[i];
        s->opened = s->taken = 0;
        s->state = 0;
        s->zh = NULL;
        picked += (size_t)s->picked;
    }
    round_left = picked;
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
        zhandle_t *zh = NULL;
        if (s->tls) {
#ifdef ZKELECT_HAVE_ZK_TLS
            /* zookeeper_init_ssl takes no log callback: what it says before
             * the one set here goes to stderr, /dev/null without --debug. */
            zh = zookeeper_init_ssl(s->hosts, s->tls, watcher, s->timeout_ms, &s->id, s, 0);
            if (zh)
                zoo_set_log_callback(zh, drop_log);
            else
                say("zookeeper_init %016llx: %s", (unsigned long long)s->id.client_id, strerror(errno));
#else
            say("%016llx: this guard was built without TLS; not closed",
                (unsigned long long)s->id.client_id);
#endif
        } else {
            zh = zookeeper_init2(s->hosts, watcher, s->timeout_ms, &s->id, s, 0, drop_log);
            if (!zh)
                say("zookeeper_init %016llx: %s", (unsigned long long)s->id.client_id, strerror(errno));
        }
        pthread_mutex_lock(&state_mu);
        s->zh = zh;
        s->opened = 1;
        if (!zh) {
            /* Nothing to close. */
            s->taken = 1;
            round_left--;
        }
        pthread_cond_broadcast(&state_cv);
        pthread_mutex_unlock(&state_mu);
    }

    closer(NULL);
    for (size_t k = 0; k < n_threads; k++)
        pthread_join(threads[k], NULL);
}

/* ---- draining ------------------------------------------------------------ */

/* How many of this user's orphaned TCP connections (no file refers to them:
 * their process closed them, or died) to anything but the guarded sessions'
 * ZooKeeper servers still have something unacknowledged: in FIN_WAIT1,
 * CLOSING or LAST_ACK. -1 when the kernel cannot be asked. */
static int unacked_orphans(void)
{
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const uid_t uid = geteuid(), ruid = getuid();
    int found = 0;
    static const int families[] = {AF_INET, AF_INET6};
    for (size_t f = 0; f < 2 && found >= 0; f++) {
        struct {
            struct nlmsghdr h;
            struct inet_diag_req_v2 r;
        } req;
        memset(&req, 0, sizeof req);
        req.h.nlmsg_len = sizeof req;
        req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
        req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        req.h.nlmsg_seq = (unsigned)(f + 1);
        req.r.sdiag_family = (uint8_t)families[f];
        req.r.sdiag_protocol = IPPROTO_TCP;
        req.r.idiag_states = 1u << TCP_FIN_WAIT1 | 1u << TCP_CLOSING | 1u << TCP_LAST_ACK;
        struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
        if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) != (ssize_t)sizeof req) {
            found = -1;
            break;
        }
        /* A dump ends in NLMSG_DONE; bounded in reads all the same. */
        int done = 0;
        for (int reads = 0; reads < 4096 && !done; reads++) {
            static char buf[32768] __attribute__((aligned(8)));
            ssize_t n = recv(nl, buf, sizeof buf, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                found = -1;
                break;
            }
            for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
                if (h->nlmsg_type == NLMSG_DONE) {
                    done = 1;
                    break;
                }
                if (h->nlmsg_type == NLMSG_ERROR) {
                    /* A kernel without IPv6 answers the AF_INET6 dump with an
                     * error: nothing of that family to wait for. */
                    struct nlmsgerr *e = NLMSG_DATA(h);
                    if (h->nlmsg_len < NLMSG_LENGTH(sizeof *e) || families[f] != AF_INET6)
                        found = -1;
                    done = 1;
                    break;
                }
                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                    continue;
                const struct inet_diag_msg *m = NLMSG_DATA(h);
                if (m->idiag_inode == 0 && (m->idiag_uid == uid || m->idiag_uid == ruid) &&
                    !is_server(m->idiag_family, m->id.idiag_dst, m->id.idiag_dport))
                    found++;
            }
        }
        if (!done && found >= 0)
            found = -1;
    }
    close(nl);
    return found;
}

/* Until nothing the dead owner sent is unacknowledged, or delay_ms from
 * since: whichever is first. */
static void drain(int64_t since, long delay_ms)
{
    int64_t until = since + delay_ms;
    for (int round = 0; round <= MAX_DELAY_MS; round++) {
        int64_t left = until - now_ms();
        if (left <= 0) {
            say("drain: the delay is over (%ld ms)", delay_ms);
            return;
        }
        int n = unacked_orphans();
        if (n == 0) {
            say("drain: nothing unacknowledged after %lld ms", (long long)(now_ms() - since));
            return;
        }
        /* Unknowable (-1): the whole delay, as without the check. */
        struct timespec ts = n < 0 ? (struct timespec){.tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000}
                                   : (struct timespec){.tv_sec = 0, .tv_nsec = 1000000};
        if (n < 0)
            say("drain: sock_diag unavailable (%s): waiting out the delay", strerror(errno));
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
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
    for (int rounds = 0; rounds < 100000; rounds++) {
        struct pollfd p[MAX_SESSIONS];
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
                    drop_wait(&sessions[i]);
                }
        }
    }
    return now_ms();
}

/* The owner is dead (first evidence at `evidence`): the sessions that wait
 * for nobody first, then the others once what they wait for has ended. */
static void close_all(int64_t evidence, long delay_ms, int dry_run)
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

/* ---- the start ---------------------------------------------------------- */

static void null_fds(void)
{
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    dup2(fd, 0);
    dup2(fd, 1);
    if (!debug)
        dup2(fd, 2);
    if (fd > 2)
        close(fd);
}

static int pidfd_readable(int pidfd, int timeout_ms)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int64_t deadline = now_ms() + timeout_ms;
    for (int i = 0; i < 100; i++) {
        int64_t left = deadline - now_ms();
        int r = poll(&p, 1, left < 0 ? 0 : (int)left);
        if (r > 0)
            return 1;
        if (r == 0 || errno != EINTR)
            return 0;
    }
    return 0;
}

int main(int argc, char **argv)
{
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    long delay_ms = DEFAULT_DELAY_MS;
    int dry_run = 0;
    const char *owner_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--debug") == 0)
            debug = 1;
        else if (strcmp(argv[i], "--dry-run") == 0)
            dry_run = 1;
        else if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            delay_ms = strtol(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || delay_ms < 0 || delay_ms > MAX_DELAY_MS) {
                usage();
                return EXIT_USAGE;
            }
        } else if (argv[i][0] != '-' && !owner_arg)
            owner_arg = argv[i];
        else {
            usage();
            return EXIT_USAGE;
        }
    }
    char *end;
    errno = 0;
    long owner = owner_arg ? strtol(owner_arg, &end, 10) : 0;
    if (!owner_arg || errno || *end || owner < 2 || owner > INT_MAX) {
        usage();
        return EXIT_USAGE;
    }

    /* None of the host's descriptors but the pipe; then 0, 1, 2 on /dev/null. */
    if (syscall(SYS_close_range, PIPE_FD + 1, ~0U, 0) != 0)
        for (int fd = PIPE_FD + 1; fd < 65536; fd++)
            close(fd);
    null_fds();

    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGHUP, &ign, NULL);
    sigaction(SIGPIPE, &ign, NULL);

    struct stat st;
    if (fstat(PIPE_FD, &st) != 0 || !S_ISFIFO(st.st_mode) || (fcntl(PIPE_FD, F_GETFL) & O_ACCMODE) != O_RDONLY) {
        say("fd %d is not the read end of a pipe", PIPE_FD);
        return EXIT_USAGE;
    }
    fcntl(PIPE_FD, F_SETFD, FD_CLOEXEC);
    /* Non-blocking: once the owner is dead the guard reads what is left
     * without waiting on a writer the owner may have leaked. */
    fcntl(PIPE_FD, F_SETFL, fcntl(PIPE_FD, F_GETFL) | O_NONBLOCK);

    if (getppid() != (pid_t)owner) {
        say("the parent is %ld, not the owner %ld", (long)getppid(), owner);
        return EXIT_NOT_OWNER;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)owner, 0);
    if (pidfd < 0) {
        say("pidfd_open(%ld): %s", owner, strerror(errno));
        return errno == ESRCH ? EXIT_NOT_OWNER : EXIT_SYS;
    }
    /* Still our parent after pidfd_open: the pidfd is the owner's. */
    if (getppid() != (pid_t)owner) {
        say("the owner %ld died during the start", owner);
        return EXIT_NOT_OWNER;
    }

    if (setsid() < 0 && getsid(0) != getpid()) {
        say("setsid: %s", strerror(errno));
        return EXIT_SYS;
    }
    pid_t child = fork();
    if (child < 0) {
        say("fork: %s", strerror(errno));
        return EXIT_SYS;
    }
    if (child > 0)
        _exit(EXIT_OK);

    zoo_set_debug_level((ZooLogLevel)0);
    zoo_set_log_stream(NULL);
    say("guarding owner %ld (drain delay %ld ms%s)", owner, delay_ms, dry_run ? ", dry run" : "");

    static char buf[MAX_LINE + 2];
    size_t len = 0;
    int64_t evidence = -1;
    for (;;) {
        struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = PIPE_FD, .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            say("poll: %s", strerror(errno));
            return EXIT_SYS;
        }
        if (p[0].revents) {
            evidence = now_ms();
            say("the owner's pidfd is readable: the owner is dead");
            /* Records it wrote before it died are still in the pipe. */
            if (read_pipe(buf, &len) < 0)
                say("protocol error in the pipe's last records: closing what was read");
            break;
        }
        if (p[1].revents) {
            int rc = read_pipe(buf, &len);
            if (rc < 0) {
                say("protocol error on the pipe: exiting, nothing closed");
                return EXIT_PROTOCOL;
            }
            if (rc > 0) {
                evidence = now_ms();
                say("EOF on the pipe; waiting up to %d ms for the pidfd", EOF_GRACE_MS);
                if (!pidfd_readable(pidfd, EOF_GRACE_MS)) {
                    say("the owner lives: it let go on purpose; exiting, nothing closed");
                    return EXIT_OK;
                }
                say("the owner is dead (pidfd readable %lld ms after EOF)", (long long)(now_ms() - evidence));
                break;
            }
        }
    }

    close_all(evidence, delay_ms, dry_run);
    say("done");
    return EXIT_OK;
}
