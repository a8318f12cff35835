// Configuration keys and values come from files, environments and command
// lines. Conf::set must refuse what it cannot use with a message and keep
// the configuration unchanged; what it accepts must read back as set and
// turn into Settings without surprise.
#include <cstdint>
#include <string>

#include "conf.h"
#include "fuzz_check.h"

using namespace zkelect;

namespace {
const char *const kKeys[] = {"zk.hosts",        "zk.session.timeout.ms", "zk.connect.timeout.ms",
                             "zk.auth",         "election.acl",          "leadership",
                             "lease.margin.ms", "zk.log.level"};
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // Records "key=value" separated by NUL; a key of one digit names the
    // known key of that index, so most inputs reach the value parsers.
    Conf conf;
    std::string in(reinterpret_cast<const char *>(data), size);
    size_t start = 0;
    for (int n = 0; n < 64 && start <= in.size(); ++n) {
        size_t end = in.find('\0', start);
        if (end == std::string::npos) end = in.size();
        std::string rec = in.substr(start, end - start);
        start = end + 1;
        size_t eq = rec.find('=');
        std::string key = rec.substr(0, eq), value = eq == std::string::npos ? "" : rec.substr(eq + 1);
        if (key.size() == 1 && key[0] >= '0' && key[0] <= '7') key = kKeys[key[0] - '0'];
        std::string before;
        bool known = conf.get(key, &before);
        std::string why = conf.set(key, value);
        std::string after;
        if (!why.empty()) {
            // Refused: unchanged, and the message names the key when known.
            FUZZ_CHECK(conf.get(key, &after) == known);
            if (known) FUZZ_CHECK(after == before);
            if (!known) FUZZ_CHECK(why.find("unknown") != std::string::npos);
        } else {
            FUZZ_CHECK(known);
            FUZZ_CHECK(conf.get(key, &after) && after == value);
        }
    }
    Settings s;
    std::string why;
    if (conf.settings(&s, &why)) {
        FUZZ_CHECK(!s.hosts.empty());
        FUZZ_CHECK(s.session_timeout_ms >= 1000 && s.session_timeout_ms <= 3600000);
        FUZZ_CHECK(s.connect_timeout_ms >= 1 && s.connect_timeout_ms <= 3600000);
        FUZZ_CHECK(!s.acl_creator_only || !s.auth_scheme.empty());
        FUZZ_CHECK(s.log_level >= -1 && s.log_level <= 4);
    } else {
        FUZZ_CHECK(!why.empty());
    }
    return 0;
}
