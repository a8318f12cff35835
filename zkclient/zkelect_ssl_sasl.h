/* The bundled client's one addition (ssl_sasl.c): a handle with TLS and
 * SASL together. clientid: a session to resume (the crash guard's, which
 * reconnects to a dead owner's session to close it), or NULL for a new one. */
#ifndef ZKELECT_SSL_SASL_H
#define ZKELECT_SSL_SASL_H

#include <zookeeper/zookeeper.h>

#ifdef __cplusplus
extern "C" {
#endif

zhandle_t *zkelect_zookeeper_init_ssl_sasl(const char *host, const char *cert,
                                           watcher_fn watcher, int recv_timeout,
                                           const clientid_t *clientid, void *context,
                                           log_callback_fn log_callback,
                                           zoo_sasl_params_t *sasl_params);

#ifdef __cplusplus
}
#endif

#endif
