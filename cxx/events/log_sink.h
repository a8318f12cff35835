// Where libzookeeper's log goes. Its log callback takes no context and its
// level is process-wide, so the sink is one per process: nothing by default
// (a library does not write to its host's stderr unless asked), or the
// host's callback once it sets one. The host's callback runs on a thread of
// the sink's own, never on the thread that logged (log_sink.cpp says why).
#pragma once

#include <cstddef>

namespace zkelect {

using LogFn = void (*)(int level, const char *message, void *opaque);

// Records waiting for the host's callback at most; more are dropped and
// counted, and the count is delivered as a record of its own.
constexpr size_t kLogQueueMax = 1024;

// Any thread, the callback's included. level: 0 none .. 4 debug (the public
// ZKELECT_LOG_* values). Returns once a running call of the previous
// callback has returned (at once from inside the callback).
void set_log_sink(int level, LogFn fn, void *opaque);
// libzookeeper's per-handle log callback: queues the record or drops it;
// never blocks on the host's callback.
void zk_log_message(const char *message);

}  // namespace zkelect
