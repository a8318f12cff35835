/*
 * zkelect-guard --serve: the crash guard as a service, outside the unit
 * that dies (issue 51, item 5). The private guard is its owner's child and
 * shares its fate where a whole unit dies at once: a PID namespace whose
 * init exits with the app, a cgroup killed as one. The service runs
 * elsewhere (a systemd unit of its own, a sidecar container) and guards
 * every process that connects to its socket, each through a worker of its
 * own that runs the private guard's code (zkelect-guard.c) on the
 * connection instead of a pipe.
 *
 *   zkelect-guard --serve [--socket PATH] [--allow-uid UID[,UID...]|any]
 *                 [--mode OCTAL] [--max-owners N] [--debug] [--dry-run]
 *
 *   --socket PATH  where to listen (a Unix stream socket; a stale socket
 *          file there is replaced). Default: the listening socket systemd
 *          passed (socket activation, LISTEN_FDS=1), else
 *          $RUNTIME_DIRECTORY/guard.sock, else /run/zkelect/guard.sock.
 *   --allow-uid  the users besides the service's own whose processes it
 *          guards ("any": every user). A worker becomes its peer's user
 *          (groups and all, as SO_PEERCRED and SO_PEERGROUPS say) before it
 *          reads a record, so it is never more privileged than its owner;
 *          that takes a service run as root. Default: the service's own
 *          user only; a peer of another user is refused.
 *   --mode  the socket file's mode when the service makes it (default
 *          0600, or 0666 with --allow-uid: the list is then the gate).
 *   --max-owners  how many owners at a time (default 4096); one more is
 *          refused.
 *
 * A peer connects, and the service takes, in its own process, the peer's
 * credentials (SO_PEERCRED: pid, user, group as of the connect); a user it
 * does not serve, or one owner too many, gets a refusal line and the
 * connection closes. Otherwise it forks a worker for that peer, which
 *
 *   - takes a pidfd of the peer: SO_PEERPIDFD (Linux 6.5), the process
 *     that connected, whatever became of its pid since and whichever PID
 *     namespace it lives in; on an older kernel pidfd_open of the
 *     SO_PEERCRED pid, checked afterwards against the connection: a peer
 *     end still open means the pid was not free to be reused, unless the
 *     peer forked a child that kept the connection and then died before
 *     the check (its pid reused in that instant too). A peer whose pid the
 *     service cannot see (another PID namespace) needs SO_PEERPIDFD.
 *   - becomes the peer's user (see --allow-uid), drops every capability,
 *     is not dumpable, and reads the hello line, which over a connection
 *     carries the owner's drain delay: "HELLO zkelect-guard 3 <ms>".
 *   - answers one line, the only thing that ever goes back: "OK
 *     zkelect-guard 3", or "NO <why>" before it closes (a refusal by the
 *     service has the same form).
 *   - then reads records and acts as the private guard does: the owner's
 *     pidfd readable, or EOF on the connection followed by the pidfd
 *     within 1 s, is the evidence (the kernel closes a dying process's
 *     files, its end of the connection with them); EOF with the owner
 *     alive is the owner letting go. A WAIT carries no pid (that would be
 *     a pid of the owner's PID namespace) but "fd": the owner passes a
 *     pidfd of that process with the record (SCM_RIGHTS).
 *
 * A worker holds only what its own connection brought: one peer can
 * neither withdraw nor learn another's sessions. The owner's end of the
 * connection is close-on-exec; a child the owner forks without exec keeps
 * a copy of it (the library closes its copy in the child, pthread_atfork),
 * and the pidfd, not the connection, is then what tells the owner's death.
 *
 * The service reaps its workers. SIGTERM or SIGINT ends it (the socket
 * file it made is removed); its workers go on guarding their owners until
 * those let go or die, unless whatever stopped the service stops them too
 * (systemd's control group, a container's PID namespace): an owner whose
 * worker died sees its connection close and connects again, or falls back
 * to a private guard.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

#define DEFAULT_MAX_OWNERS 4096
#define MAX_ALLOWED 64
#define ACCEPTS_PER_WAKE 64

struct policy {
    int any_uid;
    uid_t allowed[MAX_ALLOWED];
    size_t n_allowed;
    long max_owners;
    int dry_run;
};

static int uid_allowed(const struct policy *p, uid_t uid)
{
    if (p->any_uid || uid == geteuid())
        return 1;
    for (size_t i = 0; i < p->n_allowed; i++)
        if (p->allowed[i] == uid)
            return 1;
    return 0;
}

static int parse_uids(struct policy *p, const char *list)
{
    if (strcmp(list, "any") == 0) {
        p->any_uid = 1;
        return 0;
    }
    const char *s = list;
    while (*s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || v < 0 || v > (long)UINT_MAX - 1 || (*end && *end != ',') ||
            p->n_allowed == MAX_ALLOWED)
            return -1;
        p->allowed[p->n_allowed++] = (uid_t)v;
        s = *end ? end + 1 : end;
    }
    return p->n_allowed ? 0 : -1;
}

/* The one line that goes back, and the end of the connection. */
static void refuse(int conn, const char *why)
{
    char line[512];
    int n = snprintf(line, sizeof line, "NO %s\n", why);
    say("refused: %s", why);
    if (n > 0)
        (void)send(conn, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1,
                   MSG_NOSIGNAL | MSG_DONTWAIT);
    close(conn);
}

/* A pidfd of the process that connected, or -1 (*why says so). */
static int peer_pidfd(int conn, pid_t pid, const char **why)
{
    int fd = -1;
    socklen_t len = sizeof fd;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
        return fd;
    if (errno != ENOPROTOOPT && errno != EINVAL) {
        *why = "the peer died as it connected";
        return -1;
    }
    if (pid <= 0) {
        *why = "the peer's pid is not visible to the service (another PID namespace) and this "
               "kernel has no SO_PEERPIDFD (Linux 6.5): share the PID namespace with the service";
        return -1;
    }
    fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {
        *why = "the peer died as it connected";
        return -1;
    }
    /* Still connected: the pid was not free, so the pidfd is the peer's. */
    struct pollfd p = {.fd = conn, .events = POLLRDHUP};
    if (poll(&p, 1, 0) != 0) {
        close(fd);
        *why = "the peer died as it connected";
        return -1;
    }
    return fd;
}

/* The worker takes its peer's user, groups and group: 0, or -1. */
static int become_peer(int conn, const struct ucred *c)
{
    if (c->uid == geteuid())
        return 0;
    gid_t groups[256];
    socklen_t len = sizeof groups;
    int n = 0;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
        n = (int)(len / sizeof(gid_t));
    if (setgroups((size_t)n, groups) != 0 || setresgid(c->gid, c->gid, c->gid) != 0 ||
        setresuid(c->uid, c->uid, c->uid) != 0)
        return -1;
    uid_t r, e, s;
    return getresuid(&r, &e, &s) == 0 && r == c->uid && e == c->uid && s == c->uid ? 0 : -1;
}

static void worker(int conn, const struct ucred *c, const struct policy *p)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    const char *why = NULL;
    int pidfd = peer_pidfd(conn, c->pid, &why);
    if (pidfd < 0) {
        refuse(conn, why);
        _exit(EXIT_NOT_OWNER);
    }
    if (become_peer(conn, c) != 0) {
        char line[160];
        snprintf(line, sizeof line, "this service (uid %ld) cannot act as uid %ld: run it as root",
                 (long)geteuid(), (long)c->uid);
        refuse(conn, line);
        _exit(EXIT_SYS);
    }
    drop_caps(0);
    /* A change of user resets it; not dumpable again. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    in_fd = conn;
    in_socket = 1;
    owner_euid = (long)c->uid;
    long delay_ms = DEFAULT_DELAY_MS;
    int said = hello(&delay_ms);
    if (said != EXIT_OK) {
        char line[96];
        snprintf(line, sizeof line, "this guard speaks version %d of the protocol (hello line: "
                 "HELLO zkelect-guard %d <delay ms>)", PROTOCOL_VERSION, PROTOCOL_VERSION);
        refuse(conn, line);
        _exit(said);
    }
    char ok[48];
    int n = snprintf(ok, sizeof ok, "OK zkelect-guard %d\n", PROTOCOL_VERSION);
    if (send(conn, ok, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
        _exit(EXIT_SYS);
    _exit(guard_owner((long)c->pid, pidfd, delay_ms, p->dry_run));
}

/* Listens at path, replacing a stale socket file: the fd, or -1. */
static int bind_socket(const char *path, mode_t mode)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        fprintf(stderr, "zkelect-guard: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    if (rc != 0 && errno == EADDRINUSE) {
        /* A live service answers there; a stale file refuses. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct stat st;
        if (probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) != 0 && errno == ECONNREFUSED &&
            lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
            unlink(path);
        if (probe >= 0)
            close(probe);
        rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    }
    if (rc != 0 || chmod(path, mode) != 0 || listen(fd, 128) != 0) {
        fprintf(stderr, "zkelect-guard: cannot listen at %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Takes the connections waiting: a worker each, or a refusal. */
static void take(int lfd, const struct policy *p, long *owners, int sfd)
{
    for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
        int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (conn < 0)
            return;
        struct ucred c;
        socklen_t len = sizeof c;
        char why[160];
        if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) {
            refuse(conn, "no peer credentials");
            continue;
        }
        if (!uid_allowed(p, c.uid)) {
            snprintf(why, sizeof why, "uid %ld is not served here (the service runs as uid %ld; "
                     "zkelect-guard --allow-uid)", (long)c.uid, (long)geteuid());
            refuse(conn, why);
            continue;
        }
        if (*owners >= p->max_owners) {
            snprintf(why, sizeof why, "this service guards %ld owners already (--max-owners)", *owners);
            refuse(conn, why);
            continue;
        }
        pid_t w = fork();
        if (w == 0) {
            close(lfd);
            close(sfd);
            worker(conn, &c, p);
        }
        if (w < 0) {
            snprintf(why, sizeof why, "fork: %s", strerror(errno));
            refuse(conn, why);
            continue;
        }
        say("owner %ld (uid %ld): worker %ld", (long)c.pid, (long)c.uid, (long)w);
        ++*owners;
        close(conn);
    }
}

static int serve_usage(void)
{
    fprintf(stderr, "usage: zkelect-guard --serve [--socket PATH] [--allow-uid UID[,UID...]|any] "
                    "[--mode OCTAL] [--max-owners N] [--debug] [--dry-run]\n");
    return EXIT_USAGE;
}

/* The options after --serve: 0, or -1 (usage). */
static int options(int argc, char **argv, struct policy *p, const char **path, long *mode)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--debug") == 0)
            debug = 1;
        else if (strcmp(a, "--dry-run") == 0)
            p->dry_run = 1;
        else if (strcmp(a, "--socket") == 0 && v && *v == '/')
            *path = argv[++i];
        else if (strcmp(a, "--allow-uid") == 0 && v && parse_uids(p, v) == 0)
            ++i;
        else if (strcmp(a, "--mode") == 0 && v && (*mode = strtol(v, &end, 8)) >= 0 && *mode <= 0777 && !*end)
            ++i;
        else if (strcmp(a, "--max-owners") == 0 && v && (p->max_owners = strtol(v, &end, 10)) > 0 && !*end)
            ++i;
        else
            return -1;
    }
    if (*mode < 0)
        *mode = p->any_uid || p->n_allowed ? 0666 : 0600;
    return 0;
}

/* The listening socket: systemd's, or one made at path (its name into
 * made, to be removed at the end). -1 when none. */
static int listening(int activated_fd, const char *path, const char *runtime_dir, long mode,
                     char made[PATH_MAX])
{
    made[0] = '\0';
    if (activated_fd >= 0 && !path) {
        fcntl(activated_fd, F_SETFD, FD_CLOEXEC);
        fcntl(activated_fd, F_SETFL, fcntl(activated_fd, F_GETFL) | O_NONBLOCK);
        return activated_fd;
    }
    if (path)
        snprintf(made, PATH_MAX, "%s", path);
    else
        snprintf(made, PATH_MAX, "%s/guard.sock", runtime_dir && *runtime_dir ? runtime_dir : "/run/zkelect");
    return bind_socket(made, (mode_t)mode);
}

int serve(int argc, char **argv, int activated_fd, const char *runtime_dir)
{
    struct policy p = {.max_owners = DEFAULT_MAX_OWNERS};
    const char *path = NULL;
    long mode = -1;
    if (options(argc, argv, &p, &path, &mode) != 0)
        return serve_usage();
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        if (!debug)
            dup2(fd, 2);
        close(fd);
    }
    /* Blocked before the socket file exists: a SIGTERM from the moment it
     * can be seen is read from the signalfd and removes it, where the
     * default action would end the service and leave the file behind (a
     * client would then find "nothing listens there"). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    char made[PATH_MAX];
    int lfd = listening(activated_fd, path, runtime_dir, mode, made);
    if (lfd < 0)
        return EXIT_SYS;
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        if (made[0])
            unlink(made);
        return EXIT_SYS;
    }
    say("serving at %s (pid %ld)", made[0] ? made : "the socket systemd passed", (long)getpid());
    long owners = 0;
    for (;;) {
        struct pollfd f[2] = {{.fd = lfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(f, 2, -1) < 0 && errno != EINTR)
            return EXIT_SYS;
        if (f[1].revents) {
            struct signalfd_siginfo si;
            int stop = 0;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                stop |= si.ssi_signo != SIGCHLD;
            /* Signals coalesce: every exited worker, not one per signal. */
            while (owners > 0 && waitpid(-1, NULL, WNOHANG) > 0)
                owners--;
            if (stop) {
                if (made[0])
                    unlink(made);
                say("stopped; %ld workers go on guarding their owners", owners);
                return EXIT_OK;
            }
        }
        if (f[0].revents)
            take(lfd, &p, &owners, sfd);
    }
}
