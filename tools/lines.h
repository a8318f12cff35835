/*
 * Input side of the participant line protocol (docs/design.md): cutting
 * stdin into lines and a line into a command. Apart from candidate.c's
 * participants so a fuzz harness can drive it (fuzz/fuzz_lines.cpp); it
 * needs nothing but libc.
 */
#ifndef ZKELECT_TOOL_LINES_H
#define ZKELECT_TOOL_LINES_H

#include <stddef.h>

/* The longest line kept, its '\n' not counted. A longer one is dropped
 * whole: no part of it is taken for a command. */
#define ZT_LINE_MAX 4094

struct zt_lines {
    char buf[ZT_LINE_MAX + 2];
    size_t used;    /* bytes of the unfinished line in buf */
    int discarding; /* inside a line too long to keep, until its '\n' */
};

/* Called with each complete line (NUL-terminated, '\n' removed; it may be
 * changed), or with NULL once for each line dropped as too long. Nonzero
 * stops: the rest stays buffered and the value is returned. */
typedef int (*zt_line_fn)(void *ctx, char *line);

/* Where the next read(2) may write, and how much (always at least 1). */
char *zt_lines_space(struct zt_lines *l, size_t *room);

/* `got` bytes were read into the space: hands over every line completed. */
int zt_lines_commit(struct zt_lines *l, size_t got, zt_line_fn fn, void *ctx);

/* End of input: a last line without '\n' is still a line. */
int zt_lines_finish(struct zt_lines *l, zt_line_fn fn, void *ctx);

enum zt_verb {
    ZT_VERB_NONE,     /* blank line */
    ZT_VERB_JOIN,
    ZT_VERB_RESIGN,
    ZT_VERB_STATUS,
    ZT_VERB_TRANSFER,
    ZT_VERB_QUIT,
    ZT_VERB_UNKNOWN
};

struct zt_command {
    enum zt_verb verb;
    const char *word; /* the verb as written (NULL for a blank line) */
    const char *arg;  /* the word after it, or NULL */
    const char *arg2; /* the word after that, or NULL */
};

/* Splits line (in place) at spaces, tabs and '\r'; words after the third
 * are ignored. */
void zt_command_parse(char *line, struct zt_command *c);

#endif
