/* LD_PRELOAD experiment: every zookeeper_init'ed handle gets
 * zoo_set_servers_resolution_delay(zh, -1) (no host re-resolution on each
 * loop iteration of the C client's IO thread). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <zookeeper/zookeeper.h>
typedef zhandle_t *(*init_fn)(const char *, watcher_fn, int, const clientid_t *, void *, int);
zhandle_t *zookeeper_init(const char *host, watcher_fn fn, int recv_timeout,
                          const clientid_t *clientid, void *context, int flags)
{
    init_fn real = (init_fn)dlsym(RTLD_NEXT, "zookeeper_init");
    zhandle_t *zh = real(host, fn, recv_timeout, clientid, context, flags);
    if (zh) zoo_set_servers_resolution_delay(zh, -1);
    return zh;
}
