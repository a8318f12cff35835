/* The bundled client's one addition (ssl_sasl.c): a handle with TLS and
 * SASL together. */
#ifndef ZKELECT_SSL_SASL_H
#define ZKELECT_SSL_SASL_H

#include <zookeeper/zookeeper.h>

#ifdef __cplusplus
extern "C" {
#endif

zhandle_t *zkelect_zookeeper_init_ssl_sasl(const char *host, const char *cert,
                                           watcher_fn watcher, int recv_timeout,
                                           void *context, log_callback_fn log_callback,
                                           zoo_sasl_params_t *sasl_params);

#ifdef __cplusplus
}
#endif

#endif
