/*
 * go.i - Go specifics of the zkelect SWIG interface (included by zkelect.i).
 *
 * The generated package (github.com/libzkelect/libzkelect/bindings/go/internal/capi) finds the
 * library through pkg-config. A failing call panics with
 * "zkelect:<code>:<message>"; the public Go package recovers that panic at
 * its boundary and returns it as an *Error, so no panic reaches its users.
 *
 * A panic leaves the C wrapper without running its cleanup, so the copies
 * of Go strings that the wrapper makes are tracked here (per thread: one
 * wrapper runs on one thread from start to end) and freed before panicking.
 */

%insert(cgo_comment_typedefs) %{
#cgo pkg-config: libzkelect
#cgo CFLAGS: -Wno-unused-function
%}

%{
#define ZKELECT_GO_MAX_STRINGS 8
static __thread char *zkelect_go_strings[ZKELECT_GO_MAX_STRINGS];
static __thread int zkelect_go_nstrings;

__attribute__((noreturn)) static void zkelect_go_raise(int code, const char *msg);

/* A Go string may hold NUL bytes; C would see it cut at the first one (an
 * id "a\x00b" silently becoming "a"), so that is an EINVAL error. */
static char *zkelect_go_string(const char *p, size_t n)
{
    if (n > 0 && memchr(p, '\0', n) != NULL)
        zkelect_go_raise(-1, "a string argument holds a NUL byte");
    char *s = (char *)malloc(n + 1);
    if (s == NULL)
        _swig_gopanic("zkelect:-2:out of memory copying a string");
    memcpy(s, p, n);
    s[n] = '\0';
    if (zkelect_go_nstrings < ZKELECT_GO_MAX_STRINGS)
        zkelect_go_strings[zkelect_go_nstrings++] = s;
    return s;
}

static void zkelect_go_release_strings(void)
{
    while (zkelect_go_nstrings > 0)
        free(zkelect_go_strings[--zkelect_go_nstrings]);
}

__attribute__((noreturn)) static void zkelect_go_raise(int code, const char *msg)
{
    char buf[640];
    snprintf(buf, sizeof buf, "zkelect:%d:%s", code, msg);
    zkelect_go_release_strings();
    _swig_gopanic(buf);
    __builtin_unreachable(); /* the panic unwinds into Go */
}
%}

%typemap(in) char * %{ $1 = ($1_ltype)zkelect_go_string($input.p, (size_t)$input.n); %}
/* One release frees every string of the call; later ones find none. */
%typemap(freearg) char * %{ zkelect_go_release_strings(); %}

%define ZKELECT_RAISE(code, msg)
    zkelect_go_raise(code, msg);
%enddef

/* Go names cannot be shared by a type and a function (Participants). */
%define ZKELECT_TYPE(name) Native ## name %enddef
