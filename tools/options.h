/* Written by gen/cli.py from gen/cli.toml: edit those and run python3 gen/cli.py. */
#ifndef ZKELECT_TOOL_OPTIONS_H
#define ZKELECT_TOOL_OPTIONS_H

struct option;

/* getopt_long's short options ("+": the first operand ends the options). */
#define ZT_SHORT_OPTIONS "+h"

/* What getopt_long returns for each option. */
enum zt_opt {
    ZT_OPT_CONNECT = 256,
    ZT_OPT_PATH = 257,
    ZT_OPT_ID = 258,
    ZT_OPT_PRIORITY = 259,
    ZT_OPT_SESSION_TIMEOUT_MS = 260,
    ZT_OPT_CONNECT_TIMEOUT_MS = 261,
    ZT_OPT_GRACE = 262,
    ZT_OPT_TO = 263,
    ZT_OPT_TIMEOUT = 264,
    ZT_OPT_NODE = 265,
    ZT_OPT_FENCING_TOKEN = 266,
    ZT_OPT_LEASE_LOW_SIGNAL = 267,
    ZT_OPT_ONCE = 268,
    ZT_OPT_QUIET = 269,
    ZT_OPT_SET = 270,
    ZT_OPT_AUTH_FILE = 271,
    ZT_OPT_METRICS_LISTEN = 272,
    ZT_OPT_METRICS_TEXTFILE = 273,
    ZT_OPT_METRICS_INTERVAL_MS = 274,
    ZT_OPT_GROUP = 275,
    ZT_OPT_JSON = 276,
    ZT_OPT_COUNT = 277,
    ZT_OPT_PROMETHEUS = 278,
    ZT_OPT_FIRST_ID = 279,
    ZT_OPT_SHARED_SESSION = 280,
    ZT_OPT_VERBOSE = 281,
    ZT_OPT_HELP = 'h',
};

enum zt_cmd {
    ZT_CMD_RUN,
    ZT_CMD_STATUS,
    ZT_CMD_OBSERVE,
    ZT_CMD_CANDIDATE,
    ZT_CMD_TRANSFER,
    ZT_CMD_FENCED,
    ZT_CMD_CONFIG,
    ZT_CMD__COUNT
};

/* The bounds and defaults of numeric options (min, max, default; _MAX_CMD
   where one command bounds an option more tightly), as --help and zkelect.1
   say them. */
#define ZT_PRIORITY_MIN 0LL
#define ZT_PRIORITY_MAX 255LL
#define ZT_SESSION_TIMEOUT_MS_MIN 1000LL
#define ZT_SESSION_TIMEOUT_MS_MAX 3600000LL
#define ZT_CONNECT_TIMEOUT_MS_MIN 1LL
#define ZT_CONNECT_TIMEOUT_MS_MAX 3600000LL
#define ZT_GRACE_MIN 0LL
#define ZT_GRACE_MAX 86400000LL
#define ZT_GRACE_DEFAULT 5000LL
#define ZT_TIMEOUT_MIN 1LL
#define ZT_TIMEOUT_MAX 600000LL
#define ZT_TIMEOUT_DEFAULT 10000LL
#define ZT_METRICS_INTERVAL_MS_MIN 100LL
#define ZT_METRICS_INTERVAL_MS_MAX 86400000LL
#define ZT_METRICS_INTERVAL_MS_DEFAULT 15000LL
#define ZT_COUNT_MIN 1LL
#define ZT_COUNT_MAX_CANDIDATE 100000LL

struct zt_command_spec {
    const char *name;
    const struct option *getopt; /* its options, for getopt_long */
    int takes_cmd;               /* "--" CMD [ARGS...] follows the options */
    int takes_operands;          /* operands follow the options, without "--" */
    int needs_target;            /* --connect (or ZKELECT_CONNECT) and --path required */
    const char *synopsis;        /* the usage lines of --help */
    const char *options;         /* the option list of --help */
};

extern const struct zt_command_spec zt_commands[ZT_CMD__COUNT];

/* The commands, one line each, for `zkelect --help`. */
#define ZT_COMMANDS_HELP \
    "  run        run a command only while this process leads an election\n" \
    "  status     show the candidates of an election in queue order, or a balanced group\n" \
    "  observe    print one line per leader change\n" \
    "  candidate  host participants driven by the line protocol (tests, benchmarks)\n" \
    "  transfer   ask the leader of an election to hand leadership to a candidate\n" \
    "  fenced     write to ZooKeeper only while a leader's term lasts\n" \
    "  config     list the configuration keys, their defaults and current values\n"

/* The configuration keys whose values are credentials, NULL-terminated,
   and the same as text for --help. */
extern const char *const zt_secret_keys[];
#define ZT_SECRET_KEYS_TEXT "zk.auth, zk.tls.key.password"

#endif
