#include "tick_time.h"

#include <cstring>

namespace zkelect {

namespace {

constexpr int64_t kMaxValue = 3600000;  // an hour in ms: more is not a timing

// A decimal of 1..7 digits in 1..kMaxValue as Java prints one (no sign, no
// leading zero), nothing else; -1 otherwise.
int64_t parse_value(const char *p, size_t n) {
    if (n == 0 || n > 7 || p[0] == '0') return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v >= 1 && v <= kMaxValue ? v : -1;
}

bool is_key(const char *p, size_t n, const char *key) {
    size_t k = std::strlen(key);
    return n == k && std::memcmp(p, key, k) == 0;
}

// Records value v for a field: false when the field already had another.
bool set_once(int64_t *field, int64_t v) {
    if (*field >= 0 && *field != v) return false;
    *field = v;
    return true;
}

}  // namespace

bool parse_conf_reply(const char *data, size_t size, bool complete, ServerConf *out) {
    if (!data) return false;
    if (size > kMaxConfReply) {
        size = kMaxConfReply;
        complete = false;  // the rest was not looked at
    }
    int64_t tick = -1, lo = -1, hi = -1;
    size_t pos = 0;
    while (pos < size) {
        const char *line = data + pos;
        const void *nl = std::memchr(line, '\n', size - pos);
        size_t len = nl ? size_t(static_cast<const char *>(nl) - line) : size - pos;
        pos += len + 1;
        if (!nl && !complete) break;  // a line that may go on
        if (len > 0 && line[len - 1] == '\r') --len;
        const void *eq = std::memchr(line, '=', len);
        if (!eq) continue;
        size_t klen = size_t(static_cast<const char *>(eq) - line);
        const char *val = line + klen + 1;
        size_t vlen = len - klen - 1;
        int64_t *field = is_key(line, klen, "tickTime")            ? &tick
                         : is_key(line, klen, "minSessionTimeout") ? &lo
                         : is_key(line, klen, "maxSessionTimeout") ? &hi
                                                                   : nullptr;
        if (!field) continue;
        if (field != &tick && vlen == 2 && val[0] == '-' && val[1] == '1') continue;  // "unset"
        int64_t v = parse_value(val, vlen);
        if (v < 0 || !set_once(field, v)) return false;
    }
    if (tick < 0) return false;
    out->tick_ms = tick;
    out->min_session_ms = lo;
    out->max_session_ms = hi;
    return true;
}

}  // namespace zkelect
