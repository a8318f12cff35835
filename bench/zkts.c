/* LD_PRELOAD: the ZooKeeper C client writes each log line with one
 * __fprintf_chk(stderr, ...); prefix it with CLOCK_REALTIME ns. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int __vfprintf_chk(FILE *, int, const char *, va_list);
int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    if (fp == stderr) {
        struct timespec ts;
        char buf[8192];
        clock_gettime(CLOCK_REALTIME, &ts);
        int h = snprintf(buf, sizeof buf, "%lld ", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
        n = vsnprintf(buf + h, sizeof buf - h, fmt, ap);
        if (n >= 0) {
            size_t len = (size_t)h + ((size_t)n < sizeof buf - h ? (size_t)n : sizeof buf - h - 1);
            ssize_t w = write(fileno(fp), buf, len); /* one write: lines never interleave */
            (void)w;
        }
    } else {
        n = __vfprintf_chk(fp, flag, fmt, ap);
    }
    va_end(ap);
    return n;
}
