// What every extern "C" function shares: zkelect_last_error()'s per-thread
// message, and the guards that turn any exception into an error code or a
// NULL, since an exception unwinding into a C caller is undefined behaviour.
#pragma once

#include <zkelect/zkelect.h>

#include <cstddef>
#include <exception>
#include <new>
#include <string>

namespace zkelect::boundary {

const char *last_error();
int last_error_code();

// Per thread, like errno. guarded_code() clears the flag before the body and
// reads it after: a failure the body already explained keeps its reason.
void clear_error_flag();
bool error_flag();

// "ZKELECT_ESYMBOL: why" becomes this thread's last error.
void set_last_error(int code, const std::string &why);

// A failure with its reason: recorded for zkelect_last_error, code returned.
int fail(int code, const std::string &why);

// For the functions that return a handle: the message goes to the caller's
// errbuf (truncated to fit) and to the last error. A message that already
// starts with an error symbol is kept as it is.
void write_err(char *errbuf, size_t errlen, const std::string &msg, int code = ZKELECT_EINVAL);

// Runs body; any exception becomes the fallback value.
template <class R, class F>
R guarded(R on_error, F &&body) noexcept {
    try {
        return body();
    } catch (...) {
        return on_error;
    }
}

// Runs body, which returns a code; an exception becomes ZKELECT_ENOMEM or
// ZKELECT_EINTERNAL, and a failure nobody explained gets the code's message.
template <class F>
int guarded_code(F &&body) noexcept {
    int rc;
    clear_error_flag();
    try {
        rc = body();
    } catch (const std::bad_alloc &) {
        rc = ZKELECT_ENOMEM;
    } catch (...) {
        rc = ZKELECT_EINTERNAL;
    }
    if (rc < 0 && !error_flag()) {
        try {
            set_last_error(rc, zkelect_strerror(rc));
        } catch (...) {
        }
    }
    return rc;
}

// Runs body, which returns a new handle or NULL after write_err; an
// exception becomes NULL with its message in errbuf.
template <class T, class F>
T *guarded_new(char *errbuf, size_t errlen, F &&body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        try {
            write_err(errbuf, errlen, "out of memory", ZKELECT_ENOMEM);
        } catch (...) {
        }
    } catch (const std::exception &e) {
        try {
            write_err(errbuf, errlen, e.what());
        } catch (...) {
        }
    } catch (...) {
        try {
            write_err(errbuf, errlen, "internal error", ZKELECT_EINTERNAL);
        } catch (...) {
        }
    }
    return nullptr;
}

}  // namespace zkelect::boundary
