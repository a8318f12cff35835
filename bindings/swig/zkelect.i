/*
 * zkelect.i - the one SWIG interface of libzkelect, shared by Go, Java and Lua.
 *
 * It wraps the public header and nothing else. What it changes on the way:
 *
 *  - names lose their zkelect_/ZKELECT_ prefix (the target language already
 *    has a module or package for that);
 *  - the opaque handles become wrapped types with a destructor, and every
 *    *_new / *_destroy is marked %newobject / %delobject, so a garbage
 *    collector (Lua's __gc) frees what the caller owns and never frees twice;
 *  - a negative error code or a NULL from a constructor becomes the
 *    language's error (Java exception, Lua error, Go panic that the Go package
 *    turns into an error value), carrying the code and the library's message;
 *  - (char *errbuf, size_t errlen) is hidden: the wrapper passes its own
 *    buffer and raises with its text;
 *  - out-parameters (fencing token, counters, ids, conf values) come back as
 *    return values;
 *  - the callback API is left out: a callback on a library thread would call
 *    into Go, Java or Lua from a thread their runtime does not own. Bindings
 *    drain events with next_event (with a timeout, ended early by wake) or
 *    watch event_fd.
 *
 * Each language's file (go.i, java.i, lua.i) must define, before this file's
 * body, the SWIG macro ZKELECT_RAISE(code, msg) (raise the error and leave
 * the wrapper) and the SWIG macro ZKELECT_TYPE(name), the language's name of
 * a wrapped handle type (Conf, Client, ...).
 */

%module zkelect

%{
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zkelect/zkelect.h>

/* One message buffer per thread: a wrapper fills it, checks it and raises
 * from it within one C call, so no other call can interleave. */
static __thread char zkelect_swig_errbuf[512];
/* The return code of the last helper below, read by the same wrapper. */
static __thread int zkelect_swig_rc;

/* The message of a failure that returned `code`: errbuf's when the call
 * wrote one, else this thread's zkelect_last_error (the library's detail,
 * "no candidate under /x" rather than "no leader"), else the code's
 * description. The last error is only taken when it names this code: it is
 * left as it was by calls that succeed. */
static const char *zkelect_swig_msg(int code)
{
    if (zkelect_swig_errbuf[0] == '\0') {
        const char *name = zkelect_err_name(code);
        const char *last = zkelect_last_error();
        size_t n = strlen(name);
        const char *text = zkelect_strerror(code);
        if (strncmp(last, name, n) == 0 && strncmp(last + n, ": ", 2) == 0 && last[n + 2] != '\0')
            text = last + n + 2;
        snprintf(zkelect_swig_errbuf, sizeof zkelect_swig_errbuf, "%s", text);
    }
    return zkelect_swig_errbuf;
}

/* The code of a failure the C API reports only by NULL and a message in
 * errbuf (constructors, zkelect_participants). Every binding maps these the
 * same way (bindings/README.md, "Error codes"; the Rust crate has its own
 * copy of this rule):
 *   "ZKELECT_<NAME>: text"  -> that code (the prefix is removed from errbuf:
 *                              each language prints the name itself);
 *   "out of memory"         -> ZKELECT_ENOMEM;
 *   "internal error"        -> ZKELECT_EINTERNAL;
 *   anything else           -> fallback (the documented cause: a bad
 *                              argument, for every such function). */
static int zkelect_swig_code_of(int fallback)
{
    char *msg = zkelect_swig_errbuf;
    if (strncmp(msg, "ZKELECT_E", 9) == 0) {
        const char *colon = strstr(msg, ": ");
        for (int code = -1; colon != NULL && code >= -64; code--) {
            const char *name = zkelect_err_name(code);
            size_t n = strlen(name);
            if (strcmp(name, "ZKELECT_EUNKNOWN") == 0)
                break;
            if ((size_t)(colon - msg) == n && strncmp(msg, name, n) == 0) {
                memmove(msg, colon + 2, strlen(colon + 2) + 1);
                return code;
            }
        }
    }
    if (strcmp(msg, "out of memory") == 0)
        return ZKELECT_ENOMEM;
    if (strcmp(msg, "internal error") == 0)
        return ZKELECT_EINTERNAL;
    return fallback;
}
%}

#if defined(SWIGGO)
%include "go.i"
#elif defined(SWIGJAVA)
%include "java.i"
#elif defined(SWIGLUA)
%include "lua.i"
#else
#error "zkelect.i: no binding file for this target language"
#endif

%include <stdint.i>


/* ---- names ---------------------------------------------------------------- */

%rename("%(regex:/^(zkelect_|ZKELECT_)(.*)$/\\2/)s") "";
/* The helpers below take the place of the functions they wrap. */
%rename("%(regex:/^zkelect_swig_(.*)$/\\1/)s", regextarget=1) "^zkelect_swig_";

/* ---- handles: opaque in C, wrapped types with a destructor here ----------- */

/* Handle types and functions share names once the prefix is gone
 * (zkelect_participants is both), hence match=. */
%rename(ZKELECT_TYPE(Conf), match="class") zkelect_conf;
%rename(ZKELECT_TYPE(Client), match="class") zkelect_client;
%rename(ZKELECT_TYPE(Election), match="class") zkelect_election;
%rename(ZKELECT_TYPE(Observer), match="class") zkelect_observer;
%rename(ZKELECT_TYPE(Event), match="class") zkelect_event;
%rename(ZKELECT_TYPE(Participants), match="class") zkelect_participants;
%rename(ZKELECT_TYPE(Stats), match="class") zkelect_stats;
%rename(ZKELECT_TYPE(FencedOps), match="class") zkelect_fenced_ops;
/* Enum types meet the same clash (zkelect_event_type is also a function);
 * their values are what the bindings use, as plain ints. */
%rename(EventType, match="enum") zkelect_event_type;
%rename(Reason, match="enum") zkelect_reason;
%rename(ErrorCode, match="enum") zkelect_err;
%rename(Counter, match="enum") zkelect_counter;

/* SWIG-only declarations: the C compiler never sees these bodies, so the
 * types stay incomplete in the wrapper as in the header. */
%nodefaultctor zkelect_conf;
%nodefaultctor zkelect_client;
%nodefaultctor zkelect_election;
%nodefaultctor zkelect_observer;
%nodefaultctor zkelect_event;
%nodefaultctor zkelect_participants;
%nodefaultctor zkelect_stats;
%nodefaultctor zkelect_fenced_ops;
struct zkelect_conf {};
struct zkelect_client {};
struct zkelect_election {};
struct zkelect_observer {};
struct zkelect_event {};
struct zkelect_participants {};
struct zkelect_stats {};
struct zkelect_fenced_ops {};

/* What a garbage collector runs on an object the language still owns. The
 * return codes are dropped: nobody is left to hear them. */
%extend zkelect_conf { ~zkelect_conf() { zkelect_conf_destroy($self); } }
%extend zkelect_client { ~zkelect_client() { (void)zkelect_client_destroy($self); } }
%extend zkelect_election { ~zkelect_election() { (void)zkelect_election_destroy($self); } }
%extend zkelect_observer { ~zkelect_observer() { (void)zkelect_observer_destroy($self); } }
%extend zkelect_event { ~zkelect_event() { zkelect_event_destroy($self); } }
%extend zkelect_participants { ~zkelect_participants() { zkelect_participants_destroy($self); } }
%extend zkelect_stats { ~zkelect_stats() { zkelect_stats_destroy($self); } }
%extend zkelect_fenced_ops { ~zkelect_fenced_ops() { zkelect_fenced_ops_destroy($self); } }

%newobject zkelect_conf_new;
%newobject zkelect_client_new;
%newobject zkelect_election_new;
%newobject zkelect_observer_new;
%newobject zkelect_next_event;
%newobject zkelect_observer_next_event;
%newobject zkelect_participants;
%newobject zkelect_client_participants;
%newobject zkelect_election_stats;
%newobject zkelect_client_stats;
%newobject zkelect_fenced_ops_new;
%delobject zkelect_conf_destroy;
%delobject zkelect_client_destroy;
%delobject zkelect_election_destroy;
%delobject zkelect_observer_destroy;
%delobject zkelect_event_destroy;
%delobject zkelect_participants_destroy;
%delobject zkelect_stats_destroy;
%delobject zkelect_fenced_ops_destroy;

/* A fenced write's data: bytes, NULs and all (the language's byte string). */
#if defined(SWIGLUA)
%typemap(in, checkfn="lua_isstring") (const void *data, size_t len) {
    $1 = (void *)lua_tolstring(L, $input, &$2);
}
#else
%apply (char *STRING, size_t LENGTH) { (const void *data, size_t len) };
#endif

/* ---- callbacks: not for bindings (see the top of this file) --------------- */

%ignore zkelect_set_event_cb;
%ignore zkelect_set_background_event_cb;
%ignore zkelect_dispatch;
%ignore zkelect_event_cb;

/* ---- out-parameters: replaced by the helpers below ------------------------ */

%ignore zkelect_fencing_token;
%ignore zkelect_leader_id;
%ignore zkelect_client_counter;
%ignore zkelect_conf_get;
%ignore zkelect_fenced_ops_failed;
%ignore zkelect_leader_answer;

/* ---- error buffers -------------------------------------------------------- */

%typemap(in, numinputs=0) (char *errbuf, size_t errlen) {
    zkelect_swig_errbuf[0] = '\0';
    $1 = zkelect_swig_errbuf;
    $2 = sizeof zkelect_swig_errbuf;
}

/* ---- error codes ---------------------------------------------------------- */

/* A function returning 0 or a negative ZKELECT_E* code. */
%define ZKELECT_CHECK_RC(func)
%exception func {
    zkelect_swig_errbuf[0] = '\0';
    $action
    if (result < 0) {
        ZKELECT_RAISE(result, zkelect_swig_msg(result));
    }
}
%enddef

/* A function returning 0 or a code, writing its message into errbuf. */
%define ZKELECT_CHECK_RC_MSG(func)
%exception func {
    $action
    if (result < 0) {
        ZKELECT_RAISE(result, zkelect_swig_msg(result));
    }
}
%enddef

/* A constructor returning NULL with a message in errbuf. The header gives
 * no code for these failures: zkelect_swig_code_of reads it from the
 * message, else `code` is the one that fits the documented causes. */
%define ZKELECT_CHECK_NEW(func, code)
%exception func {
    zkelect_swig_errbuf[0] = '\0';
    $action
    if (result == NULL) {
        int zkelect_code = zkelect_swig_code_of(code);
        ZKELECT_RAISE(zkelect_code, zkelect_swig_msg(zkelect_code));
    }
}
%enddef

/* A helper below: the code is in zkelect_swig_rc. */
%define ZKELECT_CHECK_HELPER(func)
%exception func {
    zkelect_swig_errbuf[0] = '\0';
    zkelect_swig_rc = 0;
    $action
    if (zkelect_swig_rc < 0) {
        ZKELECT_RAISE(zkelect_swig_rc, zkelect_swig_msg(zkelect_swig_rc));
    }
}
%enddef

ZKELECT_CHECK_NEW(zkelect_conf_new, ZKELECT_ENOMEM)
ZKELECT_CHECK_RC_MSG(zkelect_conf_set)
ZKELECT_CHECK_NEW(zkelect_client_new, ZKELECT_EINVAL)
ZKELECT_CHECK_RC(zkelect_client_destroy)
ZKELECT_CHECK_RC(zkelect_client_shutdown)
ZKELECT_CHECK_RC(zkelect_client_await_connected)
ZKELECT_CHECK_NEW(zkelect_election_new, ZKELECT_EINVAL)
ZKELECT_CHECK_RC(zkelect_election_destroy)
ZKELECT_CHECK_RC(zkelect_volunteer)
ZKELECT_CHECK_RC(zkelect_resign)
ZKELECT_CHECK_RC(zkelect_requeue)
ZKELECT_CHECK_RC(zkelect_release)
ZKELECT_CHECK_RC(zkelect_await_leader)
ZKELECT_CHECK_RC(zkelect_transfer)
ZKELECT_CHECK_RC(zkelect_client_transfer)
ZKELECT_CHECK_NEW(zkelect_participants, ZKELECT_EINVAL)
ZKELECT_CHECK_NEW(zkelect_client_participants, ZKELECT_EINVAL)
ZKELECT_CHECK_NEW(zkelect_election_stats, ZKELECT_EINVAL)
ZKELECT_CHECK_NEW(zkelect_client_stats, ZKELECT_EINVAL)
ZKELECT_CHECK_RC(zkelect_event_fd)
ZKELECT_CHECK_RC(zkelect_wake)
ZKELECT_CHECK_NEW(zkelect_observer_new, ZKELECT_EINVAL)
ZKELECT_CHECK_RC(zkelect_observer_event_fd)
ZKELECT_CHECK_RC(zkelect_observer_wake)
ZKELECT_CHECK_RC(zkelect_observer_destroy)
ZKELECT_CHECK_HELPER(zkelect_swig_fencing_token)
ZKELECT_CHECK_HELPER(zkelect_swig_leader_id)
ZKELECT_CHECK_HELPER(zkelect_swig_client_counter)
ZKELECT_CHECK_HELPER(zkelect_swig_conf_get)
ZKELECT_CHECK_NEW(zkelect_fenced_ops_new, ZKELECT_ENOMEM)
ZKELECT_CHECK_RC(zkelect_fenced_ops_set)
ZKELECT_CHECK_RC(zkelect_fenced_ops_create)
ZKELECT_CHECK_RC(zkelect_fenced_ops_delete)
ZKELECT_CHECK_RC(zkelect_fenced_commit)
ZKELECT_CHECK_RC(zkelect_client_fenced_commit)

/* ---- the header ----------------------------------------------------------- */

%include <zkelect/zkelect.h>

/* ---- helpers: out-parameters as return values ----------------------------- */

%newobject zkelect_swig_leader_id;
%newobject zkelect_swig_conf_get;
%newobject zkelect_swig_leader_answer;
%typemap(newfree) char * "free($1);";

%inline %{
/* The fencing token of the current term; raises ENOTLEADER otherwise. */
static int64_t zkelect_swig_fencing_token(const zkelect_election_t *election)
{
    int64_t token = 0;
    zkelect_swig_rc = zkelect_fencing_token(election, &token);
    return token;
}

/* The leader's participant id; raises ENOLEADER when nobody is a candidate.
 * The leader may be another program's participant (Curator) whose id is
 * longer than ZKELECT_ID_MAX: the buffer grows on ERANGE, eightfold, six
 * times at most (to 32 MiB, past ZooKeeper's 1 MiB default limit on a
 * node's data), as the Rust crate's does. */
static char *zkelect_swig_leader_id(zkelect_election_t *election)
{
    size_t len = ZKELECT_ID_MAX + 1;
    for (int attempt = 0; attempt < 6; attempt++, len *= 8) {
        char *buf = malloc(len);
        if (buf == NULL) {
            snprintf(zkelect_swig_errbuf, sizeof zkelect_swig_errbuf,
                     "out of memory for a %zu-byte id", len);
            zkelect_swig_rc = ZKELECT_ENOMEM;
            return NULL;
        }
        zkelect_swig_rc = zkelect_leader_id(election, buf, len);
        if (zkelect_swig_rc == 0)
            return buf;
        free(buf);
        if (zkelect_swig_rc != ZKELECT_ERANGE)
            return NULL;
    }
    return NULL; /* still ERANGE, with the library's detail */
}

/* A counter of the client (ZKELECT_COUNTER_*). Signed because not every
 * target has an unsigned 64-bit type; no counter gets near 2^63. */
static int64_t zkelect_swig_client_counter(const zkelect_client_t *client, int counter)
{
    uint64_t value = 0;
    zkelect_swig_rc = zkelect_client_counter(client, counter, &value);
    return (int64_t)value;
}

/* zkelect_fenced_ops_failed's answer in two calls: the index of the
 * operation the last commit had refused (-1: none), and ZooKeeper's code
 * behind that commit's outcome. */
static int zkelect_swig_fenced_ops_failed_index(const zkelect_fenced_ops_t *ops)
{
    return zkelect_fenced_ops_failed(ops, NULL);
}

static int zkelect_swig_fenced_ops_zk_rc(const zkelect_fenced_ops_t *ops)
{
    int rc = 0;
    (void)zkelect_fenced_ops_failed(ops, &rc);
    return rc;
}

/* The leader endpoint's JSON (zkelect_leader_answer): its first key,
 * "leader", says the status (true: 200, false: 503), so that the answer is
 * one reading. NULL only without memory. */
static char *zkelect_swig_leader_answer(const zkelect_election_t *election)
{
    size_t len = 512;
    for (int attempt = 0; attempt < 4; attempt++) {
        char *buf = malloc(len);
        size_t want = len;
        if (buf == NULL)
            return NULL;
        int rc = zkelect_leader_answer(election, buf, &want);
        if (rc == 200 || rc == 503)
            return buf;
        free(buf);
        if (rc != ZKELECT_ERANGE || want <= len)
            return NULL;
        len = want;
    }
    return NULL;
}

/* The value of key in conf. */
static char *zkelect_swig_conf_get(const zkelect_conf_t *conf, const char *key)
{
    size_t len = 256;
    for (int attempt = 0; attempt < 4; attempt++) {
        char *buf = malloc(len);
        size_t want = len;
        if (buf == NULL) {
            zkelect_swig_rc = ZKELECT_ENOMEM;
            return NULL;
        }
        zkelect_swig_rc = zkelect_conf_get(conf, key, buf, &want);
        if (zkelect_swig_rc == 0)
            return buf;
        free(buf);
        if (zkelect_swig_rc != ZKELECT_ERANGE || want <= len)
            return NULL;
        len = want; /* the value grew between two calls at most a few times */
    }
    return NULL;
}
%}
