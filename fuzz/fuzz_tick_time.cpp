// What a server (or whatever answers on its port) sends back to the `conf`
// four-letter word: parse_conf_reply must take any bytes, look at no more
// than kMaxConfReply of them, and accept only a tickTime the bytes really
// say, on a line of its own. The first input byte says whether the server
// closed the connection after the rest (bit 0).
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "tick_time.h"

using namespace zkelect;

namespace {

// Whether `text` (what was looked at) holds the line "key=value" (a '\n' or
// "\r\n" after it, or the end when the end counts), starting at its start
// or after a '\n'.
bool says(const std::string &text, bool end_counts, const std::string &key, int64_t value) {
    const std::string line = key + "=" + std::to_string(value);
    for (size_t at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) {
        if (at != 0 && text[at - 1] != '\n') continue;
        size_t after = at + line.size();
        if (after == text.size() ? end_counts
                                 : (text[after] == '\n' ||
                                    (text[after] == '\r' && after + 1 < text.size() &&
                                     text[after + 1] == '\n') ||
                                    (text[after] == '\r' && after + 1 == text.size() && end_counts)))
            return true;
    }
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const bool complete = data[0] & 1;
    const char *reply = reinterpret_cast<const char *>(data + 1);
    const size_t n = size - 1;

    ServerConf out;
    out.tick_ms = -7;
    out.min_session_ms = -7;
    out.max_session_ms = -7;
    bool ok = parse_conf_reply(reply, n, complete, &out);
    if (!ok) {
        // Nothing is half-written.
        FUZZ_CHECK(out.tick_ms == -7 && out.min_session_ms == -7 && out.max_session_ms == -7);
    } else {
        FUZZ_CHECK(out.tick_ms >= 1 && out.tick_ms <= 3600000);
        for (int64_t v : {out.min_session_ms, out.max_session_ms})
            FUZZ_CHECK(v == -1 || (v >= 1 && v <= 3600000));
        const bool cut = n > kMaxConfReply;
        const std::string looked(reply, cut ? kMaxConfReply : n);
        const bool end_counts = complete && !cut;
        FUZZ_CHECK(says(looked, end_counts, "tickTime", out.tick_ms));
        if (out.min_session_ms > 0)
            FUZZ_CHECK(says(looked, end_counts, "minSessionTimeout", out.min_session_ms));
        if (out.max_session_ms > 0)
            FUZZ_CHECK(says(looked, end_counts, "maxSessionTimeout", out.max_session_ms));
    }
    // Bytes past kMaxConfReply are never looked at.
    if (n > kMaxConfReply) {
        ServerConf a, b;
        bool whole = parse_conf_reply(reply, n, complete, &a);
        bool first = parse_conf_reply(reply, kMaxConfReply, false, &b);
        FUZZ_CHECK(whole == first);
        if (whole)
            FUZZ_CHECK(a.tick_ms == b.tick_ms && a.min_session_ms == b.min_session_ms &&
                       a.max_session_ms == b.max_session_ms);
    }
    // Without the end of its last line, a reply says no more than with it.
    if (!complete) {
        ServerConf c;
        bool closed = parse_conf_reply(reply, n, true, &c);
        if (ok && closed) FUZZ_CHECK(c.tick_ms == out.tick_ms);
    }
    return 0;
}
