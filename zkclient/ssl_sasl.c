/* TLS and SASL on one handle. ZooKeeper 3.8.0's C client can do both at
 * once (its internal zookeeper_init_internal takes a certificate and SASL
 * parameters) but exports only one or the other: zookeeper_init_ssl or
 * zookeeper_init_sasl. This unit compiles the client's zookeeper.c in
 * place of the file itself and adds the one entry point that passes both,
 * so no line of upstream's is copied. The zookeeper.c included is the one
 * zkclient/meson.build patched in the build tree (zkclient/patches/). Built
 * only for -Dzookeeper=bundled. */
#include "zookeeper_patched.c"

#include "zkelect_ssl_sasl.h"

zhandle_t *zkelect_zookeeper_init_ssl_sasl(const char *host, const char *cert,
                                           watcher_fn watcher, int recv_timeout,
                                           const clientid_t *clientid, void *context,
                                           log_callback_fn log_callback,
                                           zoo_sasl_params_t *sasl_params)
{
    /* "ca,cert,key[,password]" or "ca" alone (no client certificate:
     * zkclient/patches/), as zookeeper_init_ssl takes it. The handle
     * keeps a copy of zcert and frees certstr when it closes: the four
     * fields point into that one buffer, cut at its commas. */
    zcert_t zcert;
    char *fields[4] = {NULL, NULL, NULL, NULL};
    char *p;
    int i = 0;
    memset(&zcert, 0, sizeof zcert);
    zcert.certstr = strdup(cert);
    if (!zcert.certstr) {
        errno = ENOMEM;
        return NULL;
    }
    for (p = zcert.certstr; i < 4; i++) {
        fields[i] = p;
        p = strchr(p, ',');
        if (!p) break;
        *p++ = '\0';
    }
    zcert.ca = fields[0];
    zcert.cert = fields[1];
    zcert.key = fields[2];
    zcert.passwd = fields[3];
    /* Failed or not, the handle owns certstr now (a failure frees it). */
    return zookeeper_init_internal(host, watcher, recv_timeout, clientid, context, 0, log_callback,
                                   &zcert, sasl_params);
}
