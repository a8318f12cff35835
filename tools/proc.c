/*
 * Signals and process trees: the signals the tool waits for, and a
 * command's whole tree signalled, as `zkelect run` stops it.
 */
#define _GNU_SOURCE
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int zt_signalfd(int with_sigchld)
{
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    if (with_sigchld)
        sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        zt_err("signalfd: %s", strerror(errno));
    return sfd;
}

struct proc_ent {
    pid_t pid, ppid;
};

/* Every live process's (pid, ppid). The caller frees *out. */
static int scan_procs(struct proc_ent **out, size_t *nout)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    size_t n = 0, cap = 512;
    struct proc_ent *v = malloc(cap * sizeof *v);
    if (!v) {
        closedir(d);
        errno = ENOMEM;
        return -1;
    }
    struct dirent *de;
    /* Bounded by the number of processes the kernel lists. */
    while ((de = readdir(d))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (got <= 0)
            continue;
        buf[got] = '\0';
        /* The command name may hold spaces and ')': parse after the last. */
        char *rp = strrchr(buf, ')');
        char state;
        int ppid;
        if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
            continue;
        if (state == 'Z' || state == 'X')
            continue;
        if (n == cap) {
            struct proc_ent *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
            cap *= 2;
        }
        v[n].pid = (pid_t)atoi(de->d_name);
        v[n].ppid = (pid_t)ppid;
        n++;
    }
    closedir(d);
    *out = v;
    *nout = n;
    return 0;
}

/* Whether pid is this process's crash guard (zkelect-guard, whose last
 * argument is its owner's pid). A guard the library starts again while we
 * are a subreaper is orphaned below us: it is not the command's, and
 * killing it would only make the library start another. */
static int is_our_guard(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0 || (buf[n] = '\0', strcmp(buf, "zkelect-guard\n") != 0))
        return 0;
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 1 || buf[n - 1] != '\0')
        return 0;
    buf[n - 1] = '\0';
    const char *last = buf;
    for (ssize_t i = 0; i < n - 1; i++)
        if (buf[i] == '\0')
            last = buf + i + 1;
    return atol(last) == (long)getpid();
}

int zt_signal_tree(pid_t root, pid_t except, int sig, int *failed, int *first_err,
                   pid_t *first_pid)
{
    struct proc_ent *v;
    size_t n;
    if (scan_procs(&v, &n) != 0)
        return -1;
    pid_t *todo = malloc((n + 1) * sizeof *todo);
    if (!todo) {
        free(v);
        errno = ENOMEM;
        return -1;
    }
    size_t head = 0, tail = 0;
    todo[tail++] = root;
    int count = 0;
    /* Breadth first over parent links: each process enters the list once,
     * since each has one parent. */
    while (head < tail) {
        pid_t parent = todo[head++];
        for (size_t i = 0; i < n && tail <= n; i++) {
            if (v[i].ppid != parent || v[i].pid == root)
                continue;
            todo[tail++] = v[i].pid;
            if (v[i].pid == except || (parent == getpid() && is_our_guard(v[i].pid)))
                continue;
            if (kill(v[i].pid, sig) == 0) {
                count++;
            } else if (errno != ESRCH) {
                if (failed && (*failed)++ == 0) {
                    if (first_err)
                        *first_err = errno;
                    if (first_pid)
                        *first_pid = v[i].pid;
                }
            }
        }
    }
    free(todo);
    free(v);
    return count;
}
