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
          "commands:\n"
          "  run        run a command only while this process leads an election\n"
          "  status     show the candidates of an election in queue order\n"
          "  observe    print one line per leader change\n"
          "  candidate  host participants driven by the line protocol (tests, benchmarks)\n"
          "  config     list the configuration keys, their defaults and current values\n"
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
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        {"candidate", zt_cmd_candidate},
        {"run", zt_cmd_run},
        {"status", zt_cmd_status},
        {"observe", zt_cmd_observe},
        {"config", zt_cmd_config},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (!strcmp(cmd, cmds[i].name)) {
            static char prog[64];
            snprintf(prog, sizeof prog, "zkelect %s", cmds[i].name);
            zt_prog = prog;
            /* Subcommands parse argv[1..]: their argv[0] is the command name. */
            return cmds[i].fn(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "zkelect: unknown command '%s'\n", cmd);
    usage(stderr);
    return ZT_EXIT_USAGE;
}
