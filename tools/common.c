#define _GNU_SOURCE
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *zt_prog = "zkelect";

/* ---- Logging -------------------------------------------------------------- */

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

/* ---- Clocks and numbers --------------------------------------------------- */

int64_t zt_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t zt_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t zt_boottime_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int zt_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* A numeric key's default as the library has it: the tool keeps no copy of
 * the library's defaults (gen/vocabulary.toml holds them). Only memory
 * running out gets 0 here, and the library then refuses the value. */
static int64_t library_default(const char *key)
{
    zkelect_conf_t *conf = zkelect_conf_new();
    char v[32];
    size_t n = sizeof v;
    int64_t out = 0;
    if (conf && zkelect_conf_get(conf, key, v, &n) == ZKELECT_OK)
        zt_parse_i64(v, 0, INT64_MAX, &out);
    zkelect_conf_destroy(conf);
    return out;
}

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

/* ---- Options -------------------------------------------------------------- */

static int opt_i64(const char *name, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
    if (zt_parse_i64(arg, lo, hi, out) == 0)
        return 0;
    zt_err("%s: expected %" PRId64 "..%" PRId64 ", got '%s'", name, lo, hi, arg);
    return -1;
}

int zt_parse(int argc, char **argv, enum zt_cmd cmd, struct zt_opts *o,
             void (*usage)(FILE *))
{
    const struct zt_command_spec *command = &zt_commands[cmd];

    int64_t count_max = o->count_max > 0 ? o->count_max : INT64_MAX;
    memset(o, 0, sizeof *o);
    o->hosts = getenv("ZKELECT_CONNECT");
    o->session_ms = library_default("zk.session.timeout.ms");
    o->connect_ms = library_default("zk.connect.timeout.ms");
    o->grace_ms = ZT_GRACE_DEFAULT;
    o->metrics_interval_ms = ZT_METRICS_INTERVAL_MS_DEFAULT;
    o->count_max = count_max;

    /* 0, not 1: glibc then forgets where a previous scan stopped inside a
     * cluster such as -hh, which it would otherwise resume in this argv. */
    optind = 0;
    opterr = 0;
    int c, at = 1;
    const char *last_value = NULL;
    while ((c = getopt_long(argc, argv, ZT_SHORT_OPTIONS, command->getopt, NULL)) != -1) {
        int bad = 0;
        last_value = optarg;
        /* The argument at fault: optind moves past it, unless the fault is
         * inside a cluster of short options (-xh), which stays current. */
        const char *culprit = optind == at && optind < argc ? argv[optind] : argv[optind - 1];
        at = optind;
        switch (c) {
        case ZT_OPT_CONNECT: o->hosts = optarg; break;
        case ZT_OPT_PATH: o->path = optarg; break;
        case ZT_OPT_ID: o->id = optarg; break;
        case ZT_OPT_AUTH_FILE: o->auth_file = optarg; break;
        case ZT_OPT_SESSION_TIMEOUT_MS:
            bad = opt_i64("--session-timeout-ms", optarg, ZT_SESSION_TIMEOUT_MS_MIN,
                          ZT_SESSION_TIMEOUT_MS_MAX, &o->session_ms);
            break;
        case ZT_OPT_CONNECT_TIMEOUT_MS:
            bad = opt_i64("--connect-timeout-ms", optarg, ZT_CONNECT_TIMEOUT_MS_MIN,
                          ZT_CONNECT_TIMEOUT_MS_MAX, &o->connect_ms);
            break;
        case ZT_OPT_GRACE:
            bad = opt_i64("--grace", optarg, ZT_GRACE_MIN, ZT_GRACE_MAX, &o->grace_ms);
            break;
        case ZT_OPT_COUNT: bad = opt_i64("--count", optarg, ZT_COUNT_MIN, count_max, &o->count); break;
        case ZT_OPT_FIRST_ID:
            bad = opt_i64("--first-id", optarg, INT64_MIN / 2, INT64_MAX / 2, &o->first_id);
            o->have_first = 1;
            break;
        case ZT_OPT_METRICS_LISTEN: o->metrics_listen = optarg; break;
        case ZT_OPT_METRICS_TEXTFILE: o->metrics_textfile = optarg; break;
        case ZT_OPT_METRICS_INTERVAL_MS:
            bad = opt_i64("--metrics-interval-ms", optarg, ZT_METRICS_INTERVAL_MS_MIN,
                          ZT_METRICS_INTERVAL_MS_MAX, &o->metrics_interval_ms);
            break;
        case ZT_OPT_JSON: o->json = 1; break;
        case ZT_OPT_PROMETHEUS: o->prometheus = 1; break;
        case ZT_OPT_ONCE: o->once = 1; break;
        case ZT_OPT_QUIET: o->quiet = 1; break;
        case ZT_OPT_SHARED_SESSION: o->shared = 1; break;
        case ZT_OPT_VERBOSE: o->verbose = 1; break;
        case ZT_OPT_SET: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                zt_err("--set: expected KEY=VALUE, got '%s'", optarg);
                bad = 1;
            } else if (o->nsettings >= ZT_MAX_SETTINGS) {
                zt_err("--set: at most %d settings", ZT_MAX_SETTINGS);
                bad = 1;
            } else {
                o->settings[o->nsettings++] = optarg;
            }
            break;
        }
        case ZT_OPT_HELP: usage(stdout); return ZT_EXIT_OK;
        default:
            zt_err("unknown option or missing value: %s", culprit);
            bad = 1;
        }
        if (bad) {
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
    }
    if (command->takes_cmd) {
        /* "--" ends the options only when it was not an option's value
         * (--id -- CMD gives no id: the command does not start at CMD). */
        if (optind < argc && (strcmp(argv[optind - 1], "--") != 0 || argv[optind - 1] == last_value)) {
            zt_err("the command must follow '--'");
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
        if (optind >= argc) {
            zt_err("no command given (zkelect run [options] -- CMD [ARGS...])");
            usage(stderr);
            return ZT_EXIT_USAGE;
        }
        o->cmd = argv + optind;
    } else if (optind < argc) {
        zt_err("unexpected argument: %s", argv[optind]);
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    if (command->needs_target && (!o->hosts || !*o->hosts || !o->path)) {
        zt_err("--connect (or ZKELECT_CONNECT) and --path are required");
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    return -1;
}

void zt_usage(FILE *f, enum zt_cmd cmd, const char *about, const char *exit_status)
{
    fputs(zt_commands[cmd].synopsis, f);
    fputs("\n", f);
    fputs(about, f);
    fputs("\noptions:\n", f);
    fputs(zt_commands[cmd].options, f);
    fputs("\n", f);
    fputs(exit_status, f);
}

/* ---- Untrusted text ------------------------------------------------------- */

size_t zt_utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t n;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    if (cp >= 0x80 && cp <= 0x9f) /* C1 controls */
        return 0;
    if (cp == 0x2028 || cp == 0x2029) /* line and paragraph separators */
        return 0;
    return n;
}

static void escape(const char *s, char *out, size_t outlen, int word)
{
    if (outlen < 8) {
        if (outlen)
            out[0] = '\0';
        return;
    }
    if (!*s && word) {
        snprintf(out, outlen, "\"\"");
        return;
    }
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        char piece[8];
        size_t n;
        size_t u = zt_utf8_len(p);
        if (u) {
            memcpy(piece, p, u);
            n = u;
        } else if (*p == '\\') {
            memcpy(piece, "\\\\", 2);
            n = 2;
        } else if ((*p > 0x20 && *p < 0x7f && (*p != '"' || !word)) || (*p == ' ' && !word)) {
            piece[0] = (char)*p;
            n = 1;
        } else {
            n = (size_t)snprintf(piece, sizeof piece, "\\x%02x", *p);
        }
        if (o + n + 4 > outlen) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, piece, n);
        o += n;
        p += u ? u : 1;
    }
    out[o] = '\0';
}

void zt_escape(const char *s, char *out, size_t outlen)
{
    escape(s, out, outlen, 1);
}

void zt_escape_text(const char *s, char *out, size_t outlen)
{
    escape(s, out, outlen, 0);
}

void zt_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t u = zt_utf8_len(p);
        if (u) {
            fwrite(p, 1, u, f);
            p += u;
            continue;
        }
        unsigned c = *p++;
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(f, "\\u%04x", c);
            else if (c < 0x80)
                fputc((int)c, f);
            else if (c == 0xc2 && *p >= 0x80 && *p <= 0x9f)
                fprintf(f, "\\u%04x", *p++); /* a C1 control, spelled out */
            else if (c == 0xe2 && p[0] == 0x80 && (p[1] == 0xa8 || p[1] == 0xa9)) {
                fprintf(f, "\\u%04x", 0x2000u | p[1]);
                p += 2;
            } else
                fputs("\\ufffd", f);
        }
    }
    fputc('"', f);
}

void zt_format_time_ms(int64_t epoch_ms, char *buf, size_t len)
{
    time_t secs = (time_t)(epoch_ms / 1000);
    struct tm tm;
    char base[64];
    if (!localtime_r(&secs, &tm) || !strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(buf, len, "%" PRId64, epoch_ms);
        return;
    }
    char zone[16] = "";
    strftime(zone, sizeof zone, "%z", &tm);
    snprintf(buf, len, "%s.%03d%s", base, (int)(epoch_ms % 1000), zone);
}

/* ---- Process trees -------------------------------------------------------- */

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
            if (v[i].pid == except)
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
