/*
 * zkelect transfer: ask the leader of an election, from outside it, to hand
 * leadership to a named candidate (zkelect_client_transfer).
 */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <string.h>

static void transfer_usage(FILE *f)
{
    zt_usage(f, ZT_CMD_TRANSFER,
             "Asks the current leader of the election at P to hand its leadership to the\n"
             "candidate whose participant id is ID (as zkelect status shows it), and waits\n"
             "for the outcome. Takes no part in the election. The candidates ahead of ID\n"
             "step back to the back of the line; the leader's term ends before ID can be\n"
             "elected. Prints \"transferred: ID\" once ID leads.\n",
             "Exit status: 0 ID leads, 1 it does not (the library's code on stderr:\n"
             "ZKELECT_ENOCANDIDATE no such candidate, ZKELECT_ENOLEADER nobody leads,\n"
             "ZKELECT_ENOTSUP the leader or a candidate ahead cannot take part,\n"
             "ZKELECT_ETIMEDOUT / ZKELECT_ETARGET_LOST handed over but not to ID,\n"
             "ZKELECT_ESTATE another transfer under way), 2 bad arguments, 3 no\n"
             "connection within the connect timeout, 5 permission denied.\n");
}

int zt_cmd_transfer(int argc, char **argv)
{
    struct zt_opts o = {0};
    int rc = zt_parse(argc, argv, ZT_CMD_TRANSFER, &o, transfer_usage);
    if (rc >= 0)
        return rc;
    if (!o.to) {
        zt_err("--to is required");
        transfer_usage(stderr);
        return ZT_EXIT_USAGE;
    }
    int exit_code = ZT_EXIT_FAILURE;
    zkelect_client_t *client = zt_client(&o, &exit_code);
    if (!client) {
        if (exit_code == ZT_EXIT_USAGE)
            transfer_usage(stderr);
        return exit_code;
    }
    rc = zt_await(client, &o);
    if (rc >= 0) {
        zkelect_client_destroy(client);
        return rc;
    }
    int code = zkelect_client_transfer(client, o.path, o.to, (int)o.timeout_ms);
    char id[4 * ZKELECT_ID_MAX + 8], msg[2048];
    zt_escape(o.to, id, sizeof id);
    if (code == ZKELECT_OK) {
        printf("transferred: %s\n", id);
        fflush(stdout);
        zkelect_client_destroy(client);
        return ZT_EXIT_OK;
    }
    /* The library's message already begins with the code's name; the code
     * is named here only when the message does not. */
    const char *name = zkelect_err_name(code);
    zt_escape_text(zkelect_last_error(), msg, sizeof msg);
    if (strncmp(msg, name, strlen(name)) == 0)
        zt_err("%s", msg);
    else
        zt_err("%s: %s", name, msg);
    zkelect_client_destroy(client);
    switch (code) {
    case ZKELECT_EINVAL:
        transfer_usage(stderr);
        return ZT_EXIT_USAGE;
    case ZKELECT_EAUTH: return ZT_EXIT_DENIED;
    case ZKELECT_ECONNLOSS: return ZT_EXIT_CONNECT;
    default: return ZT_EXIT_FAILURE;
    }
}
