#include "log_sink.h"

#include <zookeeper/zookeeper.h>

#include <cstring>
#include <mutex>

namespace zkelect {

namespace {

struct Sink {
    std::mutex mu;
    LogFn fn = nullptr;
    void *opaque = nullptr;
};

// Process-wide by necessity (see the header); touched only through
// set_log_sink and the forwarding below.
Sink &sink() {
    static Sink s;
    return s;
}

// libzookeeper formats "<time>:<pid>(<thread>):ZOO_<LEVEL>@<function>@<line>: ".
int level_of(const char *message) {
    static constexpr struct {
        const char *tag;
        int level;
    } kTags[] = {{"ZOO_ERROR@", 1}, {"ZOO_WARN@", 2}, {"ZOO_INFO@", 3}, {"ZOO_DEBUG@", 4}};
    for (const auto &t : kTags)
        if (std::strstr(message, t.tag)) return t.level;
    return 1;
}

}  // namespace

void set_log_sink(int level, LogFn fn, void *opaque) {
    static constexpr ZooLogLevel kLevels[] = {(ZooLogLevel)0, ZOO_LOG_LEVEL_ERROR,
                                              ZOO_LOG_LEVEL_WARN, ZOO_LOG_LEVEL_INFO,
                                              ZOO_LOG_LEVEL_DEBUG};
    Sink &s = sink();
    std::lock_guard<std::mutex> lock(s.mu);
    s.fn = level > 0 ? fn : nullptr;
    s.opaque = opaque;
    zoo_set_debug_level(kLevels[level < 0 ? 0 : level > 4 ? 4 : level]);
}

void zk_log_message(const char *message) {
    Sink &s = sink();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.fn || !message) return;
    try {
        s.fn(level_of(message), message, s.opaque);
    } catch (...) {
    }
}

}  // namespace zkelect
