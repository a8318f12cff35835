/*
 * The pkg-config consumer check: a program that knows libzkelect only
 * through `pkg-config --cflags --libs libzkelect` and the installed header.
 * It checks that the header and the library it loads agree on the version,
 * wins an election and prints its fencing token.
 *
 *   cc elect.c -o elect $(pkg-config --cflags --libs libzkelect)
 *   ./elect HOSTS PATH [ID]
 *
 * Prints "VERSION <x.y.z>", then "LEADER <id> token=<n>"; exits 0, or
 * non-zero with the reason on stderr.
 */
#include <zkelect/zkelect.h>
#include <zkelect/version.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, int rc, const char *detail)
{
    fprintf(stderr, "elect: %s: %s (%s)\n", what,
            detail && *detail ? detail : zkelect_strerror(rc), zkelect_err_name(rc));
    return 1;
}

int main(int argc, char **argv)
{
    char err[256] = "";
    char leader[ZKELECT_ID_MAX + 1];
    const char *id = argc > 3 ? argv[3] : "c-consumer";
    zkelect_conf_t *conf;
    zkelect_client_t *client;
    zkelect_election_t *election;
    int64_t token = 0;
    int rc;

    if (argc < 3) {
        fprintf(stderr, "usage: %s HOSTS PATH [ID]\n", argv[0]);
        return 2;
    }
    /* A program built against one release and run against another must be
     * able to tell; here they must be the same. */
    if (zkelect_version() != ZKELECT_VERSION_NUMBER ||
        strcmp(zkelect_version_string(), ZKELECT_VERSION_STRING) != 0) {
        fprintf(stderr, "elect: header %s (%u) but library %s (%u)\n", ZKELECT_VERSION_STRING,
                (unsigned)ZKELECT_VERSION_NUMBER, zkelect_version_string(), zkelect_version());
        return 3;
    }
    printf("VERSION %s\n", zkelect_version_string());

    conf = zkelect_conf_new();
    if (!conf)
        return fail("conf_new", ZKELECT_ENOMEM, NULL);
    rc = zkelect_conf_set(conf, "zk.hosts", argv[1], err, sizeof err);
    if (rc == 0)
        rc = zkelect_conf_set(conf, "zk.session.timeout.ms", "6000", err, sizeof err);
    if (rc != 0) {
        zkelect_conf_destroy(conf);
        return fail("conf_set", rc, err);
    }
    client = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!client)
        return fail("client_new", ZKELECT_EINVAL, err);

    election = zkelect_election_new(client, argv[2], id, err, sizeof err);
    if (!election) {
        zkelect_client_destroy(client);
        return fail("election_new", ZKELECT_EINVAL, err);
    }
    rc = zkelect_volunteer(election);
    if (rc == 0)
        rc = zkelect_await_leader(election, 30000);
    if (rc == 0)
        rc = zkelect_fencing_token(election, &token);
    if (rc == 0)
        rc = zkelect_leader_id(election, leader, sizeof leader);
    if (rc == 0 && strcmp(leader, id) != 0) {
        fprintf(stderr, "elect: leading, but ZooKeeper names %s as leader\n", leader);
        rc = ZKELECT_EINTERNAL;
    }
    if (rc == 0) {
        printf("LEADER %s token=%" PRId64 "\n", id, token);
        fflush(stdout);
    } else {
        fail("election", rc, NULL);
    }
    zkelect_election_destroy(election);
    zkelect_client_destroy(client);
    return rc == 0 ? 0 : 1;
}
