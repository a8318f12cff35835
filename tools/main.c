/*
 * zkelect: leader election on ZooKeeper from the shell.
 * Subcommands live in their own files; this only dispatches.
 */
#define _GNU_SOURCE
#include "common.h"
#include "keeper.h"
#include "metrics.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: zkelect <command> [options]\n"
          "\n"
          "commands:\n" ZT_COMMANDS_HELP
          "\n"
          "  zkelect <command> --help   options of a command\n"
          "  zkelect --version          library and tool version\n"
          "\n"
          "ZKELECT_CONNECT in the environment is the default for --connect;\n"
          "ZKELECT_AUTH (or --auth-file FILE) gives zk.auth credentials;\n"
          "--verbose prints the ZooKeeper client's own log on stderr.\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return ZT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return ZT_EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("zkelect %s (libzkelect %s)\n", ZKELECT_VERSION_STRING, zkelect_version_string());
        return ZT_EXIT_OK;
    }
    /* The keeper `zkelect run` puts between itself and CMD (keeper.c); not a
     * command for people, so not in the usage. */
    if (!strcmp(cmd, ZT_KEEPER_ARG)) {
        zt_prog = "zkelect keeper";
        return zt_cmd_keeper(argc - 1, argv + 1);
    }
    /* For tests of the exposition format: not a command for people. */
    if (!strcmp(cmd, "__metrics-render")) {
        zt_prog = "zkelect __metrics-render";
        return zt_cmd_metrics_render(argc - 1, argv + 1);
    }
    /* Names and order come from gen/cli.toml (zt_commands); a command
     * there without an entry here is a build that fails its tests. */
    static int (*const fns[ZT_CMD__COUNT])(int, char **) = {
        [ZT_CMD_RUN] = zt_cmd_run,
        [ZT_CMD_STATUS] = zt_cmd_status,
        [ZT_CMD_OBSERVE] = zt_cmd_observe,
        [ZT_CMD_CANDIDATE] = zt_cmd_candidate,
        [ZT_CMD_CONFIG] = zt_cmd_config,
        [ZT_CMD_TRANSFER] = zt_cmd_transfer,
        [ZT_CMD_FENCED] = zt_cmd_fenced,
    };
    for (int i = 0; i < ZT_CMD__COUNT; i++) {
        if (fns[i] && !strcmp(cmd, zt_commands[i].name)) {
            static char prog[64];
            snprintf(prog, sizeof prog, "zkelect %s", zt_commands[i].name);
            zt_prog = prog;
            /* Subcommands parse argv[1..]: their argv[0] is the command name. */
            return fns[i](argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "zkelect: unknown command '%s'\n", cmd);
    usage(stderr);
    return ZT_EXIT_USAGE;
}
