// The zkelect tool's option parser (zt_parse, tools/parse.c) on argument
// vectors made from the input: the first byte picks the subcommand (which
// options it accepts, its --count limit) and whether ZKELECT_CONNECT is set;
// the rest, cut at NUL bytes, is argv[1..]. The parser must return, never
// exit, whatever it is given; and what it returns must hold together: an
// exit code only with the usage printed once, and on success every value in
// its documented range, every string one of the arguments (or the
// environment), and only the options that subcommand accepts.
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"

extern "C" {
#include "common.h"
}

namespace {

int usage_calls;
void count_usage(FILE *) { ++usage_calls; }

struct Sub {
    const char *name;
    zt_cmd cmd;
    int64_t count_max;
};
const Sub kSubs[] = {
    {"candidate", ZT_CMD_CANDIDATE, 100000},
    {"run", ZT_CMD_RUN, 0},
    {"status", ZT_CMD_STATUS, 0},
    {"observe", ZT_CMD_OBSERVE, 0},
    {"config", ZT_CMD_CONFIG, 0},
};

// Whether the subcommand takes option --name (its table, from gen/cli.toml).
bool takes(const Sub &sub, const char *name) {
    for (const option *o = zt_commands[sub.cmd].getopt; o->name; ++o)
        if (std::strcmp(o->name, name) == 0) return true;
    return false;
}

const char kEnvHosts[] = "127.0.0.1:2181";

bool one_of(const char *p, const std::vector<char *> &argv, const char *env) {
    if (env && p == env) return true;
    for (char *a : argv)
        if (a && p >= a && p <= a + std::strlen(a)) return true;
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const Sub &sub = kSubs[data[0] % (sizeof kSubs / sizeof kSubs[0])];
    bool env = data[0] & 4;
    if (env)
        setenv("ZKELECT_CONNECT", kEnvHosts, 1);
    else
        unsetenv("ZKELECT_CONNECT");
    const char *env_hosts = getenv("ZKELECT_CONNECT");

    // Each argument in its own allocation, so ASan sees a read past one.
    std::vector<std::string> words;
    std::string cur;
    for (size_t i = 1; i < size; ++i) {
        if (data[i] == 0) {
            words.push_back(cur);
            cur.clear();
        } else {
            cur += static_cast<char>(data[i]);
        }
    }
    if (size > 1) words.push_back(cur);
    std::vector<char *> argv;
    argv.push_back(strdup(sub.name));
    for (const auto &w : words) argv.push_back(strdup(w.c_str()));
    int argc = static_cast<int>(argv.size());
    std::vector<char *> saved = argv; // getopt may permute argv; we free these
    argv.push_back(nullptr);

    // Its complaints go to stderr; keep them out of the fuzzer's log.
    int err = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    // A parse that stops inside "-hh" first: the parse below must start
    // afresh, not resume where that one stopped (and answer its second -h).
    zt_opts first{};
    char *prev[] = {strdup("status"), strdup("-hh"), nullptr};
    zt_parse(2, prev, ZT_CMD_STATUS, &first, count_usage);
    zt_opts o{};
    o.count_max = sub.count_max;
    usage_calls = 0;
    int rc = zt_parse(argc, argv.data(), sub.cmd, &o, count_usage);
    dup2(err, 2);
    close(err);
    close(null);

    FUZZ_CHECK(rc == -1 || rc == ZT_EXIT_OK || rc == ZT_EXIT_USAGE);
    FUZZ_CHECK(usage_calls == (rc >= 0 ? 1 : 0));
    if (rc == ZT_EXIT_OK) {
        // Only a --help (or an abbreviation) or an -h asks for it.
        bool asked = false;
        for (const auto &w : words)
            asked = asked || w.compare(0, 3, "--h") == 0 ||
                    (w.size() > 1 && w[0] == '-' && w[1] != '-' && w.find('h') != std::string::npos);
        FUZZ_CHECK(asked);
    }
    if (rc == -1) {
        if (zt_commands[sub.cmd].needs_target) FUZZ_CHECK(o.hosts && *o.hosts && o.path);
        FUZZ_CHECK(!o.hosts || one_of(o.hosts, saved, env_hosts));
        FUZZ_CHECK(!o.path || one_of(o.path, saved, nullptr));
        FUZZ_CHECK(!o.id || (takes(sub, "id") && one_of(o.id, saved, nullptr)));
        FUZZ_CHECK(!o.auth_file || one_of(o.auth_file, saved, nullptr));
        FUZZ_CHECK(o.session_ms >= 1000 && o.session_ms <= 3600000);
        FUZZ_CHECK(o.connect_ms >= 1 && o.connect_ms <= 3600000);
        FUZZ_CHECK(o.grace_ms >= 0 && o.grace_ms <= 86400000);
        FUZZ_CHECK(o.count == 0 || takes(sub, "count"));
        FUZZ_CHECK(o.count >= 0 && (sub.count_max == 0 || o.count <= sub.count_max));
        FUZZ_CHECK(!o.have_first || takes(sub, "first-id"));
        FUZZ_CHECK(o.first_id >= INT64_MIN / 2 && o.first_id <= INT64_MAX / 2);
        FUZZ_CHECK(!o.json || takes(sub, "json"));
        FUZZ_CHECK(!o.once || takes(sub, "once"));
        FUZZ_CHECK(!o.quiet || takes(sub, "quiet"));
        FUZZ_CHECK(!o.shared || takes(sub, "shared-session"));
        FUZZ_CHECK(!o.prometheus || takes(sub, "prometheus"));
        FUZZ_CHECK(!o.metrics_listen ||
                   (takes(sub, "metrics-listen") && one_of(o.metrics_listen, saved, nullptr)));
        FUZZ_CHECK(!o.metrics_textfile ||
                   (takes(sub, "metrics-textfile") && one_of(o.metrics_textfile, saved, nullptr)));
        FUZZ_CHECK(o.metrics_interval_ms >= 100 && o.metrics_interval_ms <= 86400000);
        FUZZ_CHECK(o.nsettings >= 0 && o.nsettings <= ZT_MAX_SETTINGS);
        for (int i = 0; i < o.nsettings; ++i) {
            FUZZ_CHECK(one_of(o.settings[i], saved, nullptr));
            const char *eq = std::strchr(o.settings[i], '=');
            FUZZ_CHECK(eq && eq != o.settings[i]);
        }
        if (zt_commands[sub.cmd].takes_cmd) {
            // The command is the tail of argv, after "--".
            FUZZ_CHECK(o.cmd && o.cmd > argv.data() && o.cmd < argv.data() + argc);
            FUZZ_CHECK(std::strcmp(o.cmd[-1], "--") == 0);
            // That "--" ended the options; it was no option's value.
            const char *sep = o.cmd[-1];
            FUZZ_CHECK(sep != o.hosts && sep != o.path && sep != o.id && sep != o.auth_file &&
                       sep != o.metrics_listen && sep != o.metrics_textfile);
            for (int i = 0; i < o.nsettings; ++i) FUZZ_CHECK(sep != o.settings[i]);
            FUZZ_CHECK(argv[argc] == nullptr);
        } else {
            FUZZ_CHECK(!o.cmd);
        }
    }
    for (char *a : saved) std::free(a);
    std::free(prev[0]);
    std::free(prev[1]);
    return 0;
}
