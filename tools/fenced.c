/*
 * zkelect fenced: change ZooKeeper data only while a leader's term lasts
 * (zkelect_client_fenced_commit), from a process that does not hold the
 * candidacy: the command that `zkelect run` started, with the node and token
 * run put in its environment. One batch, committed whole or not at all.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The largest batch the library takes (paths and data); data read from
 * standard input beyond it is refused before anything is sent. */
#define FENCED_MAX_BYTES 1000000

static void fenced_usage(FILE *f)
{
    zt_usage(f, ZT_CMD_FENCED,
             "Writes to ZooKeeper only while the leader whose node is NODE still leads the\n"
             "term whose fencing token is T: one ZooKeeper multi of a check of that node\n"
             "and the operations, committed whole or not at all. Under zkelect run, NODE\n"
             "and T default to $ZKELECT_NODE and $ZKELECT_TOKEN, and --connect to\n"
             "$ZKELECT_CONNECT, all set by run for its command; credentials are not\n"
             "passed on (--auth-file). Once the term is over (resign, transfer, a lost\n"
             "session, a killed run), the write is refused and changes nothing, however\n"
             "late it reaches ZooKeeper. Prints nothing when it committed.\n"
             "\n"
             "OP is one of (each PATH absolute):\n"
             "  set PATH DATA      set PATH's data (any version)\n"
             "  create PATH DATA   create PATH, persistent (its parent must exist)\n"
             "  delete PATH        delete PATH (any version; it must have no children)\n"
             "DATA \"-\" is standard input (once per command line).\n",
             "Exit status: 0 committed; 1 ZooKeeper refused an operation (the message\n"
             "names it; nothing committed) or another failure; 2 bad arguments; 3 no\n"
             "connection within the connect timeout (nothing sent); 4 the term is over\n"
             "(ZKELECT_EFENCED: nothing committed); 5 permission denied; 7 the outcome is\n"
             "unknown (the connection failed or no answer came in time with the write on\n"
             "its way: it may have committed; read what it wrote to find out).\n");
}

/* Standard input, whole: at most FENCED_MAX_BYTES. NULL after printing why. */
static char *read_stdin(size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        zt_err("out of memory");
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            if (cap > FENCED_MAX_BYTES) {
                zt_err("DATA from standard input is longer than %d bytes", FENCED_MAX_BYTES);
                free(buf);
                return NULL;
            }
            char *more = realloc(buf, cap * 2);
            if (!more) {
                zt_err("out of memory");
                free(buf);
                return NULL;
            }
            buf = more;
            cap *= 2;
        }
        ssize_t r = read(STDIN_FILENO, buf + n, cap - n);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            zt_err("reading DATA from standard input: %s", strerror(errno));
            free(buf);
            return NULL;
        }
        n += (size_t)r;
    }
    if (n > FENCED_MAX_BYTES) {
        zt_err("DATA from standard input is longer than %d bytes", FENCED_MAX_BYTES);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* The operands into ops; *names[i] is the i-th operation as the command
 * line gave it (for messages). Returns -1, or ZT_EXIT_USAGE after printing
 * why. *stdin_data owns what was read from standard input. */
static int build_ops(const struct zt_opts *o, zkelect_fenced_ops_t *ops, int *first_arg,
                     char **stdin_data)
{
    int k = 0;
    for (int i = 0; i < o->noperands; k++) {
        const char *op = o->operands[i];
        int is_set = !strcmp(op, "set"), is_create = !strcmp(op, "create");
        int is_delete = !strcmp(op, "delete");
        int want = is_delete ? 1 : 2;
        if (!is_set && !is_create && !is_delete) {
            zt_err("unknown operation '%s' (set, create or delete)", op);
            return ZT_EXIT_USAGE;
        }
        if (i + want >= o->noperands) {
            zt_err("%s needs %s", op, is_delete ? "PATH" : "PATH and DATA");
            return ZT_EXIT_USAGE;
        }
        const char *path = o->operands[i + 1];
        const char *data = is_delete ? NULL : o->operands[i + 2];
        size_t len = data ? strlen(data) : 0;
        if (data && !strcmp(data, "-")) {
            if (*stdin_data) {
                zt_err("DATA \"-\" (standard input) given twice");
                return ZT_EXIT_USAGE;
            }
            if (!(*stdin_data = read_stdin(&len)))
                return ZT_EXIT_USAGE;
            data = *stdin_data;
        }
        int rc = is_set      ? zkelect_fenced_ops_set(ops, path, data, len, -1)
                 : is_create ? zkelect_fenced_ops_create(ops, path, data, len, 0)
                             : zkelect_fenced_ops_delete(ops, path, -1);
        if (rc != ZKELECT_OK) {
            zt_err("%s %s: %s", op, path, zkelect_last_error());
            return rc == ZKELECT_EINVAL ? ZT_EXIT_USAGE : ZT_EXIT_FAILURE;
        }
        first_arg[k] = i;
        i += want + 1;
    }
    return -1;
}

/* The library's message, with the operation ZooKeeper refused named as the
 * command line gave it; the exit status for code. */
static int report(const struct zt_opts *o, zkelect_fenced_ops_t *ops, const int *first_arg,
                  int code)
{
    char msg[2048], path[1024];
    zt_escape_text(zkelect_last_error(), msg, sizeof msg);
    const char *name = zkelect_err_name(code);
    int zk_rc = 0;
    int failed = zkelect_fenced_ops_failed(ops, &zk_rc);
    if (failed >= 0 && (size_t)failed < zkelect_fenced_ops_count(ops)) {
        int i = first_arg[failed];
        zt_escape(o->operands[i + 1], path, sizeof path);
        zt_err("%s: %s (%s %s)", name, msg, o->operands[i], path);
    } else if (strncmp(msg, name, strlen(name)) == 0) {
        zt_err("%s", msg);
    } else {
        zt_err("%s: %s", name, msg);
    }
    switch (code) {
    case ZKELECT_EFENCED: return ZT_EXIT_LOST;
    case ZKELECT_EAUTH: return ZT_EXIT_DENIED;
    case ZKELECT_EINVAL: return ZT_EXIT_USAGE;
    case ZKELECT_ECONNLOSS:
    case ZKELECT_ESESSION_EXPIRED:
    case ZKELECT_ETIMEDOUT:
    case ZKELECT_ECLOSED: return ZT_EXIT_UNKNOWN;
    default: return ZT_EXIT_FAILURE;
    }
}

int zt_cmd_fenced(int argc, char **argv)
{
    struct zt_opts o = {0};
    int rc = zt_parse(argc, argv, ZT_CMD_FENCED, &o, fenced_usage);
    if (rc >= 0)
        return rc;
    int64_t token = 0;
    const char *missing = !o.hosts || !*o.hosts ? "--connect (or ZKELECT_CONNECT)"
                          : !o.node || !*o.node ? "--node (or ZKELECT_NODE)"
                          : !o.token || !*o.token ? "--fencing-token (or ZKELECT_TOKEN)"
                                                  : NULL;
    if (missing) {
        zt_err("%s is required (zkelect run sets the variables for its command)", missing);
        fenced_usage(stderr);
        return ZT_EXIT_USAGE;
    }
    if (zt_parse_i64(o.token, 1, INT64_MAX, &token) != 0) {
        zt_err("--fencing-token: expected a fencing token (an integer above 0), got '%s'", o.token);
        fenced_usage(stderr);
        return ZT_EXIT_USAGE;
    }
    zkelect_fenced_ops_t *ops = zkelect_fenced_ops_new();
    /* Where each operation begins among the operands (at most one per two). */
    int *first_arg = calloc((size_t)o.noperands, sizeof *first_arg);
    char *stdin_data = NULL;
    if (!ops || !first_arg) {
        zt_err("out of memory");
        zkelect_fenced_ops_destroy(ops);
        free(first_arg);
        return ZT_EXIT_FAILURE;
    }
    rc = build_ops(&o, ops, first_arg, &stdin_data);
    if (rc >= 0) {
        if (rc == ZT_EXIT_USAGE)
            fenced_usage(stderr);
        zkelect_fenced_ops_destroy(ops);
        free(first_arg);
        free(stdin_data);
        return rc;
    }
    int exit_code = ZT_EXIT_FAILURE;
    /* A short-lived writer: no crash guard (its session goes with it). */
    zkelect_client_t *client = zt_observer_client(&o, &exit_code);
    if (client && (rc = zt_await(client, &o)) < 0) {
        int code = zkelect_client_fenced_commit(client, o.node, token, ops, (int)o.timeout_ms);
        exit_code = code == ZKELECT_OK ? ZT_EXIT_OK : report(&o, ops, first_arg, code);
    } else if (client) {
        exit_code = rc;
    } else if (exit_code == ZT_EXIT_USAGE) {
        fenced_usage(stderr);
    }
    if (client)
        zkelect_client_destroy(client);
    zkelect_fenced_ops_destroy(ops);
    free(first_arg);
    free(stdin_data);
    return exit_code;
}
