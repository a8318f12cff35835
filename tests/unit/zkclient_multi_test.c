/* zkclient/patches/multi-refused-subop.patch: a multi whose sub-op is
 * refused by the client before anything is sent must return the refusal
 * and leave the caller's path strings alone. Upstream's zoo_amulti went on
 * past the refused sub-op and freed, for each later one, the path an
 * uninitialised local held (the one before's): with three sub-ops after a
 * refused one, "free(): double free detected" and SIGABRT. libzkelect's
 * keepalive, a multi of checks sent on a handle that had just expired,
 * died so (the explorer's seed 20292896). A bad path is refused the same
 * way as an expired handle (Request_path_init), with no server needed;
 * either way zoo_amulti answers ZMARSHALLINGERROR.
 *
 * Under ASan (./dev test's build-asan) LeakSanitizer checks what the
 * refused multi allocated: its sub-ops' completion entries and its request
 * buffer, which upstream leaked (the refused sub-op, and a sub-op type the
 * client does not know: ZUNIMPLEMENTED). A multi that is queued (its
 * entries and buffer then the client's to free) is not here: with no
 * server, only zookeeper_close fails it, and upstream's close leaks a
 * failed request now and then (the completion thread may stop before it
 * runs the failure; destroy() does not run it either). The ASan runs of
 * tests/integration (fenced writes, keepalives) cover that path. */
#include <zookeeper/zookeeper.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

static void quiet(const char *message) { (void)message; }

int main(void)
{
    /* A port nobody listens on: the handle stays connecting (recoverable),
     * and nothing is sent. */
    zhandle_t *zh = zookeeper_init2("127.0.0.1:1", NULL, 30000, NULL, NULL, 0, quiet);
    if (!zh) {
        fprintf(stderr, "FAIL: zookeeper_init2\n");
        return 1;
    }
    /* Heap strings, as libzkelect's are (std::string beyond its inline
     * buffer): a free of one of them is a free the allocator can see. */
    const char *names[] = {"/zkelect-multi-test/first-a-long-enough-node-name",
                           "no-leading-slash-so-refused-by-the-client-itself",
                           "/zkelect-multi-test/third-a-long-enough-node-name",
                           "/zkelect-multi-test/fourth-a-long-enough-node-name",
                           "/zkelect-multi-test/fifth-a-long-enough-node-name"};
    enum { N = sizeof names / sizeof names[0] };
    char *paths[N];
    zoo_op_t ops[N];
    zoo_op_result_t results[N];
    for (int i = 0; i < N; i++) {
        paths[i] = malloc(strlen(names[i]) + 1);
        if (!paths[i])
            return 1;
        strcpy(paths[i], names[i]);
        zoo_check_op_init(&ops[i], paths[i], -1);
    }
    memset(results, 0, sizeof results);
    int rc = zoo_amulti(zh, N, ops, results, NULL, NULL);
    /* Upstream answers any refused multi with ZMARSHALLINGERROR. */
    if (rc != ZMARSHALLINGERROR)
        fprintf(stderr, "zoo_amulti returned %d\n", rc);
    expect(rc == ZMARSHALLINGERROR, "the multi is refused");
    for (int i = 0; i < N; i++)
        expect(strcmp(paths[i], names[i]) == 0, "the caller's paths are untouched");
    for (int i = 0; i < N; i++)
        free(paths[i]);  /* each freed once, here: a free inside zoo_amulti aborts now */

    /* A sub-op type the client does not know, after a valid one: refused
     * with ZUNIMPLEMENTED, the first sub-op's entry and the buffer freed. */
    zoo_op_t unknown[2];
    zoo_check_op_init(&unknown[0], names[0], -1);
    zoo_check_op_init(&unknown[1], names[2], -1);
    unknown[1].type = 9999;
    rc = zoo_amulti(zh, 2, unknown, results, NULL, NULL);
    expect(rc == ZUNIMPLEMENTED, "a multi with an unknown sub-op type is refused");
    zookeeper_close(zh);
    if (failures)
        return 1;
    printf("ok: a multi with a refused sub-op returns ZMARSHALLINGERROR and frees none of the "
           "caller's paths; one with an unknown sub-op type ZUNIMPLEMENTED\n");
    return 0;
}
