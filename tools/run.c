/*
 * zkelect run: run a command only while this process leads an election.
 *
 * One thread, one poll(2) loop over the election's event fd and a signalfd
 * (SIGCHLD, SIGTERM, SIGINT, SIGHUP); the only timer is the grace period
 * between SIGTERM and SIGKILL, kept as the poll timeout.
 *
 * Safety story: the child runs in its own process group and is started only
 * after ELECTED while the lease holds (zkelect_is_leader). On any DEPOSED the
 * whole group gets SIGTERM at once and SIGKILL after --grace. If this process
 * dies, even by SIGKILL, the child gets SIGKILL from the kernel
 * (PR_SET_PDEATHSIG). What nobody can prevent: while this process is frozen
 * (SIGSTOP, swapped out) its child keeps running; the moment it resumes past
 * its lease the library deposes it and the child is stopped before anything
 * else happens here.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void usage(FILE *f)
{
    fputs("usage: zkelect run --connect HOSTS --path P [--id ID] [--session-timeout-ms MS]\n"
          "                   [--connect-timeout-ms MS] [--grace MS] [--once] [--quiet]\n"
          "                   [--set KEY=VALUE]...\n"
          "                   -- CMD [ARGS...]\n"
          "\n"
          "Volunteers in the election at P and runs CMD only while leading, with\n"
          "ZKELECT_TOKEN (fencing token), ZKELECT_PATH and ZKELECT_ID in its environment.\n"
          "On loss of leadership CMD's process group gets SIGTERM at once and SIGKILL\n"
          "after --grace ms (default 5000); then it waits to lead again (--once: exits 4).\n"
          "When CMD exits by itself: resign, exit with its status (128+N if killed by\n"
          "signal N). SIGTERM/SIGINT/SIGHUP: stop CMD the same way, resign, exit 128+N.\n"
          "\n"
          "  --connect HOSTS          ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
          "  --path P                 election path (absolute)\n"
          "  --id ID                  participant id (default <hostname>-<pid>)\n"
          "  --session-timeout-ms MS  requested session timeout (default 10000)\n"
          "  --connect-timeout-ms MS  give up connecting after MS (default 15000)\n"
          "  --grace MS               SIGTERM -> SIGKILL delay (default 5000)\n"
          "  --once                   exit 4 after losing leadership instead of waiting\n"
          "  --quiet                  no progress lines on stderr\n"
          "\n"
          "Exit status: CMD's status; 1 failure; 2 bad arguments; 3 no connection within\n"
          "the connect timeout; 4 leadership lost under --once; 128+N stopped by signal N.\n",
          f);
}

struct runner {
    zkelect_client_t *client;
    zkelect_election_t *election;
    const char *path;
    const char *id;
    char **cmd;
    int64_t grace_ms;
    int once, quiet;

    int leading;       /* between ELECTED and DEPOSED, per the events */
    int64_t token;
    pid_t child;       /* 0: none; also its process group id */
    int stopping;      /* the group got SIGTERM from us */
    int killed;        /* ... and SIGKILL */
    int64_t kill_at;   /* monotonic ms of the SIGKILL, while stopping */
    int lost;          /* leadership was lost (for --once) */
    int quit_sig;      /* a signal asked us to leave */
    int fatal;         /* an error we cannot go on from */
    int child_done;    /* the child exited by itself */
    int child_status;  /* its exit code, shell style */
    int max_fd;
};

static void note(const struct runner *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(const struct runner *r, const char *fmt, ...)
{
    if (r->quiet)
        return;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    zt_writeln(STDERR_FILENO, "%s: %s", zt_prog, msg);
}

/* The child's environment: ours minus stale ZKELECT_* values, plus the
 * term's. Built before fork because the child may only make
 * async-signal-safe calls (the parent has library threads). */
static char **child_env(const struct runner *r)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 4, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strncmp(environ[i], "ZKELECT_TOKEN=", 14) || !strncmp(environ[i], "ZKELECT_PATH=", 13) ||
            !strncmp(environ[i], "ZKELECT_ID=", 11))
            continue;
        env[k++] = environ[i];
    }
    char *tok = NULL, *path = NULL, *id = NULL;
    if (asprintf(&tok, "ZKELECT_TOKEN=%" PRId64, r->token) < 0)
        tok = NULL;
    if (asprintf(&path, "ZKELECT_PATH=%s", r->path) < 0)
        path = NULL;
    if (asprintf(&id, "ZKELECT_ID=%s", r->id) < 0)
        id = NULL;
    if (!tok || !path || !id) {
        free(tok);
        free(path);
        free(id);
        free(env);
        return NULL;
    }
    env[k++] = tok;
    env[k++] = path;
    env[k++] = id;
    env[k] = NULL;
    return env;
}

static void free_env(char **env)
{
    size_t n = 0;
    while (env[n])
        n++;
    /* The last three are ours; the rest belong to environ. */
    for (size_t i = n >= 3 ? n - 3 : 0; i < n; i++)
        free(env[i]);
    free(env);
}

static int spawn(struct runner *r)
{
    char **env = child_env(r);
    if (!env) {
        zt_err("out of memory");
        return -1;
    }
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) != 0) {
        zt_err("pipe: %s", strerror(errno));
        free_env(env);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        zt_err("fork: %s", strerror(errno));
        close(errpipe[0]);
        close(errpipe[1]);
        free_env(env);
        return -1;
    }
    if (pid == 0) {
        /* Async-signal-safe calls only from here to exec. */
        sigset_t none;
        sigemptyset(&none);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* The parent may have died before prctl took effect: then nobody
         * would ever send the signal. */
        if (getppid() != parent)
            _exit(1);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The ZooKeeper sockets and our signalfd must not leak into CMD. */
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
            for (int fd = 3; fd < r->max_fd; fd++)
                if (fd != errpipe[1])
                    fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        execvpe(r->cmd[0], r->cmd, env);
        int e = errno;
        ssize_t ignored = write(errpipe[1], &e, sizeof e);
        (void)ignored;
        _exit(e == ENOENT ? 127 : 126);
    }
    /* Both sides set the group so neither order of scheduling leaves a
     * moment where a killpg would miss the child. */
    setpgid(pid, pid);
    close(errpipe[1]);
    free_env(env);
    r->child = pid;
    r->stopping = r->killed = 0;
    int e = 0;
    ssize_t got;
    /* Returns at exec (CLOEXEC closes the pipe) or when the child exits. */
    do
        got = read(errpipe[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(errpipe[0]);
    if (got == (ssize_t)sizeof e)
        zt_err("cannot execute '%s': %s", r->cmd[0], strerror(e));
    else
        note(r, "leading (token %" PRId64 "): started '%s', pid %d", r->token, r->cmd[0],
             (int)pid);
    return 0;
}

static void stop_child(struct runner *r, const char *why)
{
    if (!r->child || r->stopping)
        return;
    r->stopping = 1;
    r->kill_at = zt_monotonic_ms() + r->grace_ms;
    if (killpg(r->child, SIGTERM) != 0 && errno != ESRCH)
        zt_err("killpg %d: %s", (int)r->child, strerror(errno));
    note(r, "%s: sent SIGTERM to process group %d (SIGKILL in %" PRId64 " ms)", why,
         (int)r->child, r->grace_ms);
}

static void reap(struct runner *r)
{
    if (!r->child)
        return;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    /* Peek first: while the child is a zombie its pid (our group id) cannot
     * be reused, so the straggler kill below cannot hit a stranger. */
    if (waitid(P_PID, (id_t)r->child, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
        return;
    /* Whatever the child left in its group must not outlive the term. */
    killpg(r->child, SIGKILL);
    int status = 0;
    if (waitpid(r->child, &status, 0) < 0)
        return;
    int code = WIFEXITED(status) ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : 1;
    if (r->stopping) {
        note(r, "child %d stopped (status %d)", (int)r->child, code);
    } else {
        note(r, "child %d exited by itself (status %d)", (int)r->child, code);
        r->child_done = 1;
        r->child_status = code;
    }
    r->child = 0;
    r->stopping = r->killed = 0;
}

static void on_event(struct runner *r, zkelect_event_t *ev)
{
    int type = zkelect_event_type(ev);
    switch (type) {
    case ZKELECT_EV_ELECTED:
        r->leading = 1;
        r->token = zkelect_event_token(ev);
        break;
    case ZKELECT_EV_DEPOSED:
        if (zkelect_event_reason(ev) == ZKELECT_REASON_RESIGNED) {
            r->leading = 0;
            break;
        }
        if (r->leading)
            r->lost = 1;
        r->leading = 0;
        note(r, "leadership lost (%s)", zkelect_reason_name(zkelect_event_reason(ev)));
        stop_child(r, "leadership lost");
        break;
    case ZKELECT_EV_FOLLOWING:
        note(r, "waiting: queued behind '%s'", zkelect_event_id(ev));
        break;
    case ZKELECT_EV_ERROR:
        zt_err("%s (%s)", zkelect_event_message(ev), zkelect_err_name(zkelect_event_error(ev)));
        if (zkelect_event_error(ev) == ZKELECT_EAUTH) {
            r->fatal = 1;
            stop_child(r, "election failed");
        }
        break;
    default:
        note(r, "%s: %s", zkelect_event_type_name(type), zkelect_event_message(ev));
        break;
    }
}

int zt_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"connect", required_argument, 0, 'c'},
        {"path", required_argument, 0, 'p'},
        {"id", required_argument, 0, 'i'},
        {"session-timeout-ms", required_argument, 0, 't'},
        {"connect-timeout-ms", required_argument, 0, 'C'},
        {"grace", required_argument, 0, 'g'},
        {"once", no_argument, 0, 'o'},
        {"quiet", no_argument, 0, 'q'},
        {"set", required_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    struct runner r;
    memset(&r, 0, sizeof r);
    const char *hosts = getenv("ZKELECT_CONNECT");
    struct zt_settings settings = {{0}, 0};
    int64_t session_ms = 10000, connect_ms = ZT_DEFAULT_CONNECT_TIMEOUT_MS;
    r.grace_ms = 5000;
    char default_id[300];

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': hosts = optarg; break;
        case 'p': r.path = optarg; break;
        case 'i': r.id = optarg; break;
        case 't':
            if (zt_opt_i64("--session-timeout-ms", optarg, 1000, 3600000, &session_ms)) {
                usage(stderr);
                return ZT_EXIT_USAGE;
            }
            break;
        case 'C':
            if (zt_opt_i64("--connect-timeout-ms", optarg, 1, 3600000, &connect_ms)) {
                usage(stderr);
                return ZT_EXIT_USAGE;
            }
            break;
        case 'g':
            if (zt_parse_i64(optarg, 0, 86400000, &r.grace_ms)) {
                zt_err("--grace: expected 0..86400000 ms, got '%s'", optarg);
                usage(stderr);
                return ZT_EXIT_USAGE;
            }
            break;
        case 'o': r.once = 1; break;
        case 'q': r.quiet = 1; break;
        case 'S':
            if (zt_settings_add(&settings, optarg)) {
                usage(stderr);
                return ZT_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return ZT_EXIT_OK;
        default:
            zt_err("unknown option or missing value: %s", argv[optind - 1]);
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
    }
    if (optind < argc && !strcmp(argv[optind - 1], "--")) {
        /* getopt consumed the "--": CMD follows. */
    } else if (optind < argc) {
        zt_err("the command must follow '--'");
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    if (optind >= argc) {
        zt_err("no command given (zkelect run [options] -- CMD [ARGS...])");
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    if (!hosts || !*hosts || !r.path) {
        zt_err("--connect (or ZKELECT_CONNECT) and --path are required");
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    r.cmd = argv + optind;
    if (!r.id) {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        snprintf(default_id, sizeof default_id, "%s-%d", host, (int)getpid());
        r.id = default_id;
    }
    long om = sysconf(_SC_OPEN_MAX);
    r.max_fd = om > 0 && om < 65536 ? (int)om : 65536;

    /* Blocked before the library starts threads: see zt_signalfd. */
    int sfd = zt_signalfd(1);
    if (sfd < 0) {
        return ZT_EXIT_FAILURE;
    }

    int exit_code = ZT_EXIT_FAILURE;
    char err[512] = "";
    zkelect_conf_t *conf = zt_make_conf(hosts, session_ms, connect_ms);
    if (!conf) {
        close(sfd);
        return ZT_EXIT_USAGE;
    }
    if (zt_settings_apply(&settings, conf)) {
        zkelect_conf_destroy(conf);
        close(sfd);
        return ZT_EXIT_USAGE;
    }
    r.client = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!r.client) {
        zt_err("cannot start a ZooKeeper client for %s: %s", hosts, err);
        usage(stderr);
        close(sfd);
        return ZT_EXIT_USAGE;
    }
    r.election = zkelect_election_new(r.client, r.path, r.id, err, sizeof err);
    if (!r.election) {
        zt_err("%s", err);
        usage(stderr);
        exit_code = ZT_EXIT_USAGE;
        goto out;
    }
    int rc = zkelect_client_await_connected(r.client, (int)connect_ms);
    if (rc != 0) {
        zt_err("cannot connect to ZooKeeper at %s%s%s", hosts,
               rc == ZKELECT_ETIMEDOUT ? " within the connect timeout" : ": ",
               rc == ZKELECT_ETIMEDOUT ? "" : zkelect_strerror(rc));
        exit_code = rc == ZKELECT_ETIMEDOUT ? ZT_EXIT_CONNECT : ZT_EXIT_FAILURE;
        goto out;
    }
    rc = zkelect_volunteer(r.election);
    if (rc != 0) {
        zt_err("volunteer: %s", zkelect_strerror(rc));
        goto out;
    }
    note(&r, "volunteered as '%s' at %s", r.id, r.path);

    for (;;) {
        /* Decide first, then wait: every state change below came from an
         * event or a signal handled in the previous pass. */
        if (!r.child) {
            if (r.child_done) {
                exit_code = r.child_status;
                break;
            }
            if (r.quit_sig) {
                exit_code = 128 + r.quit_sig;
                break;
            }
            if (r.fatal)
                break;
            if (r.once && r.lost) {
                exit_code = ZT_EXIT_LOST;
                break;
            }
            if (r.leading && zkelect_is_leader(r.election)) {
                if (spawn(&r) != 0)
                    break;
            }
        }
        int timeout = -1;
        if (r.child && r.stopping && !r.killed) {
            int64_t left = r.kill_at - zt_monotonic_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        struct pollfd pfd[2] = {
            {.fd = zkelect_event_fd(r.election), .events = POLLIN},
            {.fd = sfd, .events = POLLIN},
        };
        int n = poll(pfd, 2, timeout);
        if (n < 0 && errno != EINTR) {
            zt_err("poll: %s", strerror(errno));
            break;
        }
        if (r.child && r.stopping && !r.killed && zt_monotonic_ms() >= r.kill_at) {
            killpg(r.child, SIGKILL);
            r.killed = 1;
            note(&r, "grace period over: sent SIGKILL to process group %d", (int)r.child);
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
            }
        }
        if (pfd[1].revents) {
            struct signalfd_siginfo si;
            for (int i = 0; i < 64 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si; i++) {
                if (si.ssi_signo == SIGCHLD)
                    continue;
                if (!r.quit_sig) {
                    r.quit_sig = (int)si.ssi_signo;
                    note(&r, "got %s: stopping", strsignal((int)si.ssi_signo));
                }
                stop_child(&r, "stop requested");
            }
            /* SIGCHLD coalesces: just look at our one child. */
            reap(&r);
        }
    }

out:
    if (r.child) {
        /* Only on internal failure: never leave the child behind. */
        killpg(r.child, SIGKILL);
        waitpid(r.child, NULL, 0);
    }
    if (r.election) {
        zkelect_resign(r.election);
        zkelect_election_destroy(r.election);
    }
    zkelect_client_destroy(r.client);
    close(sfd);
    return exit_code;
}
