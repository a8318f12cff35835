/*
 * zkelect-guard's records (the protocol: the top of zkelect-guard.c): the
 * table of guarded sessions, filled from the owner's pipe, or from its
 * connection to the guard service (service.c), where a WAIT's process
 * comes as a pidfd passed with the record rather than as a number.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guard.h"

struct session *sessions;
static size_t n_allocated;
size_t n_sessions;

int in_fd = 3;
int in_socket;

/* The pidfds that came with the connection's records, oldest first, not
 * yet taken by their WAIT (a socket's only). */
#define MAX_PASSED 64
static int passed[MAX_PASSED];
static size_t n_passed;

static int take_passed(void)
{
    if (n_passed == 0)
        return -1;
    int fd = passed[0];
    memmove(passed, passed + 1, --n_passed * sizeof passed[0]);
    return fd;
}

/* Whether fd is a pidfd (of a live or dead process), not another file. */
static int is_pidfd(int fd)
{
    return syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0 || errno == ESRCH;
}

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
void lock_memory(const void *p, size_t n)
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

/* WAIT <sid> <pid|fd> (p: after "WAIT "). 0, or -1 on a protocol error. */
static int wait_record(const char *p)
{
    int64_t sid;
    if (parse_sid(p, &sid) != 0 || p[16] != ' ')
        return -1;
    p += 17;
    /* Over a connection, "fd": the pidfd that came with this record.
     * A number there would be a pid of the owner's PID namespace,
     * which need not be the service's: refused. */
    int pidfd = -1;
    long pid = 0;
    if (in_socket && strcmp(p, "fd") == 0) {
        pidfd = take_passed();
        if (pidfd < 0 || !is_pidfd(pidfd)) {
            if (pidfd >= 0)
                close(pidfd);
            return -1;
        }
        pid = -1;
    } else {
        char *end;
        errno = 0;
        pid = strtol(p, &end, 10);
        if (errno || end == p || *end != '\0' || *p == '-' || *p == '+' || pid < 0 || pid > INT_MAX ||
            (in_socket && pid != 0))
            return -1;
    }
    struct session *s = find(sid);
    if (!s) {
        if (pidfd >= 0)
            close(pidfd);
        return -1;
    }
    drop_wait(s);
    if (pidfd >= 0) {
        s->wait_fd = pidfd;
        say("WAIT %016llx for a passed pidfd", (unsigned long long)sid);
    } else if (pid > 0) {
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
    if (strncmp(line, "WAIT ", 5) == 0)
        return wait_record(line + 5);
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

/* One read of the input: a pipe's read(), or a connection's recvmsg(),
 * which keeps the pidfds that come with it for their WAIT records. A
 * descriptor that is no pidfd, or more than are waiting for their
 * records, is a protocol error (-2). */
static ssize_t read_some(char *at, size_t n)
{
    if (!in_socket)
        return read(in_fd, at, n);
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(8 * sizeof(int))];
    } c;
    struct iovec iov = {.iov_base = at, .iov_len = n};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
    ssize_t got = recvmsg(in_fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    int bad = (m.msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *h = got >= 0 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
            if (n_passed < MAX_PASSED && !bad)
                passed[n_passed++] = fd;
            else {
                close(fd);
                bad = 1;
            }
        }
    }
    return bad ? -2 : got;
}

/* Reads what the input has. 1 on EOF, 0 otherwise, -1 on a protocol error. */
int read_records(char *buf, size_t *len)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n = read_some(buf + *len, MAX_LINE + 1 - *len);
        if (n == -2)
            return -1;
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
