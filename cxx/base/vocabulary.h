// The one table of the library's words: for each error code its symbol and
// message, and the names of event types, deposition reasons and counters.
// The numbers are errors.h's (held to the public header by capi's
// static_asserts); tests/abi/test_vocabulary.py holds every other copy (the
// docs, the bindings' hand-written constants) to the header.
#pragma once

namespace zkelect {
namespace vocabulary {

// "ZKELECT_EINVAL"...; "ZKELECT_EUNKNOWN" for any other code.
const char *err_symbol(int code);
// "invalid argument"...; "unknown error" for any other code.
const char *err_message(int code);
// "ELECTED"...; "UNKNOWN" for any other type.
const char *event_type_name(int type);
// "resigned"...; "none" for 0, "unknown" for any other reason.
const char *reason_name(int reason);
// "terms_won"...; nullptr past the last counter.
const char *counter_name(int counter);

}  // namespace vocabulary
}  // namespace zkelect
