/*
 * zkelect-guard: closes a dead process's ZooKeeper sessions (issue 37).
 * This file: the start, the records and the wait for evidence; drain.c the
 * drain, close.c the closing, sasl.c the SASL credentials (guard.h what
 * they share).
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
 * The process the owner started makes itself closed to other processes
 * (not dumpable: its /proc files are root's and a process of the same user
 * can neither open its pipe through /proc/PID/fd nor trace it; no new
 * privileges, no capability, no core, the working directory /, an empty
 * environment),
 * raises its descriptor limit to the hard one, checks the above, closes
 * every other file descriptor it inherited (close_range(4, ~0)), puts
 * /dev/null on 0, 1 and (unless --debug) 2, ignores SIGINT, SIGHUP and
 * SIGPIPE, reads the hello line, starts a session of its own (setsid: a
 * signal to the owner's process group does not reach it) and forks: the
 * guard proper is the grandchild (its memory locked where the limits
 * allow), and the child the owner started exits at once. Its exit status
 * is the start's verdict:
 *
 *   0  the guard runs      1  bad arguments   2  the parent is not OWNER_PID
 *   (or died meanwhile)    3  a system call failed (pidfd_open, fork, ...)
 *   4  no hello line       5  the hello names another protocol version
 *
 * The owner reaps that child (waitpid on its pid); the guard proper is an
 * orphan of init (or of the nearest subreaper), never a zombie of the owner.
 * The owner gets no SIGCHLD at all when it starts the child with clone()
 * and an exit signal of 0 (then waitpid(pid, &st, __WALL)); with fork or
 * posix_spawn it gets the one SIGCHLD of that child's exit, at start.
 *
 * The pipe carries lines, each a record, in ASCII, ending in '\n'. The
 * first, written by the owner before the start, is the hello:
 *
 *   HELLO zkelect-guard <version>     (this guard: 3; 2 had no SASL record)
 *
 * A guard of another version refuses to start (status 5) and a library of
 * this release says so to its clients; it restarts none more often than its
 * backoff allows. Then, any number of:
 *
 *   ADD <sid> <passwd> <timeout_ms> <connect string>
 *   SRV <sid> <address>:<port>[,<address>:<port>...]
 *   TLS <sid> <ca>,<cert>,<key>[,<key password>]
 *   SASL <sid> <mechanism> <service> <host> <user> <password> <ccache> <keytab> <krb5.conf>
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
 * and WAIT included), DEL withdraws it. SRV gives the addresses (numbers:
 * the guard looks up no name) of the servers the session is connected to,
 * which the drain leaves out; the numeric hosts of the connect string count
 * too. TLS (after the session's ADD) says
 * the session's servers take TLS only: the guard connects to them as the
 * owner did, with the owner's CA file, certificate and key (their paths,
 * as zk.tls.* named them; the key's password too when it has one), the
 * rest of the line. A guard built without TLS takes the record and says
 * (with --debug) that it cannot close that session. SASL (after the
 * session's ADD) says the session's servers require SASL (a server with
 * enforce.auth.schemes=sasl refuses an unauthenticated closeSession): the
 * guard authenticates as the owner did before it closes, with the owner's
 * mechanism (letters, digits, '-', '_'), zk.sasl.service, zk.sasl.host,
 * zk.sasl.user and password (DIGEST-MD5), and for GSSAPI the owner's
 * KRB5CCNAME, KRB5_CLIENT_KTNAME and KRB5_CONFIG, which it sets in its own
 * (otherwise empty) environment while it reads records: the owner's
 * credential cache or keytab. Each field after the mechanism is its bytes
 * in hex (no NUL), or "-" when empty. The password is kept, like the
 * session's, in locked memory and wiped when the session goes. A guard
 * whose client lacks SASL (or TLS and SASL together, for a session with
 * both) takes the record and closes nothing of that session. WAIT makes the session's closing wait, once
 * the owner is dead, for process <pid> (decimal) to end as well: a
 * supervisor's helper that stops the supervised work when the supervisor
 * dies (zkelect run's keeper kills the command's tree), so that the work is
 * gone before the session, and the leadership, is. <pid> 0 withdraws it;
 * a pid that is gone already holds nothing back. The guard opens a pidfd on
 * it when it reads the record, so a later reuse of the number is not
 * mistaken for it. A line longer than 4096 bytes or a malformed line is a protocol error:
 * the guard exits (status 4) without closing anything. There is no bound on
 * the sessions but memory (the table grows); a WAIT whose pidfd cannot be
 * opened for want of descriptors withdraws its session (it is then not
 * closed early, merely not guarded). Each record is wiped from the read
 * buffer once parsed, and a session's password from the table when it goes. Nothing goes back over the pipe. The credentials travel
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
 * without a WAIT (zookeeper_init with the session's id and password; at
 * most 128 handles at a time, fewer when the descriptor limit is lower) and
 * closes each as soon as it is CONNECTED: zookeeper_close,
 * which sends closeSession and waits for its answer (the C client bounds
 * that: 3 s to send, 1.5 s for the answer). Up to 8 closes run at a time (7
 * threads and the main one), so neither a session slow to connect nor one
 * slow to close holds the others back (issue 35). A session the server
 * reports expired (or refuses) is done too; one not connected within 5 s of
 * its opening is given up (its handle freed: ZooKeeper
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
 * guarded sessions' ZooKeeper servers (as ADD and SRV gave them):
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
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"

extern char **environ;

#define PIPE_FD 3
#define EOF_GRACE_MS 1000
#define HELLO_WAIT_MS 1000
/* The protocol's version, in the hello line (cxx/session/crash_guard.cpp). */
#define PROTOCOL_VERSION 3

enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_NOT_OWNER = 2, EXIT_SYS = 3, EXIT_PROTOCOL = 4, EXIT_VERSION = 5 };

struct session *sessions;
static size_t n_allocated;

size_t n_sessions;
int debug;
static struct timespec t_start;

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void say(const char *fmt, ...)
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

void drop_log(const char *message)
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

int hex_digit(int c)
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
        int hi = hex_digit((unsigned char)s[i]), lo = hi < 0 ? -1 : hex_digit((unsigned char)s[i + 1]);
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
    sasl_drop(s);
    free(s->hosts);
    /* The credentials do not outlive their use. */
    explicit_bzero(s, sizeof *s);
    *s = sessions[--n_sessions];
    explicit_bzero(&sessions[n_sessions], sizeof sessions[n_sessions]);
}

/* Kept out of swap where the limits allow (a failure changes nothing). */
static void lock_memory(const void *p, size_t n)
{
    if (n)
        (void)mlock(p, n);
}

/* One more place in the table, grown as the owner's sessions come: NULL
 * when memory is out. The old table is wiped before it is freed. */
static struct session *new_session(void)
{
    if (n_sessions == n_allocated) {
        size_t more = n_allocated ? n_allocated * 2 : 64;
        struct session *t = calloc(more, sizeof *t);
        if (!t)
            return NULL;
        if (n_sessions) {
            memcpy(t, sessions, n_sessions * sizeof *t);
            explicit_bzero(sessions, n_allocated * sizeof *t);
            munlock(sessions, n_allocated * sizeof *t);
        }
        free(sessions);
        sessions = t;
        n_allocated = more;
        lock_memory(sessions, n_allocated * sizeof *t);
    }
    return &sessions[n_sessions++];
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
            if (s->wait_fd < 0 && errno != ESRCH) {
                /* Out of descriptors: closing it without the wait would
                 * hand over before that process is gone. Not guarded
                 * (ZooKeeper expires it after its timeout) rather than
                 * closed too soon. */
                say("WAIT %016llx: pidfd_open: %s: no longer guarded", (unsigned long long)sid, strerror(errno));
                forget(s);
                return 0;
            }
            say("WAIT %016llx for %ld%s", (unsigned long long)sid, pid,
                s->wait_fd < 0 ? " (gone already)" : "");
        }
        return 0;
    }
    if (strncmp(line, "SRV ", 4) == 0) {
        const char *p = line + 4;
        if (parse_sid(p, &sid) != 0 || p[16] != ' ' || p[17] == '\0')
            return -1;
        if (!find(sid))
            return -1;
        learn_servers(p + 17);
        say("SRV %016llx %s", (unsigned long long)sid, p + 17);
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
        lock_memory(s->tls, strlen(s->tls));
        say("TLS %016llx", (unsigned long long)sid);
        return 0;
    }
    if (strncmp(line, "SASL ", 5) == 0) {
        const char *p = line + 5;
        if (parse_sid(p, &sid) != 0 || p[16] != ' ')
            return -1;
        struct session *s = find(sid);
        if (!s || sasl_record(s, p + 17) != 0)
            return -1;
        say("SASL %016llx%s", (unsigned long long)sid,
            sasl_params_of(s) ? "" : ": this guard cannot authenticate it; not closed");
        return 0;
    }
    if (strncmp(line, "ADD ", 4) != 0)
        return -1;
    const char *p = line + 4;
    if (parse_sid(p, &sid) != 0 || p[16] != ' ')
        return -1;
    p += 17;
    unsigned char pw[16];
    if (parse_hex(p, 32, pw) != 0 || p[32] != ' ') {
        explicit_bzero(pw, sizeof pw);
        return -1;
    }
    p += 33;
    char *end;
    errno = 0;
    long t = strtol(p, &end, 10);
    char *hosts = NULL;
    struct session *s = NULL;
    if (!errno && end != p && *end == ' ' && t >= 1 && t <= 3600000 && end[1] != '\0')
        hosts = strdup(end + 1);
    if (hosts) {
        s = find(sid);
        if (!s) {
            s = new_session();
        } else {
            drop_wait(s);
            drop_tls(s);
            sasl_drop(s);
            free(s->hosts);
        }
    }
    if (!s) {
        free(hosts);
        explicit_bzero(pw, sizeof pw);
        return -1;
    }
    memset(s, 0, sizeof *s);
    s->wait_fd = -1;
    s->id.client_id = sid;
    memcpy(s->id.passwd, pw, sizeof pw);
    explicit_bzero(pw, sizeof pw);
    s->timeout_ms = (int)t;
    s->hosts = hosts;
    /* Addresses given as numbers; names are not looked up (SRV). */
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
            /* What moved left its copy behind: a password, say. */
            explicit_bzero(buf + *len - used, used);
            *len -= used;
        }
        if (*len > MAX_LINE)
            return -1;
    }
    return 0;
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

/* The owner's user ids (real, effective, saved) as /proc shows them: 0, or
 * -1 when they cannot be read. */
static int owner_ids(long owner, long ids[3])
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", owner);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int found = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Uid:", 4) == 0) {
            found = sscanf(line + 4, "%ld %ld %ld", &ids[0], &ids[1], &ids[2]) == 3 ? 0 : -1;
            break;
        }
    fclose(f);
    return found;
}

/* Whether the owner still has the user ids the guard was started with. An
 * owner that changed its user (setuid after its clients started) must not
 * keep a guard more privileged than itself, to which it could still write
 * records: the guard exits, closing nothing, and the library starts
 * another as the owner's new user. Asked before each read of the pipe
 * (rare: a record per session change) and never at death. Unknowable (no
 * /proc): the guard goes on. */
static int owner_changed_user(long owner)
{
    uid_t r, e, s;
    long ids[3];
    if (getresuid(&r, &e, &s) != 0 || owner_ids(owner, ids) != 0)
        return 0;
    return ids[0] != (long)r || ids[1] != (long)e || ids[2] != (long)s;
}

/* Nothing of the guard is for another process to read, write or trace:
 * not dumpable (its /proc files, the pipe's fd among them, become root's,
 * and a process of the same user can neither ptrace it nor open them), no
 * core, no privilege gained through an exec, no capability kept beyond
 * what it was started with, no host directory held, no environment, and its
 * memory (the credentials) kept out of swap where the limits allow. */
static void harden(void)
{
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* No capability: it needs none (its own sockets in sock_diag, pidfds,
     * /proc/OWNER/status, its owner's files as their owner). A guard of a
     * root owner keeps uid 0, not root's powers. The bounding set first
     * (that takes CAP_SETPCAP), then the ambient, effective, permitted and
     * inheritable sets. */
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL)
            break;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct no_caps[2];
    memset(no_caps, 0, sizeof no_caps);
    syscall(SYS_capset, &head, no_caps);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    if (chdir("/") != 0)
        say("chdir /: %s", strerror(errno));
    /* Wiped, not only dropped: /proc/PID/environ shows the strings the
     * exec left (the library passes none; another starter may). */
    for (char **e = environ; e && *e; e++)
        explicit_bzero(*e, strlen(*e));
    clearenv();
    /* As many sessions as the descriptor limit allows: the soft limit up
     * to the hard one (the closing opens a window of handles at a time). */
    struct rlimit fds;
    if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur < fds.rlim_max) {
        fds.rlim_cur = fds.rlim_max;
        setrlimit(RLIMIT_NOFILE, &fds);
    }
}

/* The first line in the pipe, written by the owner before the start:
 * "HELLO zkelect-guard <version>". Read here, by the process whose exit
 * status is the start's verdict, so that a guard of another release
 * refuses at once and says why (EXIT_VERSION), rather than dying later on
 * a record it does not know. Read a byte at a time: nothing after the line
 * is taken. */
static int hello(void)
{
    char line[64];
    size_t n = 0;
    int64_t until = now_ms() + HELLO_WAIT_MS;
    while (n < sizeof line - 1) {
        ssize_t got = read(PIPE_FD, line + n, 1);
        if (got == 1) {
            if (line[n] == '\n')
                break;
            n++;
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && errno == EAGAIN) {
            int64_t left = until - now_ms();
            struct pollfd p = {.fd = PIPE_FD, .events = POLLIN};
            if (left > 0 && poll(&p, 1, (int)left) >= 0)
                continue;
        }
        say("no hello line in the pipe");
        return EXIT_PROTOCOL;
    }
    line[n] = '\0';
    const char *prefix = "HELLO zkelect-guard ";
    if (strncmp(line, prefix, strlen(prefix)) != 0) {
        say("not a hello line: the owner speaks another protocol");
        return EXIT_PROTOCOL;
    }
    char *end;
    errno = 0;
    long v = strtol(line + strlen(prefix), &end, 10);
    if (errno || *end || v != PROTOCOL_VERSION) {
        say("the owner speaks version %s of the protocol, this guard %d: refusing",
            line + strlen(prefix), PROTOCOL_VERSION);
        return EXIT_VERSION;
    }
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    harden();
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
    if (syscall(SYS_close_range, PIPE_FD + 1, ~0U, 0) != 0) {
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = PIPE_FD + 1; fd < (max > 0 ? max : 1048576); fd++)
            close((int)fd);
    }
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

    int said = hello();
    if (said != EXIT_OK)
        return said;

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
    /* Memory locks are not inherited through fork: taken here. */
    (void)mlockall(MCL_CURRENT);

    zoo_set_debug_level((ZooLogLevel)0);
    zoo_set_log_stream(NULL);
    say("guarding owner %ld (drain delay %ld ms%s)", owner, delay_ms, dry_run ? ", dry run" : "");

    static char buf[MAX_LINE + 2];
    lock_memory(buf, sizeof buf);
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
            /* Alive (its pidfd not readable): its /proc is its own. */
            if (!pidfd_readable(pidfd, 0) && owner_changed_user(owner)) {
                say("the owner %ld changed its user: exiting, nothing closed", owner);
                return EXIT_OK;
            }
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
