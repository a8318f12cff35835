/*
 * zkelect-guard's SASL (issue 51, item 7): a server that requires SASL
 * (enforce.auth.schemes=sasl) refuses the closeSession of a connection that
 * has not authenticated, so the guard authenticates as its owner did before
 * it closes the owner's session: the same mechanism, service, host, user
 * and password (DIGEST-MD5), or the owner's Kerberos credential cache or
 * client keytab (GSSAPI). The record that carries them is described at the
 * top of zkelect-guard.c; libzookeeper does the exchange (zookeeper_init_sasl:
 * the session's CONNECTED comes once the server has taken it).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "guard.h"

#ifdef ZKELECT_HAVE_ZK_SASL
#include <sasl/sasl.h>
#endif

/* The fields of a SASL record after the mechanism, in their order. */
enum { F_SERVICE, F_HOST, F_USER, F_PASSWORD, F_CCACHE, F_KEYTAB, F_KRB5_CONFIG, N_FIELDS };

struct guard_sasl {
    char *field[N_FIELDS];
    char mechanism[64];
#ifdef ZKELECT_HAVE_ZK_SASL
    /* A sasl_secret_t: an unsigned long length, then the bytes (field
     * F_PASSWORD's copy); NULL without a password. */
    unsigned char *secret;
    size_t secret_size;
    sasl_callback_t callbacks[5];
    zoo_sasl_params_t params;
#endif
};

static void wipe_free(char *p)
{
    if (p) {
        size_t n = strlen(p);
        explicit_bzero(p, n);
        munlock(p, n + 1);
        free(p);
    }
}

static void free_sasl(struct guard_sasl *g)
{
    if (!g)
        return;
    for (int i = 0; i < N_FIELDS; i++)
        wipe_free(g->field[i]);
#ifdef ZKELECT_HAVE_ZK_SASL
    if (g->secret) {
        explicit_bzero(g->secret, g->secret_size);
        munlock(g->secret, g->secret_size);
        free(g->secret);
    }
#endif
    explicit_bzero(g, sizeof *g);
    free(g);
}

void sasl_drop(struct session *s)
{
    free_sasl(s->sasl);
    s->sasl = NULL;
}

/* "-" (empty) or hex digits up to the next space or the end: a new string
 * (locked in memory, as a password may be in it), *end after it. NULL on
 * malformed input or no memory. */
static char *field_of(const char *p, const char **end)
{
    const char *e = p;
    while (*e && *e != ' ')
        e++;
    size_t n = (size_t)(e - p);
    if (n == 0 || (n % 2 && !(n == 1 && *p == '-')))
        return NULL;
    char *out = calloc(n / 2 + 1, 1);
    if (!out)
        return NULL;
    if (!(n == 1 && *p == '-')) {
        for (size_t i = 0; i < n; i += 2) {
            int hi = hex_digit((unsigned char)p[i]), lo = hex_digit((unsigned char)p[i + 1]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                explicit_bzero(out, n / 2);
                free(out);
                return NULL;
            }
            out[i / 2] = (char)(hi << 4 | lo);
        }
    }
    (void)mlock(out, n / 2 + 1);
    *end = e;
    return out;
}

#ifdef ZKELECT_HAVE_ZK_SASL

static int cyrus_ready = -1;  /* -1: not tried; else sasl_client_init's result */

static int simple(void *ctx, int id, const char **result, unsigned *len)
{
    struct guard_sasl *g = ctx;
    if (id != SASL_CB_USER && id != SASL_CB_AUTHNAME)
        return SASL_BADPARAM;
    *result = g->field[F_USER];
    if (len)
        *len = (unsigned)strlen(g->field[F_USER]);
    return SASL_OK;
}

static int password(sasl_conn_t *conn, void *ctx, int id, sasl_secret_t **out)
{
    (void)conn;
    struct guard_sasl *g = ctx;
    if (id != SASL_CB_PASS || !g->secret)
        return SASL_BADPARAM;
    *out = (sasl_secret_t *)g->secret;
    return SASL_OK;
}

/* DIGEST-MD5's server offers its realm (ZooKeeper's "zk-sasl-md5"): the
 * one offered, as the owner takes it (cxx/probe/sasl.cpp). */
static int realm(void *ctx, int id, const char **avail, const char **result)
{
    (void)ctx;
    if (id != SASL_CB_GETREALM)
        return SASL_BADPARAM;
    *result = avail && *avail ? *avail : "";
    return SASL_OK;
}

static void build_params(struct guard_sasl *g)
{
    typedef int (*fn)(void);
    /* Cyrus SASL's callbacks are typed int (*)(void) and called as their
     * id says; through void (*)(void), which GCC lets any function type
     * be cast to. */
#define CB(f) ((fn)(void (*)(void))(f))
    size_t n = 0;
    if (*g->field[F_USER]) {
        g->callbacks[n++] = (sasl_callback_t){SASL_CB_USER, CB(simple), g};
        g->callbacks[n++] = (sasl_callback_t){SASL_CB_AUTHNAME, CB(simple), g};
    }
    if (g->secret)
        g->callbacks[n++] = (sasl_callback_t){SASL_CB_PASS, CB(password), g};
    g->callbacks[n++] = (sasl_callback_t){SASL_CB_GETREALM, CB(realm), g};
    g->callbacks[n] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
#undef CB
    g->params.service = g->field[F_SERVICE];
    g->params.host = g->field[F_HOST];
    g->params.mechlist = g->mechanism;
    g->params.callbacks = g->callbacks;
}

/* Kerberos finds the owner's credentials through these (the guard's own
 * environment is empty). One value each for the process: every session of
 * an owner has the same. Set while the guard reads records, before any
 * thread of its own or of libzookeeper runs. */
static void kerberos_env(const struct guard_sasl *g)
{
    static const char *const names[N_FIELDS] = {
        [F_CCACHE] = "KRB5CCNAME", [F_KEYTAB] = "KRB5_CLIENT_KTNAME", [F_KRB5_CONFIG] = "KRB5_CONFIG"};
    for (int i = F_CCACHE; i <= F_KRB5_CONFIG; i++)
        if (*g->field[i])
            setenv(names[i], g->field[i], 1);
}

#endif

/* The record's fields into g: 0, or -1 when malformed (or memory is out). */
static int parse(struct guard_sasl *g, const char *p)
{
    size_t m = 0;
    for (; p[m] && p[m] != ' '; m++) {
        char c = p[m];
        if (m == sizeof g->mechanism - 1 ||
            !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return -1;
        g->mechanism[m] = c;
    }
    if (m == 0)
        return -1;
    p += m;
    for (int i = 0; i < N_FIELDS; i++) {
        if (*p != ' ')
            return -1;
        g->field[i] = field_of(p + 1, &p);
        if (!g->field[i])
            return -1;
    }
    if (*p != '\0')
        return -1;
#ifdef ZKELECT_HAVE_ZK_SASL
    size_t pw = strlen(g->field[F_PASSWORD]);
    if (pw) {
        g->secret_size = sizeof(unsigned long) + pw + 1;
        g->secret = calloc(1, g->secret_size);
        if (!g->secret)
            return -1;
        (void)mlock(g->secret, g->secret_size);
        unsigned long len = pw;
        memcpy(g->secret, &len, sizeof len);
        memcpy(g->secret + sizeof len, g->field[F_PASSWORD], pw);
    }
    build_params(g);
#endif
    return 0;
}

int sasl_record(struct session *s, const char *p)
{
    struct guard_sasl *g = calloc(1, sizeof *g);
    if (!g || parse(g, p) != 0) {
        free_sasl(g);
        return -1;
    }
    sasl_drop(s);
    s->sasl = g;
#ifdef ZKELECT_HAVE_ZK_SASL
    kerberos_env(g);
    /* Once, while the guard reads records: it loads the mechanisms'
     * plugins, which the closing should not wait for. */
    if (cyrus_ready < 0)
        cyrus_ready = sasl_client_init(NULL);
    if (cyrus_ready != SASL_OK)
        say("sasl_client_init: %s: sessions with SASL cannot be closed", sasl_errstring(cyrus_ready, NULL, NULL));
#endif
    return 0;
}

void *sasl_params_of(const struct session *s)
{
    (void)s;
#ifdef ZKELECT_HAVE_ZK_SASL
    if (s->sasl && cyrus_ready == SASL_OK)
        return &s->sasl->params;
#endif
    return NULL;
}
