/*
 * zkelect-guard: closes a dead process's ZooKeeper sessions (issue 37).
 * This file: the start and the wait for evidence; records.c the records,
 * service.c the guard as a service (--serve: the same records over a Unix
 * socket, a worker per owner; its own comment says what differs), drain.c
 * the drain, close.c the closing, sasl.c the SASL credentials (guard.h
 * what they share).
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
 * mistaken for it. (Over a connection to the service: "WAIT <sid> fd",
 * the pidfd passed with the line; service.c.) A line longer than 4096 bytes or a malformed line is a protocol error:
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
                        "(the pipe on fd 3)\n"
                        "       zkelect-guard --serve [--socket PATH] [--allow-uid UID,...|any] "
                        "[--max-owners N] [--debug] [--dry-run]\n");
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
 * /proc, or an owner the service cannot see): the guard goes on. A worker
 * of the service (owner_euid >= 0) compares the effective user, which is
 * what SO_PEERCRED gave it. */
long owner_euid = -1;

static int owner_changed_user(long owner)
{
    uid_t r, e, s;
    long ids[3];
    if (owner < 1 || getresuid(&r, &e, &s) != 0 || owner_ids(owner, ids) != 0)
        return 0;
    if (owner_euid >= 0)
        return ids[1] != owner_euid;
    return ids[0] != (long)r || ids[1] != (long)e || ids[2] != (long)s;
}

/* No capability: a guard needs none (its own sockets in sock_diag, pidfds,
 * /proc/OWNER/status, its owner's files as their owner). A guard of a
 * root owner keeps uid 0, not root's powers. The bounding set first (that
 * takes CAP_SETPCAP), then the ambient, effective, permitted and
 * inheritable sets. keep_setid: the service keeps CAP_SETUID and
 * CAP_SETGID (if it had them), with which a worker becomes its peer's
 * user; the worker then drops them with the rest. */
void drop_caps(int keep_setid)
{
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL)
            break;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct caps[2];
    memset(caps, 0, sizeof caps);
    if (keep_setid) {
        struct __user_cap_data_struct had[2];
        if (syscall(SYS_capget, &head, had) == 0) {
            const uint32_t setid = (1u << CAP_SETUID) | (1u << CAP_SETGID);
            caps[0].permitted = had[0].permitted & setid;
            caps[0].effective = had[0].effective & setid;
        }
    }
    syscall(SYS_capset, &head, caps);
}

/* Nothing of the guard is for another process to read, write or trace:
 * not dumpable (its /proc files, the pipe's fd among them, become root's,
 * and a process of the same user can neither ptrace it nor open them), no
 * core, no privilege gained through an exec, no capability kept beyond
 * what it was started with, no host directory held, no environment, and its
 * memory (the credentials) kept out of swap where the limits allow. */
static void harden(int keep_setid)
{
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    drop_caps(keep_setid);
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
 * is taken. Over a connection to the service the line goes on with the
 * owner's drain delay, " <ms>" (into *delay_ms). */
int hello(long *delay_ms)
{
    char line[64];
    size_t n = 0;
    int64_t until = now_ms() + HELLO_WAIT_MS;
    while (n < sizeof line - 1) {
        ssize_t got = read(in_fd, line + n, 1);
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
            struct pollfd p = {.fd = in_fd, .events = POLLIN};
            if (left > 0 && poll(&p, 1, (int)left) >= 0)
                continue;
        }
        say("no hello line in the %s", in_socket ? "connection" : "pipe");
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
    if (errno || (*end && !(in_socket && *end == ' ')) || v != PROTOCOL_VERSION) {
        say("the owner speaks version %s of the protocol, this guard %d: refusing",
            line + strlen(prefix), PROTOCOL_VERSION);
        return EXIT_VERSION;
    }
    if (in_socket) {
        const char *d = end + 1;
        errno = 0;
        long ms = *end ? strtol(d, &end, 10) : -1;
        if (errno || *end || end == d || ms < 0 || ms > MAX_DELAY_MS) {
            say("no drain delay (0..%d) in the hello line", MAX_DELAY_MS);
            return EXIT_PROTOCOL;
        }
        *delay_ms = ms;
    }
    return EXIT_OK;
}

/* The guard proper, once it has its owner's pidfd and its input: reads
 * the records until the evidence of the owner's death, then closes the
 * sessions. Its exit status. */
int guard_owner(long owner, int pidfd, long delay_ms, int dry_run)
{
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
        struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = in_fd, .events = POLLIN}};
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
            if (read_records(buf, &len) < 0)
                say("protocol error in the pipe's last records: closing what was read");
            break;
        }
        if (p[1].revents) {
            /* Alive (its pidfd not readable): its /proc is its own. */
            if (!pidfd_readable(pidfd, 0) && owner_changed_user(owner)) {
                say("the owner %ld changed its user: exiting, nothing closed", owner);
                return EXIT_OK;
            }
            int rc = read_records(buf, &len);
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

/* The private guard's start: the checks, the pidfd on the parent, and the
 * fork into the guard proper. */
static int private_guard(long owner, long delay_ms, int dry_run)
{
    /* None of the host's descriptors but the pipe; then 0, 1, 2 on /dev/null. */
    if (syscall(SYS_close_range, PIPE_FD + 1, ~0U, 0) != 0) {
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = PIPE_FD + 1; fd < (max > 0 ? max : 1048576); fd++)
            close((int)fd);
    }
    null_fds();

    struct stat st;
    if (fstat(PIPE_FD, &st) != 0 || !S_ISFIFO(st.st_mode) || (fcntl(PIPE_FD, F_GETFL) & O_ACCMODE) != O_RDONLY) {
        say("fd %d is not the read end of a pipe", PIPE_FD);
        return EXIT_USAGE;
    }
    fcntl(PIPE_FD, F_SETFD, FD_CLOEXEC);
    /* Non-blocking: once the owner is dead the guard reads what is left
     * without waiting on a writer the owner may have leaked. */
    fcntl(PIPE_FD, F_SETFL, fcntl(PIPE_FD, F_GETFL) | O_NONBLOCK);

    int said = hello(NULL);
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
    return guard_owner(owner, pidfd, delay_ms, dry_run);
}

int main(int argc, char **argv)
{
    /* The service started by systemd's socket unit: the listening socket
     * is fd 3 (sd_listen_fds(3)); read before the environment goes. */
    int activated = -1;
    const char *lp = getenv("LISTEN_PID"), *lf = getenv("LISTEN_FDS");
    if (lp && lf && strtol(lp, NULL, 10) == (long)getpid() && strcmp(lf, "1") == 0)
        activated = PIPE_FD;
    static char runtime_dir[PATH_MAX];
    const char *rd = getenv("RUNTIME_DIRECTORY");
    if (rd)
        snprintf(runtime_dir, sizeof runtime_dir, "%.*s", (int)strcspn(rd, ":"), rd);
    int serving = argc > 1 && strcmp(argv[1], "--serve") == 0;
    harden(serving);
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGHUP, &ign, NULL);
    sigaction(SIGPIPE, &ign, NULL);
    if (serving)
        return serve(argc - 2, argv + 2, activated, runtime_dir);

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
    return private_guard(owner, delay_ms, dry_run);
}
