/*
 * Text from ZooKeeper and from users is untrusted: escaped before it reaches
 * a terminal, a JSON document or a log line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
