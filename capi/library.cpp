// What belongs to no handle: error messages and the last error, the log
// callback, the version, and the names of the vocabulary's words.
#include <zkelect/zkelect.h>

#include <string>

#include "log_sink.h"
#include "vocabulary.h"

#include "boundary.h"

using namespace zkelect;
using namespace zkelect::boundary;

extern "C" {

const char *zkelect_strerror(int code) { return vocabulary::err_message(code); }

const char *zkelect_err_name(int code) { return vocabulary::err_symbol(code); }

const char *zkelect_last_error(void) { return last_error(); }

int zkelect_last_error_code(void) { return last_error_code(); }

int zkelect_set_log_cb(int level, zkelect_log_cb cb, void *opaque) {
    return guarded_code([&]() -> int {
        if (level < ZKELECT_LOG_NONE || level > ZKELECT_LOG_DEBUG)
            return fail(ZKELECT_EINVAL, "log level " + std::to_string(level) +
                                            " is not one of ZKELECT_LOG_NONE..ZKELECT_LOG_DEBUG");
        set_log_sink(level, cb, opaque);
        return ZKELECT_OK;
    });
}

unsigned zkelect_version(void) { return ZKELECT_VERSION_NUMBER; }
const char *zkelect_version_string(void) { return ZKELECT_VERSION_STRING; }

const char *zkelect_counter_name(int counter) { return vocabulary::counter_name(counter); }

const char *zkelect_event_type_name(int type) { return vocabulary::event_type_name(type); }

const char *zkelect_reason_name(int reason) { return vocabulary::reason_name(reason); }

}  // extern "C"
