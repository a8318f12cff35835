// zkelect_fenced_ops_t and zkelect_fenced_commit: fenced ZooKeeper writes
// (cxx/election/fenced_write.h says why the check of the leader's node fences them).
#include <zkelect/zkelect.h>

#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "fenced_write.h"
#include "names.h"

#include "boundary.h"
#include "handles.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

struct zkelect_fenced_ops {
    std::vector<ZkOp> ops;
    size_t bytes = 0;    // paths and data, against kFencedMaxBytes
    int failed = -1;     // the last commit's refused operation
    int zk_rc = 0;       // and ZooKeeper's code behind its outcome
};

namespace {

int append(zkelect_fenced_ops *o, ZkOp::Kind kind, const char *path, const void *data, size_t len,
           int32_t version, bool ephemeral) {
    if (!o) return fail(ZKELECT_EINVAL, "ops is NULL");
    if (!path) return fail(ZKELECT_EINVAL, "path is NULL");
    if (!data && len > 0) return fail(ZKELECT_EINVAL, "data is NULL and len is not 0");
    if (len > kFencedMaxBytes)
        return fail(ZKELECT_EINVAL, "data is longer than " + std::to_string(kFencedMaxBytes) + " bytes");
    if (version < -1) return fail(ZKELECT_EINVAL, "version must be -1 (any) or above");
    if (std::string why = check_election_path(path); !why.empty())
        return fail(ZKELECT_EINVAL, why);
    ZkOp op;
    op.kind = kind;
    op.path = path;
    if (len > 0) op.data.assign(static_cast<const char *>(data), len);
    op.version = version;
    op.ephemeral = ephemeral;
    o->ops.push_back(std::move(op));
    o->bytes += o->ops.back().path.size() + len;
    return ZKELECT_OK;
}

// What both commits refuse before anything is sent.
int check_batch(const zkelect_fenced_ops *ops, int timeout_ms) {
    if (ops->ops.empty()) return fail(ZKELECT_EINVAL, "ops holds no operation");
    if (timeout_ms <= 0) return fail(ZKELECT_EINVAL, "timeout_ms must be above 0");
    if (ops->bytes > kFencedMaxBytes)
        return fail(ZKELECT_EINVAL, "ops holds " + std::to_string(ops->bytes) +
                                        " bytes of paths and data, above " +
                                        std::to_string(kFencedMaxBytes) +
                                        " (ZooKeeper would close the connection on it)");
    return ZKELECT_OK;
}

}  // namespace

extern "C" {

zkelect_fenced_ops_t *zkelect_fenced_ops_new(void) {
    return guarded<zkelect_fenced_ops_t *>(nullptr, [] { return new zkelect_fenced_ops(); });
}

int zkelect_fenced_ops_set(zkelect_fenced_ops_t *ops, const char *path, const void *data,
                           size_t len, int32_t version) {
    return guarded_code([&] { return append(ops, ZkOp::kSet, path, data, len, version, false); });
}

int zkelect_fenced_ops_create(zkelect_fenced_ops_t *ops, const char *path, const void *data,
                              size_t len, int flags) {
    return guarded_code([&] {
        if (flags & ~ZKELECT_FENCED_EPHEMERAL)
            return fail(ZKELECT_EINVAL, "flags: only ZKELECT_FENCED_EPHEMERAL is known");
        return append(ops, ZkOp::kCreate, path, data, len, -1,
                      (flags & ZKELECT_FENCED_EPHEMERAL) != 0);
    });
}

int zkelect_fenced_ops_delete(zkelect_fenced_ops_t *ops, const char *path, int32_t version) {
    return guarded_code([&] { return append(ops, ZkOp::kDelete, path, nullptr, 0, version, false); });
}

size_t zkelect_fenced_ops_count(const zkelect_fenced_ops_t *ops) { return ops ? ops->ops.size() : 0; }

int zkelect_fenced_ops_failed(const zkelect_fenced_ops_t *ops, int *zk_rc) {
    if (!ops) return -1;
    if (zk_rc) *zk_rc = ops->zk_rc;
    return ops->failed;
}

void zkelect_fenced_ops_destroy(zkelect_fenced_ops_t *ops) { delete ops; }

int zkelect_fenced_commit(zkelect_election_t *e, zkelect_fenced_ops_t *ops, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!e) return fail(ZKELECT_EINVAL, "election is NULL");
        if (!ops) return fail(ZKELECT_EINVAL, "ops is NULL");
        if (inherited(e)) return refuse_inherited("the election");
        ops->failed = -1;
        ops->zk_rc = 0;
        if (int rc = check_batch(ops, timeout_ms); rc != ZKELECT_OK) return rc;
        std::string why;
        int rc = e->election->fenced_commit(ops->ops, timeout_ms, &ops->failed, &ops->zk_rc, &why);
        if (rc == ZKELECT_ENOTLEADER)
            return fail(rc, "this candidacy does not lead now: nothing was sent");
        if (rc == ZKELECT_EDEADLK)
            return fail(rc, "called on the library's own thread, which would wait on itself");
        if (rc != ZKELECT_OK && !why.empty()) return fail(rc, why);
        return rc;
    });
}

int zkelect_client_fenced_commit(zkelect_client_t *client, const char *node, int64_t token,
                                 zkelect_fenced_ops_t *ops, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!client) return fail(ZKELECT_EINVAL, "client is NULL");
        if (!node) return fail(ZKELECT_EINVAL, "node is NULL");
        if (!ops) return fail(ZKELECT_EINVAL, "ops is NULL");
        if (inherited(client)) return refuse_inherited("the client");
        if (client->client->stopped()) return fail(ZKELECT_ECLOSED, kShutDown);
        ops->failed = -1;
        ops->zk_rc = 0;
        if (std::string why = check_election_path(node); !why.empty())
            return fail(ZKELECT_EINVAL, "node: " + why);
        if (token <= 0) return fail(ZKELECT_EINVAL, "token must be above 0 (a term's czxid)");
        if (int rc = check_batch(ops, timeout_ms); rc != ZKELECT_OK) return rc;
        std::string why;
        int rc = fenced_commit_at(*client->client, node, token, ops->ops, timeout_ms,
                                  &ops->failed, &ops->zk_rc, &why);
        if (rc == ZKELECT_EDEADLK)
            return fail(rc, "called on the library's own thread, which would wait on itself");
        if (rc != ZKELECT_OK && !why.empty()) return fail(rc, why);
        return rc;
    });
}

}  // extern "C"
