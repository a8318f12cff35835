/* Written by gen/cli.py from gen/cli.toml: edit those and run python3 gen/cli.py. */
#include "options.h"

#include <getopt.h>

static const struct option run_options[] = {
    {"connect", required_argument, 0, ZT_OPT_CONNECT},
    {"path", required_argument, 0, ZT_OPT_PATH},
    {"id", required_argument, 0, ZT_OPT_ID},
    {"priority", required_argument, 0, ZT_OPT_PRIORITY},
    {"session-timeout-ms", required_argument, 0, ZT_OPT_SESSION_TIMEOUT_MS},
    {"connect-timeout-ms", required_argument, 0, ZT_OPT_CONNECT_TIMEOUT_MS},
    {"grace", required_argument, 0, ZT_OPT_GRACE},
    {"once", no_argument, 0, ZT_OPT_ONCE},
    {"quiet", no_argument, 0, ZT_OPT_QUIET},
    {"set", required_argument, 0, ZT_OPT_SET},
    {"auth-file", required_argument, 0, ZT_OPT_AUTH_FILE},
    {"metrics-listen", required_argument, 0, ZT_OPT_METRICS_LISTEN},
    {"metrics-textfile", required_argument, 0, ZT_OPT_METRICS_TEXTFILE},
    {"metrics-interval-ms", required_argument, 0, ZT_OPT_METRICS_INTERVAL_MS},
    {"lease-low-signal", required_argument, 0, ZT_OPT_LEASE_LOW_SIGNAL},
    {"verbose", no_argument, 0, ZT_OPT_VERBOSE},
    {"help", no_argument, 0, ZT_OPT_HELP},
    {0, 0, 0, 0},
};

static const struct option status_options[] = {
    {"connect", required_argument, 0, ZT_OPT_CONNECT},
    {"path", required_argument, 0, ZT_OPT_PATH},
    {"group", required_argument, 0, ZT_OPT_GROUP},
    {"json", no_argument, 0, ZT_OPT_JSON},
    {"session-timeout-ms", required_argument, 0, ZT_OPT_SESSION_TIMEOUT_MS},
    {"connect-timeout-ms", required_argument, 0, ZT_OPT_CONNECT_TIMEOUT_MS},
    {"set", required_argument, 0, ZT_OPT_SET},
    {"auth-file", required_argument, 0, ZT_OPT_AUTH_FILE},
    {"verbose", no_argument, 0, ZT_OPT_VERBOSE},
    {"help", no_argument, 0, ZT_OPT_HELP},
    {0, 0, 0, 0},
};

static const struct option observe_options[] = {
    {"connect", required_argument, 0, ZT_OPT_CONNECT},
    {"path", required_argument, 0, ZT_OPT_PATH},
    {"json", no_argument, 0, ZT_OPT_JSON},
    {"count", required_argument, 0, ZT_OPT_COUNT},
    {"prometheus", no_argument, 0, ZT_OPT_PROMETHEUS},
    {"session-timeout-ms", required_argument, 0, ZT_OPT_SESSION_TIMEOUT_MS},
    {"connect-timeout-ms", required_argument, 0, ZT_OPT_CONNECT_TIMEOUT_MS},
    {"set", required_argument, 0, ZT_OPT_SET},
    {"auth-file", required_argument, 0, ZT_OPT_AUTH_FILE},
    {"verbose", no_argument, 0, ZT_OPT_VERBOSE},
    {"help", no_argument, 0, ZT_OPT_HELP},
    {0, 0, 0, 0},
};

static const struct option candidate_options[] = {
    {"connect", required_argument, 0, ZT_OPT_CONNECT},
    {"path", required_argument, 0, ZT_OPT_PATH},
    {"first-id", required_argument, 0, ZT_OPT_FIRST_ID},
    {"count", required_argument, 0, ZT_OPT_COUNT},
    {"priority", required_argument, 0, ZT_OPT_PRIORITY},
    {"session-timeout-ms", required_argument, 0, ZT_OPT_SESSION_TIMEOUT_MS},
    {"shared-session", no_argument, 0, ZT_OPT_SHARED_SESSION},
    {"connect-timeout-ms", required_argument, 0, ZT_OPT_CONNECT_TIMEOUT_MS},
    {"set", required_argument, 0, ZT_OPT_SET},
    {"auth-file", required_argument, 0, ZT_OPT_AUTH_FILE},
    {"verbose", no_argument, 0, ZT_OPT_VERBOSE},
    {"help", no_argument, 0, ZT_OPT_HELP},
    {0, 0, 0, 0},
};

static const struct option transfer_options[] = {
    {"connect", required_argument, 0, ZT_OPT_CONNECT},
    {"path", required_argument, 0, ZT_OPT_PATH},
    {"to", required_argument, 0, ZT_OPT_TO},
    {"timeout", required_argument, 0, ZT_OPT_TIMEOUT},
    {"session-timeout-ms", required_argument, 0, ZT_OPT_SESSION_TIMEOUT_MS},
    {"connect-timeout-ms", required_argument, 0, ZT_OPT_CONNECT_TIMEOUT_MS},
    {"set", required_argument, 0, ZT_OPT_SET},
    {"auth-file", required_argument, 0, ZT_OPT_AUTH_FILE},
    {"verbose", no_argument, 0, ZT_OPT_VERBOSE},
    {"help", no_argument, 0, ZT_OPT_HELP},
    {0, 0, 0, 0},
};

static const struct option fenced_options[] = {
    {"connect", required_argument, 0, ZT_OPT_CONNECT},
    {"node", required_argument, 0, ZT_OPT_NODE},
    {"fencing-token", required_argument, 0, ZT_OPT_FENCING_TOKEN},
    {"timeout", required_argument, 0, ZT_OPT_TIMEOUT},
    {"session-timeout-ms", required_argument, 0, ZT_OPT_SESSION_TIMEOUT_MS},
    {"connect-timeout-ms", required_argument, 0, ZT_OPT_CONNECT_TIMEOUT_MS},
    {"set", required_argument, 0, ZT_OPT_SET},
    {"auth-file", required_argument, 0, ZT_OPT_AUTH_FILE},
    {"verbose", no_argument, 0, ZT_OPT_VERBOSE},
    {"help", no_argument, 0, ZT_OPT_HELP},
    {0, 0, 0, 0},
};

static const struct option config_options[] = {
    {"connect", required_argument, 0, ZT_OPT_CONNECT},
    {"path", required_argument, 0, ZT_OPT_PATH},
    {"json", no_argument, 0, ZT_OPT_JSON},
    {"session-timeout-ms", required_argument, 0, ZT_OPT_SESSION_TIMEOUT_MS},
    {"connect-timeout-ms", required_argument, 0, ZT_OPT_CONNECT_TIMEOUT_MS},
    {"set", required_argument, 0, ZT_OPT_SET},
    {"auth-file", required_argument, 0, ZT_OPT_AUTH_FILE},
    {"verbose", no_argument, 0, ZT_OPT_VERBOSE},
    {"help", no_argument, 0, ZT_OPT_HELP},
    {0, 0, 0, 0},
};

const struct zt_command_spec zt_commands[ZT_CMD__COUNT] = {
    [ZT_CMD_RUN] = {
        .name = "run",
        .getopt = run_options,
        .takes_cmd = 1,
        .takes_operands = 0,
        .needs_target = 1,
        .synopsis = "usage: zkelect run --connect HOSTS --path P [--id ID] [--priority N]\n"
                    "                   [--session-timeout-ms MS] [--connect-timeout-ms MS]\n"
                    "                   [--grace MS] [--once] [--quiet] [--set KEY=VALUE]...\n"
                    "                   [--auth-file FILE] [--metrics-listen HOST:PORT]\n"
                    "                   [--metrics-textfile FILE] [--metrics-interval-ms MS]\n"
                    "                   [--lease-low-signal SIG] [--verbose] -- CMD [ARGS...]\n",
        .options = "  --connect HOSTS           ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
                   "  --path P                  election path (absolute)\n"
                   "  --id ID                   participant id (default <hostname>-<pid>)\n"
                   "  --priority N              leadership priority, 0 to 255 (default 0: none)\n"
                   "  --session-timeout-ms MS   requested session timeout (default 10000)\n"
                   "  --connect-timeout-ms MS   give up connecting after MS (default 15000)\n"
                   "  --grace MS                SIGTERM -> SIGKILL delay while still leading or\n"
                   "                            handing over (default 5000)\n"
                   "  --once                    exit 4 after losing leadership instead of waiting\n"
                   "  --quiet                   no progress lines on stderr (but the metrics URL\n"
                   "                            when --metrics-listen asked for port 0)\n"
                   "  --set KEY=VALUE           library option, at most 16 (see zkelect(1))\n"
                   "  --auth-file FILE          zk.auth credentials from FILE (or $ZKELECT_AUTH)\n"
                   "  --metrics-listen HOST:PORT\n"
                   "                            serve Prometheus metrics at\n"
                   "                            http://HOST:PORT/metrics, leadership at /leader\n"
                   "                            (200 while leading, else 503), liveness at /healthz\n"
                   "                            (docs/monitoring.md)\n"
                   "  --metrics-textfile FILE   rewrite FILE (atomically) with the same metrics on\n"
                   "                            every change of state and every\n"
                   "                            --metrics-interval-ms, for node_exporter's textfile\n"
                   "                            collector\n"
                   "  --metrics-interval-ms MS  period of --metrics-textfile (default 15000)\n"
                   "  --lease-low-signal SIG    send SIG (a name such as USR1, or a number) to CMD\n"
                   "                            when the lease runs low (LEASE_LOW)\n"
                   "  --verbose                 the ZooKeeper client's own log on stderr\n"
                   "  -h, --help                print this help and exit\n",
    },
    [ZT_CMD_STATUS] = {
        .name = "status",
        .getopt = status_options,
        .takes_cmd = 0,
        .takes_operands = 0,
        .needs_target = 0,
        .synopsis = "usage: zkelect status --connect HOSTS [--path P] [--group G] [--json]\n"
                    "                      [--session-timeout-ms MS] [--connect-timeout-ms MS]\n"
                    "                      [--set KEY=VALUE]... [--auth-file FILE] [--verbose]\n",
        .options = "  --connect HOSTS           ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
                   "  --path P                  election path (absolute)\n"
                   "  --group G                 show the balanced group at G (balance.group)\n"
                   "                            instead of an election\n"
                   "  --json                    one JSON object instead of the table\n"
                   "  --session-timeout-ms MS   requested session timeout (default 10000)\n"
                   "  --connect-timeout-ms MS   give up connecting after MS (default 15000)\n"
                   "  --set KEY=VALUE           library option, at most 16 (see zkelect(1))\n"
                   "  --auth-file FILE          zk.auth credentials from FILE (or $ZKELECT_AUTH)\n"
                   "  --verbose                 the ZooKeeper client's own log on stderr\n"
                   "  -h, --help                print this help and exit\n",
    },
    [ZT_CMD_OBSERVE] = {
        .name = "observe",
        .getopt = observe_options,
        .takes_cmd = 0,
        .takes_operands = 0,
        .needs_target = 1,
        .synopsis = "usage: zkelect observe --connect HOSTS --path P [--json] [--count N]\n"
                    "                       [--prometheus] [--session-timeout-ms MS]\n"
                    "                       [--connect-timeout-ms MS] [--set KEY=VALUE]...\n"
                    "                       [--auth-file FILE] [--verbose]\n",
        .options = "  --connect HOSTS           ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
                   "  --path P                  election path (absolute)\n"
                   "  --json                    one JSON object per line instead of text\n"
                   "  --count N                 exit 0 after N lines\n"
                   "  --prometheus              print the election as one Prometheus exposition,\n"
                   "                            exit\n"
                   "  --session-timeout-ms MS   requested session timeout (default 10000)\n"
                   "  --connect-timeout-ms MS   give up connecting after MS (default 15000)\n"
                   "  --set KEY=VALUE           library option, at most 16 (see zkelect(1))\n"
                   "  --auth-file FILE          zk.auth credentials from FILE (or $ZKELECT_AUTH)\n"
                   "  --verbose                 the ZooKeeper client's own log on stderr\n"
                   "  -h, --help                print this help and exit\n",
    },
    [ZT_CMD_CANDIDATE] = {
        .name = "candidate",
        .getopt = candidate_options,
        .takes_cmd = 0,
        .takes_operands = 0,
        .needs_target = 1,
        .synopsis = "usage: zkelect candidate --connect HOSTS --path P --first-id I --count K\n"
                    "                         [--priority N] [--session-timeout-ms MS]\n"
                    "                         [--shared-session] [--connect-timeout-ms MS]\n"
                    "                         [--set KEY=VALUE]... [--auth-file FILE] [--verbose]\n",
        .options = "  --connect HOSTS           ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
                   "  --path P                  election path (absolute)\n"
                   "  --first-id I              id of the first participant (an integer)\n"
                   "  --count K                 number of participants, 1 to 100000\n"
                   "  --priority N              leadership priority, 0 to 255 (default 0: none)\n"
                   "  --session-timeout-ms MS   requested session timeout (default 10000)\n"
                   "  --shared-session          one ZooKeeper session for every participant\n"
                   "  --connect-timeout-ms MS   give up unless all sessions connect within MS\n"
                   "                            (default 15000)\n"
                   "  --set KEY=VALUE           library option, at most 16 (see zkelect(1))\n"
                   "  --auth-file FILE          zk.auth credentials from FILE (or $ZKELECT_AUTH)\n"
                   "  --verbose                 the ZooKeeper client's own log on stderr\n"
                   "  -h, --help                print this help and exit\n",
    },
    [ZT_CMD_TRANSFER] = {
        .name = "transfer",
        .getopt = transfer_options,
        .takes_cmd = 0,
        .takes_operands = 0,
        .needs_target = 1,
        .synopsis = "usage: zkelect transfer --connect HOSTS --path P --to ID [--timeout MS]\n"
                    "                        [--session-timeout-ms MS] [--connect-timeout-ms MS]\n"
                    "                        [--set KEY=VALUE]... [--auth-file FILE] [--verbose]\n",
        .options = "  --connect HOSTS           ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
                   "  --path P                  election path (absolute)\n"
                   "  --to ID                   participant id of the candidate that is to lead\n"
                   "  --timeout MS              how long the leader waits for the target to be next\n"
                   "                            (default 10000)\n"
                   "  --session-timeout-ms MS   requested session timeout (default 10000)\n"
                   "  --connect-timeout-ms MS   give up connecting after MS (default 15000)\n"
                   "  --set KEY=VALUE           library option, at most 16 (see zkelect(1))\n"
                   "  --auth-file FILE          zk.auth credentials from FILE (or $ZKELECT_AUTH)\n"
                   "  --verbose                 the ZooKeeper client's own log on stderr\n"
                   "  -h, --help                print this help and exit\n",
    },
    [ZT_CMD_FENCED] = {
        .name = "fenced",
        .getopt = fenced_options,
        .takes_cmd = 0,
        .takes_operands = 1,
        .needs_target = 0,
        .synopsis = "usage: zkelect fenced --connect HOSTS --node NODE --fencing-token T\n"
                    "                      [--timeout MS] [--session-timeout-ms MS]\n"
                    "                      [--connect-timeout-ms MS] [--set KEY=VALUE]...\n"
                    "                      [--auth-file FILE] [--verbose] OP [OP...]\n",
        .options = "  --connect HOSTS           ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
                   "  --node NODE               the leader's candidate node, a full path (default\n"
                   "                            $ZKELECT_NODE)\n"
                   "  --fencing-token T         that term's fencing token (default $ZKELECT_TOKEN)\n"
                   "  --timeout MS              how long to wait for ZooKeeper's answers (default\n"
                   "                            10000)\n"
                   "  --session-timeout-ms MS   requested session timeout (default 10000)\n"
                   "  --connect-timeout-ms MS   give up connecting after MS (default 15000)\n"
                   "  --set KEY=VALUE           library option, at most 16 (see zkelect(1))\n"
                   "  --auth-file FILE          zk.auth credentials from FILE (or $ZKELECT_AUTH)\n"
                   "  --verbose                 the ZooKeeper client's own log on stderr\n"
                   "  -h, --help                print this help and exit\n",
    },
    [ZT_CMD_CONFIG] = {
        .name = "config",
        .getopt = config_options,
        .takes_cmd = 0,
        .takes_operands = 0,
        .needs_target = 0,
        .synopsis = "usage: zkelect config [--connect HOSTS] [--path P] [--json]\n"
                    "                      [--session-timeout-ms MS] [--connect-timeout-ms MS]\n"
                    "                      [--set KEY=VALUE]... [--auth-file FILE] [--verbose]\n",
        .options = "  --connect HOSTS           ZooKeeper connect string (default $ZKELECT_CONNECT)\n"
                   "  --path P                  accepted and ignored\n"
                   "  --json                    one JSON object instead of the table\n"
                   "  --session-timeout-ms MS   requested session timeout (default 10000)\n"
                   "  --connect-timeout-ms MS   give up connecting after MS (default 15000)\n"
                   "  --set KEY=VALUE           library option, at most 16 (see zkelect(1))\n"
                   "  --auth-file FILE          zk.auth credentials from FILE (or $ZKELECT_AUTH)\n"
                   "  --verbose                 the ZooKeeper client's own log on stderr\n"
                   "  -h, --help                print this help and exit\n",
    },
};

const char *const zt_secret_keys[] = {
    "zk.auth",
    "zk.tls.key.password",
    0,
};
