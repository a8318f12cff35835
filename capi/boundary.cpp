#include "boundary.h"

#include <algorithm>
#include <cstring>

namespace zkelect::boundary {

namespace {
thread_local std::string t_last_error;
thread_local int t_last_code = 0;
thread_local bool t_error_set = false;

// The code whose symbol begins msg ("ZKELECT_ETIMEDOUT: ..."), else fallback.
int code_of(const std::string &msg, int fallback) {
    for (int c = -1; c >= -64; --c) {
        const char *name = zkelect_err_name(c);
        size_t n = std::strlen(name);
        if (std::strcmp(name, "ZKELECT_EUNKNOWN") != 0 && msg.compare(0, n, name) == 0 &&
            msg.size() > n && msg[n] == ':')
            return c;
    }
    return fallback;
}
}  // namespace

const char *last_error() { return t_last_error.c_str(); }

int last_error_code() { return t_last_code; }

void clear_error_flag() { t_error_set = false; }

bool error_flag() { return t_error_set; }

void set_last_error(int code, const std::string &why) {
    t_last_error = std::string(zkelect_err_name(code)) + ": " + why;
    t_last_code = code;
    t_error_set = true;
}

int fail(int code, const std::string &why) {
    set_last_error(code, why);
    return code;
}

void write_err(char *errbuf, size_t errlen, const std::string &msg, int code) {
    if (msg.compare(0, 8, "ZKELECT_") == 0) {
        t_last_error = msg;
        t_last_code = code_of(msg, code);
        t_error_set = true;
    } else {
        set_last_error(code, msg);
    }
    if (!errbuf || errlen == 0) return;
    size_t n = std::min(msg.size(), errlen - 1);
    std::memcpy(errbuf, msg.data(), n);
    errbuf[n] = '\0';
}

}  // namespace zkelect::boundary
