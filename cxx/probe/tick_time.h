// What a ZooKeeper server says of its own timing in answer to the `conf`
// four-letter word: its tickTime, and the session timeout window it
// negotiates in. Pure parsing of bytes from the network, bounded and
// untrusted (fuzz/fuzz_tick_time.cpp): TickProbe reads them, the client
// uses them for the lease (docs/semantics.md, "Why that is safe").
#pragma once

#include <cstddef>
#include <cstdint>

namespace zkelect {

// The most of an answer that is read and looked at. ZooKeeper 3.8's answer
// is about 300 bytes, plus one line (~60 bytes) per server of the ensemble.
constexpr size_t kMaxConfReply = 16384;

struct ServerConf {
    int64_t tick_ms = 0;          // 1..3600000
    int64_t min_session_ms = -1;  // -1 when not said
    int64_t max_session_ms = -1;
};

// Parses the answer to `conf`: lines "key=value", of which tickTime,
// minSessionTimeout and maxSessionTimeout are read (decimal as Java prints
// it, 1..3600000;
// -1 for the latter two means not said).
// Only the first kMaxConfReply bytes are looked at; the last line counts
// only when it ends with '\n' or `complete` (the server closed the
// connection after it). True when tickTime was said, once or always alike,
// and every such line read is well-formed; anything else (a server that
// does not whitelist conf: "conf is not executed because it is not in the
// whitelist.", garbage, a key said twice with two values) is false and
// leaves *out as it was.
bool parse_conf_reply(const char *data, size_t size, bool complete, ServerConf *out);

}  // namespace zkelect
