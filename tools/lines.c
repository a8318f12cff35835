#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "lines.h"

#include <string.h>

char *zt_lines_space(struct zt_lines *l, size_t *room)
{
    /* One byte is kept for the NUL that ends the last line. */
    *room = sizeof l->buf - 1 - l->used;
    return l->buf + l->used;
}

int zt_lines_commit(struct zt_lines *l, size_t got, zt_line_fn fn, void *ctx)
{
    l->used += got;
    size_t start = 0;
    int rc = 0;
    while (rc == 0) {
        char *nl = memchr(l->buf + start, '\n', l->used - start);
        if (!nl)
            break;
        *nl = '\0';
        if (l->discarding)
            l->discarding = 0; /* the end of a line already dropped */
        else
            rc = fn(ctx, l->buf + start);
        start = (size_t)(nl - l->buf) + 1;
    }
    l->used -= start;
    memmove(l->buf, l->buf + start, l->used);
    /* A full buffer without '\n' is a line too long to keep. Its tail, once
     * the '\n' comes, must not pass for a command of its own. */
    if (rc == 0 && l->used == sizeof l->buf - 1) {
        l->used = 0;
        if (!l->discarding) {
            l->discarding = 1;
            rc = fn(ctx, NULL);
        }
    }
    return rc;
}

int zt_lines_finish(struct zt_lines *l, zt_line_fn fn, void *ctx)
{
    size_t n = l->used;
    int discarding = l->discarding;
    l->used = 0;
    l->discarding = 0;
    if (n == 0 || discarding)
        return 0;
    l->buf[n] = '\0';
    return fn(ctx, l->buf);
}

void zt_command_parse(char *line, struct zt_command *c)
{
    static const struct {
        const char *word;
        enum zt_verb verb;
    } verbs[] = {
        {"join", ZT_VERB_JOIN},
        {"resign", ZT_VERB_RESIGN},
        {"status", ZT_VERB_STATUS},
        {"transfer", ZT_VERB_TRANSFER},
        {"quit", ZT_VERB_QUIT},
    };
    char *save = NULL;
    c->word = strtok_r(line, " \t\r", &save);
    c->arg = c->word ? strtok_r(NULL, " \t\r", &save) : NULL;
    c->arg2 = c->arg ? strtok_r(NULL, " \t\r", &save) : NULL;
    c->verb = c->word ? ZT_VERB_UNKNOWN : ZT_VERB_NONE;
    for (size_t i = 0; c->word && i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(c->word, verbs[i].word))
            c->verb = verbs[i].verb;
}
