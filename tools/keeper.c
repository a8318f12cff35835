/*
 * zkelect __keeper: the process between `zkelect run` and CMD, so that no
 * descendant of CMD outlives the leadership term, even when `run` itself is
 * killed or frozen.
 *
 * Why a separate process: when a process dies, its orphans go to the nearest
 * ancestor that is a child subreaper, or to init. `run` is one, but if `run`
 * is SIGKILLed nobody is left who knows the tree. The keeper is a subreaper
 * below `run`, so every descendant of CMD, however it daemonizes (setsid,
 * double fork), stays below the keeper; and the keeper outlives `run` just
 * long enough to kill that tree when `run`'s end of the socket closes.
 * A frozen `run` (SIGSTOP) stops sending deadlines; the keeper kills the tree
 * when the last deadline passes, which `run` set short of the moment a
 * successor can be elected.
 *
 * It runs no library code: one thread, poll(2) over the socket and a
 * signalfd for SIGCHLD.
 */
#define _GNU_SOURCE
#include "common.h"
#include "keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int ctl = ZT_KEEPER_FD;
static int ctl_open = 1;

static void tell(int type, int32_t a, int64_t b)
{
    if (!ctl_open)
        return;
    struct zt_kmsg m = {type, a, b};
    if (send(ctl, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof m &&
        errno != EAGAIN)
        ctl_open = 0;
}

static pid_t child;
static int child_status = -1;

/* Reap every child that has exited; remembers the direct child's status. */
static void reap(void)
{
    for (int i = 0; i < 100000; i++) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p <= 0)
            return;
        if (p == child)
            child_status = st;
    }
}

/* SIGKILL the whole tree below us until nothing is left, reaping as we go.
 * Killed processes cannot fork, so each round finds only what was forked
 * during the previous one; bounded in rounds and time all the same. */
static void kill_tree(void)
{
    int64_t until = zt_monotonic_ms() + 10000;
    for (int round = 0; round < 1000 && zt_monotonic_ms() < until; round++) {
        int failed = 0, err = 0;
        pid_t who = 0;
        int n = zt_signal_tree(getpid(), 0, SIGKILL, &failed, &err, &who);
        if (n < 0) {
            /* No /proc to list the tree: the child's process group is the
             * best left. */
            tell(ZT_K_KILLFAIL, errno, 0);
            killpg(child, SIGKILL);
            kill(child, SIGKILL);
            reap();
            break;
        }
        if (failed)
            tell(ZT_K_KILLFAIL, err, who);
        reap();
        if (n == 0 && !failed)
            break;
        if (n <= 0 && failed) {
            /* Only processes we may not signal are left: waiting would not
             * help. run reports it. */
            break;
        }
        /* Give the killed a moment to become zombies, without spinning. */
        struct pollfd none;
        poll(&none, 0, 2);
    }
    /* Whatever died last is reaped here. */
    reap();
}

int zt_cmd_keeper(int argc, char **argv)
{
    /* argv: __keeper -- CMD [ARGS...] */
    if (argc < 3 || strcmp(argv[1], "--") != 0)
        return ZT_EXIT_USAGE;
    char **cmd = argv + 2;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        return ZT_EXIT_FAILURE;
    /* Executed as /proc/self/exe, it would show as "exe" in ps and top. */
    prctl(PR_SET_NAME, "zkelect-keeper");
    /* TERM/INT/HUP stay blocked (systemd's control-group SIGTERM must not
     * take the keeper away before the tree is gone), and so do the job
     * control stops (a frozen keeper enforces nothing); the child unblocks
     * them. The keeper has a session of its own (run made it), so a
     * terminal sends it none of these anyway. */
    sigset_t sigs, none;
    sigemptyset(&none);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGTSTP);
    sigaddset(&sigs, SIGTTIN);
    sigaddset(&sigs, SIGTTOU);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGCHLD, SIG_DFL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        return ZT_EXIT_FAILURE;
    fcntl(ctl, F_SETFD, FD_CLOEXEC);

    tell(ZT_K_READY, 0, 0);
    struct zt_kmsg m;
    ssize_t got;
    do
        got = recv(ctl, &m, sizeof m, 0);
    while (got < 0 && errno == EINTR);
    if (got != (ssize_t)sizeof m || m.type != ZT_K_GO)
        return ZT_EXIT_OK; /* run changed its mind (no longer leading) or died */
    int64_t deadline = m.b;

    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) != 0) {
        tell(ZT_K_EXECFAIL, errno, 0);
        return ZT_EXIT_FAILURE;
    }
    pid_t keeper_pid = getpid();
    child = fork();
    if (child < 0) {
        tell(ZT_K_EXECFAIL, errno, 0);
        return ZT_EXIT_FAILURE;
    }
    if (child == 0) {
        /* Its own process group, in the keeper's session: a signal to
         * run's group or session (a terminal's ^C or ^Z) goes to run, which
         * stops CMD in order, not to CMD directly. */
        setpgid(0, 0);
        /* Should the keeper die with run (each SIGKILLed by pid at once),
         * CMD goes with it rather than on without anyone who knows it. The
         * keeper exits by itself only once CMD is gone. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != keeper_pid)
            _exit(126);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t ignored = write(errpipe[1], &e, sizeof e);
        (void)ignored;
        _exit(e == ENOENT ? 127 : 126);
    }
    setpgid(child, child);
    close(errpipe[1]);
    int e = 0;
    do
        got = read(errpipe[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(errpipe[0]);
    if (got == (ssize_t)sizeof e)
        tell(ZT_K_EXECFAIL, e, 0);
    else
        tell(ZT_K_STARTED, (int32_t)child, 0);

    int killed = 0;
    for (;;) {
        reap();
        if (child_status >= 0) {
            /* CMD is gone: whatever it left behind goes with it. */
            kill_tree();
            tell(ZT_K_DONE, child_status, killed);
            return ZT_EXIT_OK;
        }
        int64_t now = zt_boottime_ms();
        if (!killed && (!ctl_open || now >= deadline)) {
            kill_tree();
            if (ctl_open)
                tell(ZT_K_DEADLINE, 0, now - deadline);
            killed = 1;
            continue;
        }
        int timeout = -1;
        if (!killed) {
            int64_t left = deadline - now;
            timeout = left > 0 ? (left > 60000 ? 60000 : (int)left) : 0;
        } else {
            timeout = 100; /* killed: keep reaping until the child is gone */
        }
        struct pollfd pfd[2] = {
            {.fd = ctl_open ? ctl : -1, .events = POLLIN},
            {.fd = sfd, .events = POLLIN},
        };
        int n = poll(pfd, 2, timeout);
        if (n < 0 && errno != EINTR)
            return ZT_EXIT_FAILURE;
        if (n > 0 && pfd[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                ;
        }
        if (n > 0 && pfd[0].revents) {
            /* Drain every record waiting: only the newest deadline counts. */
            for (int i = 0; i < 1024; i++) {
                got = recv(ctl, &m, sizeof m, MSG_DONTWAIT);
                if (got == (ssize_t)sizeof m) {
                    if (m.type == ZT_K_LEASE)
                        deadline = m.b;
                    else if (m.type == ZT_K_SIGNAL && child_status < 0 && m.a > 0 && m.a < NSIG)
                        kill(child, m.a);
                    continue;
                }
                if (got < 0 && (errno == EAGAIN || errno == EINTR))
                    break;
                ctl_open = 0; /* run is gone */
                break;
            }
        }
    }
}
