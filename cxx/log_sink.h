// Where libzookeeper's log goes. Its log callback takes no context and its
// level is process-wide, so the sink is one per process: nothing by default
// (a library does not write to its host's stderr unless asked), or the
// host's callback once it sets one.
#pragma once

namespace zkelect {

using LogFn = void (*)(int level, const char *message, void *opaque);

// Any thread. level: 0 none .. 4 debug (the public ZKELECT_LOG_* values).
void set_log_sink(int level, LogFn fn, void *opaque);
// libzookeeper's per-handle log callback: forwards to the sink or drops.
void zk_log_message(const char *message);

}  // namespace zkelect
