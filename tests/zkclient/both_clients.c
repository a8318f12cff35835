/* A program that uses the system's libzookeeper-mt itself and libzkelect
 * (with its bundled client) beside it: each must reach its own copy. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>
#include <zkelect/zkelect.h>

static const char *lib_of(void *fn)
{
    Dl_info info;
    return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *hosts = argv[1], *path = argv[2];
    zoo_set_debug_level(0);
    zhandle_t *zh = zookeeper_init(hosts, NULL, 10000, NULL, NULL, 0);
    for (int i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 200; i++)
        usleep(50 * 1000);
    if (!zh || zoo_state(zh) != ZOO_CONNECTED_STATE) {
        fprintf(stderr, "system client did not connect\n");
        return 1;
    }
    printf("zookeeper_init in %s\n", lib_of((void *)zookeeper_init));
    char err[512];
    zkelect_conf_t *conf = zkelect_conf_new();
    if (zkelect_conf_set(conf, "zk.hosts", hosts, err, sizeof err) != 0)
        return 1;
    zkelect_client_t *c = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!c || zkelect_client_await_connected(c, 15000) != 0) {
        fprintf(stderr, "libzkelect did not connect: %s\n", err);
        return 1;
    }
    zkelect_election_t *e = zkelect_election_new(c, path, "both", err, sizeof err);
    if (!e || zkelect_volunteer(e) != 0) {
        fprintf(stderr, "election: %s\n", err);
        return 1;
    }
    int leading = zkelect_await_leader(e, 15000) == 0 && zkelect_is_leader(e) == 1;
    /* The system client sees the node libzkelect's client made. */
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &kids);
    printf("leading=%d children rc=%d n=%d\n", leading, rc, kids.count);
    deallocate_String_vector(&kids);
    zkelect_election_destroy(e);
    zkelect_client_destroy(c);
    zookeeper_close(zh);
    return leading && rc == ZOK ? 0 : 1;
}
