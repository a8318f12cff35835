/*
 * The tool's messages: one writer thread for stderr, so that a line is
 * never torn and a full pipe never blocks the election's loop.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *zt_prog = "zkelect";

static int log_pipe[2] = {-1, -1};
static pthread_t log_thread;
static unsigned long log_dropped;

static void *log_pump(void *arg)
{
    (void)arg;
    char buf[4096];
    for (;;) {
        ssize_t n = read(log_pipe[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t off = 0;
        while (off < (size_t)n) {
            ssize_t w = write(STDERR_FILENO, buf + off, (size_t)n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break; /* stderr gone: nothing else to tell anyone */
            off += (size_t)w;
        }
    }
    return NULL;
}

int zt_log_start(void)
{
    if (pipe2(log_pipe, O_CLOEXEC) != 0)
        return -1;
    /* Only our end is non-blocking: stderr itself is shared with the child
     * and must keep the mode it has. */
    fcntl(log_pipe[1], F_SETFL, fcntl(log_pipe[1], F_GETFL) | O_NONBLOCK);
    fcntl(log_pipe[1], F_SETPIPE_SZ, 1 << 16);
    if (pthread_create(&log_thread, NULL, log_pump, NULL) != 0) {
        close(log_pipe[0]);
        close(log_pipe[1]);
        log_pipe[0] = log_pipe[1] = -1;
        return -1;
    }
    return 0;
}

void zt_log_stop(void)
{
    if (log_pipe[1] < 0)
        return;
    if (log_dropped) {
        char msg[128];
        int n = snprintf(msg, sizeof msg, "%s: %lu log lines dropped (stderr was not read)\n",
                         zt_prog, log_dropped);
        /* Non-blocking still: a full pipe drops this line too. */
        ssize_t ignored = write(log_pipe[1], msg, (size_t)n);
        (void)ignored;
    }
    close(log_pipe[1]);
    log_pipe[1] = -1;
    /* The thread may be blocked in write(2) on a stderr nobody reads: the
     * exit (and the command's status) must not wait on it for ever. After
     * ZT_LOG_FLUSH_MS the lines not yet written are lost with the process. */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ZT_LOG_FLUSH_MS / 1000;
    until.tv_nsec += (ZT_LOG_FLUSH_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_clockjoin_np(log_thread, NULL, CLOCK_MONOTONIC, &until) != 0)
        return; /* its read end stays open: the thread still uses it */
    close(log_pipe[0]);
    log_pipe[0] = -1;
}

static void emit_line(const char *line)
{
    if (log_pipe[1] >= 0) {
        size_t n = strlen(line);
        /* Lines up to PIPE_BUF go in whole or not at all. */
        if (write(log_pipe[1], line, n) != (ssize_t)n)
            log_dropped++;
        return;
    }
    zt_writeln(STDERR_FILENO, "%.*s", (int)strcspn(line, "\n"), line);
}

void zt_err(const char *fmt, ...)
{
    char msg[2048], line[2200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s: %s\n", zt_prog, msg);
    emit_line(line);
}

int zt_writeln(int fd, const char *fmt, ...)
{
    char small[1024];
    char *buf = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n >= sizeof small - 1) {
        /* Rare long line (an ERROR message): format again into the heap
         * rather than cut it, the line must stay one write. */
        buf = malloc((size_t)n + 2);
        if (!buf)
            return -1;
        va_start(ap, fmt);
        vsnprintf(buf, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    buf[n++] = '\n';
    size_t off = 0;
    int rc = 0;
    /* Bounded: each pass either writes something or fails. */
    while (off < (size_t)n) {
        ssize_t w = write(fd, buf + off, (size_t)n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            break;
        }
        off += (size_t)w;
    }
    if (buf != small)
        free(buf);
    return rc;
}
