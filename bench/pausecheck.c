/*
 * The resumed leader's first zkelect_is_leader() answer after a pause.
 *
 * A child process leads and spins on is_leader(), reading CLOCK_MONOTONIC
 * before each call. The parent (a second candidacy, on its own session)
 * SIGSTOPs the child, waits until it is itself ELECTED (the child's session
 * expired), then SIGCONTs it. The child's first iteration whose clock read
 * shows a gap of more than half the session timeout is the first call made
 * after the resume; the child reports that answer and how long after the
 * resume is_leader() kept answering 1 (0 when the first answer was 0).
 *
 *   pausecheck --connect HOSTS [--trials K] [--session-timeout-ms T]
 * Prints one JSON object on stdout.
 */
#include "bcommon.h"

#include <signal.h>
#include <sys/wait.h>

struct report {
    int first_answer;
    double gap_ms;
    double claimed_after_resume_ms;
};

static void child(const char *hosts, const char *path, int session_ms, int wfd)
{
    zkelect_client_t *cl = client_open(hosts, session_ms);
    client_wait(cl);
    char err[256];
    zkelect_election_t *e = zkelect_election_new(cl, path, "paused", err, sizeof err);
    if (!e || zkelect_volunteer(e) || zkelect_await_leader(e, 30000)) _exit(3);
    int64_t gap_ns = (int64_t)session_ms * 500000; /* half the session timeout */
    /* read before telling the parent, so a stop that lands before the loop
     * still shows as a gap */
    int64_t prev = mono_ns(), deadline = prev + 120 * 1000000000LL;
    char ready = 'L';
    if (write(wfd, &ready, 1) != 1) _exit(3);
    for (;;) {
        int64_t t = mono_ns();
        int v = zkelect_is_leader(e);
        if (t - prev > gap_ns) {
            struct report r = {v, (t - prev) / 1e6, 0};
            if (v) { /* how long does it go on claiming? */
                while (zkelect_is_leader(e) && mono_ns() - t < 10000000000LL) {}
                r.claimed_after_resume_ms = (mono_ns() - t) / 1e6;
            }
            if (write(wfd, &r, sizeof r) != sizeof r) _exit(3);
            _exit(0); /* the session dies with the process */
        }
        if (t > deadline) _exit(4);
        prev = t;
    }
}

int main(int argc, char **argv)
{
    const char *hosts = opt(argc, argv, "--connect", BENCH_DEFAULT_HOSTS);
    int trials = (int)opt_long(argc, argv, "--trials", 3);
    int session_ms = (int)opt_long(argc, argv, "--session-timeout-ms", 2000);
    char path[128];
    /* the child is a fresh exec of this program: no fork of a threaded client */
    const char *child_fd = opt(argc, argv, "--child-fd", NULL);
    if (child_fd) child(hosts, opt(argc, argv, "--path", "/"), session_ms, atoi(child_fd));
    snprintf(path, sizeof path, "/zkelect_bench_pause_%d/e", (int)getpid());

    zkelect_client_t *cl = client_open(hosts, session_ms);
    client_wait(cl);
    printf("{\"session_timeout_ms\": %d, \"trials\": [", session_ms);
    int zeros = 0;
    for (int k = 0; k < trials; k++) {
        int fds[2];
        if (pipe(fds)) die("pipe");
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            close(fds[0]);
            char fdbuf[16], tbuf[16];
            snprintf(fdbuf, sizeof fdbuf, "%d", fds[1]);
            snprintf(tbuf, sizeof tbuf, "%d", session_ms);
            execl("/proc/self/exe", argv[0], "--connect", hosts, "--path", path,
                  "--session-timeout-ms", tbuf, "--child-fd", fdbuf, (char *)NULL);
            _exit(5);
        }
        close(fds[1]);
        char ready;
        if (read(fds[0], &ready, 1) != 1) die("child did not lead");
        char err[256];
        zkelect_election_t *e = zkelect_election_new(cl, path, "waiting", err, sizeof err);
        if (!e || zkelect_volunteer(e)) die("parent candidacy: %s", err);
        kill(pid, SIGSTOP);
        int64_t t_stop = mono_ns();
        int rc = zkelect_await_leader(e, 60000);
        double stop_to_elected = (mono_ns() - t_stop) / 1e6;
        kill(pid, SIGCONT);
        if (rc) die("parent not elected while the child was stopped: %s", zkelect_strerror(rc));
        struct report r;
        ssize_t got = read(fds[0], &r, sizeof r);
        int status = 0;
        waitpid(pid, &status, 0);
        close(fds[0]);
        if (got != (ssize_t)sizeof r) die("child gave no report (status %d)", status);
        zeros += r.first_answer == 0;
        note("pause trial %d: stopped %.0f ms; first is_leader after resume = %d; claimed %.3f ms",
             k, stop_to_elected, r.first_answer, r.claimed_after_resume_ms);
        printf("%s{\"stop_to_other_elected_ms\": %.1f, \"first_is_leader_after_resume\": %d, "
               "\"claimed_after_resume_ms\": %.3f}", k ? ", " : "", stop_to_elected,
               r.first_answer, r.claimed_after_resume_ms);
        zkelect_election_destroy(e);
    }
    printf("], \"first_answer_zero\": %d}\n", zeros);
    zkelect_client_destroy(cl);
    return 0;
}
