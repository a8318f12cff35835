/*
 * What a fenced ZooKeeper write costs (issue 54: at most 1.1 x a plain set
 * of the same size), beside bench/zkset.c's plain zoo_set on the same
 * server. One candidacy leads an election of its own; then COUNT writes
 * back to back, each a batch of one set of BYTES bytes to a node of its
 * own, timed from zkelect_fenced_ops_new() to zkelect_fenced_ops_destroy()
 * (building the batch, the commit's round trip, freeing it: what a leader
 * pays for each write, as docs/fencing.md writes one), after WARMUP untimed
 * ones.
 *
 *   zkelect-bench-fenced --connect HOSTS [--bytes S] [--count N] [--warmup W]
 * Prints one JSON object on stdout, every timed write in microseconds.
 */
#include "bcommon.h"

/* One fenced batch of a single operation; the commit's code. */
static int commit_one(zkelect_election_t *e, int kind, const char *path, const char *data,
                      size_t len)
{
    zkelect_fenced_ops_t *ops = zkelect_fenced_ops_new();
    if (!ops) die("fenced_ops_new");
    int rc = kind == 's'   ? zkelect_fenced_ops_set(ops, path, data, len, -1)
             : kind == 'c' ? zkelect_fenced_ops_create(ops, path, data, len, 0)
                           : zkelect_fenced_ops_delete(ops, path, -1);
    if (rc) die("fenced_ops (%c): %s", kind, zkelect_strerror(rc));
    rc = zkelect_fenced_commit(e, ops, 10000);
    zkelect_fenced_ops_destroy(ops);
    return rc;
}

int main(int argc, char **argv)
{
    const char *hosts = opt(argc, argv, "--connect", BENCH_DEFAULT_HOSTS);
    size_t bytes = (size_t)opt_long(argc, argv, "--bytes", 100);
    int count = (int)opt_long(argc, argv, "--count", 200);
    int warmup = (int)opt_long(argc, argv, "--warmup", 50);
    if (count < 1) die("--count must be at least 1");
    char *data = malloc(bytes + 1);
    double *us = calloc((size_t)count, sizeof *us);
    if (!data || !us) die("out of memory");
    memset(data, 'f', bytes);

    char path[128], node[128];
    snprintf(path, sizeof path, "/zkelect_bench_fenced_%d/e", (int)getpid());
    snprintf(node, sizeof node, "/zkelect_bench_fenced_%d_data", (int)getpid());
    zkelect_client_t *cl = client_open(hosts, 10000);
    client_wait(cl);
    char err[256];
    zkelect_election_t *e = zkelect_election_new(cl, path, "writer", err, sizeof err);
    if (!e) die("election_new: %s", err);
    int rc = zkelect_volunteer(e);
    if (!rc) rc = zkelect_await_leader(e, 30000);
    if (rc) die("not elected: %s", zkelect_strerror(rc));
    if ((rc = commit_one(e, 'c', node, data, bytes)))
        die("fenced create of %s: %s (%s)", node, zkelect_strerror(rc), zkelect_last_error());

    for (int i = -warmup; i < count; i++) {
        int64_t t0 = mono_ns();
        rc = commit_one(e, 's', node, data, bytes);
        int64_t t1 = mono_ns();
        if (rc) die("fenced set %d: %s (%s)", i, zkelect_strerror(rc), zkelect_last_error());
        if (i >= 0) us[i] = (t1 - t0) / 1e3;
    }
    printf("{\"bytes\": %zu, \"count\": %d, \"warmup\": %d, \"fenced_us\": [", bytes, count, warmup);
    for (int i = 0; i < count; i++) printf("%s%.1f", i ? ", " : "", us[i]);
    printf("]}\n");

    if ((rc = commit_one(e, 'd', node, NULL, 0)))
        note("fenced delete of %s: %s", node, zkelect_strerror(rc));
    zkelect_election_destroy(e);
    zkelect_client_destroy(cl);
    free(data);
    free(us);
    return 0;
}
