#include "fenced_write.h"

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <future>
#include <utility>

#include "candidacy.h"
#include "client.h"
#include "clock.h"
#include "election.h"
#include "errors.h"
#include "waiters.h"

namespace zkelect {

int fenced_outcome(const Reply &r, size_t ops, int *failed, int *zk_rc, std::string *why) {
    *failed = -1;
    *zk_rc = r.rc;
    if (r.rc == ZOK) return kOk;
    // ZRUNTIMEINCONSISTENCY with no results is libzookeeper's, not the
    // server's: a reply came out of order (an earlier one was lost) and it
    // dropped the connection, failing every pending request with it. The
    // write may have committed (seed 5501 of the explorer: it had).
    if (connection_trouble(r.rc) || (r.rc == ZRUNTIMEINCONSISTENCY && r.results.empty())) {
        *why = std::string("the connection or session failed with the write on its way (") +
               zerror(r.rc) +
               "): it may or may not have committed; read what it wrote to find out";
        return r.rc == ZSESSIONEXPIRED ? kESessionExpired : kEConnLoss;
    }
    if (r.results.size() == ops + 1) {
        if (r.results[0] != ZOK) {
            *zk_rc = r.results[0];
            *why = std::string("this candidacy's node is gone or changed (") + zerror(r.results[0]) +
                   "): its term is over; nothing was committed";
            return kEFenced;
        }
        for (size_t i = 1; i < r.results.size(); ++i) {
            if (r.results[i] == ZOK || r.results[i] == ZRUNTIMEINCONSISTENCY) continue;
            *failed = int(i - 1);
            *zk_rc = r.results[i];
            *why = "ZooKeeper refused operation " + std::to_string(i - 1) + " (" +
                   zerror(r.results[i]) + "); nothing was committed";
            return r.results[i] == ZNOAUTH ? kEAuth : kEZk;
        }
    }
    *why = std::string("ZooKeeper refused the write (") + zerror(r.rc) + "); nothing was committed";
    if (r.rc == ZNOAUTH) return kEAuth;
    if (r.rc == ZUNIMPLEMENTED) return kENotSup;
    return kEZk;
}

void Candidacy::fenced_write(std::vector<ZkOp> ops, std::function<void(int, Reply &&)> done) {
    // A term alone also holds while the lease is being renewed (Claiming)
    // or ran out; is_leader() is what the user was told.
    if (!term_.leading() || node_.empty() || closing_ || !shared_->is_leader()) {
        done(kENotLeader, Reply{});
        return;
    }
    ZkOp check;
    check.kind = ZkOp::kCheck;
    check.path = node_path(node_);
    check.version = term_.fence_version();
#ifdef ZKELECT_MUTATION_FENCED_WRITE_UNCHECKED
    // Mutation: the check that fences the write is left out (a check of
    // the root, which always stands, keeps the reply's shape).
    check.path = "/";
    check.version = -1;
#endif
    ops.insert(ops.begin(), std::move(check));
    shared_->stats.update([](ElectionCounts &st) { st.requests += 1; });
    zk().multi(ops, [done](Reply &&r) { done(kOk, std::move(r)); });
}

int Election::begin_fenced_commit(std::vector<ZkOp> ops, FencedDone done) {
    if (ops.empty()) return kEInval;
    {
        std::lock_guard<std::mutex> lock(shared_->mu);
        Phase p = shared_->phase.load();
        if (p == Phase::kClosed) return kEClosed;
        if (p != Phase::kCandidate || !shared_->is_leader()) return kENotLeader;
    }
    const size_t n = ops.size();
    auto cand = candidacy_;
    client_.post([cand, n, ops = std::move(ops), done = std::move(done)]() mutable {
        cand->fenced_write(std::move(ops), [n, done](int code, Reply &&r) {
            int failed = -1, zk_rc = 0;
            std::string why;
            if (code == kOk) code = fenced_outcome(r, n, &failed, &zk_rc, &why);
            done(code, failed, zk_rc, why);
        });
    });
    return kOk;
}

namespace {

struct FencedResult {
    int code = kOk, failed = -1, zk_rc = 0;
    std::string why;
};

}  // namespace

int Election::fenced_commit(std::vector<ZkOp> ops, int timeout_ms, int *failed, int *zk_rc,
                            std::string *why) {
    *failed = -1;
    *zk_rc = 0;
    if (timeout_ms <= 0 || ops.empty()) return kEInval;
    if (client_.on_loop_thread()) return kEDeadlk;
    Inside inside(events_.waiters());
    if (!inside) return kEClosed;
    auto result = std::make_shared<std::promise<FencedResult>>();
    auto outcome = result->get_future();
    int64_t deadline = boottime_ns() + int64_t(timeout_ms) * kNsPerMs;
    int rc = begin_fenced_commit(std::move(ops),
                                 [result](int code, int f, int z, const std::string &w) {
                                     result->set_value({code, f, z, w});
                                 });
    if (rc != kOk) return rc;
    while (outcome.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
        if (events_.waiters().closing()) return kEClosed;
        if (boottime_ns() > deadline) {
            *why = "no answer within timeout_ms: the write may still commit (only while this "
                   "candidacy's node stands); read what it wrote to find out";
            return kETimedOut;
        }
    }
    FencedResult got;
    try {
        got = outcome.get();
    } catch (const std::future_error &) {
        return kEClosed;  // the candidacy went with its client
    }
    *failed = got.failed;
    *zk_rc = got.zk_rc;
    *why = got.why;
    return got.code;
}

namespace {

// One request sent from the client's loop (its session's requests go from
// there), its reply awaited here until deadline (boottime ns). false: no
// reply in time, or the client went before sending it (*closed).
bool ask(Client &c, int64_t deadline, std::function<void(ZkPort &, ReplyFn)> send, Reply *out,
         bool *closed) {
    auto result = std::make_shared<std::promise<Reply>>();
    auto reply = result->get_future();
    c.post([&c, send = std::move(send), result] {
        send(c.session(), [result](Reply &&r) { result->set_value(std::move(r)); });
    });
    while (reply.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
        if (boottime_ns() > deadline) return false;
    try {
        *out = reply.get();
    } catch (const std::future_error &) {
        *closed = true;  // the loop dropped the request: the client is closing
        return false;
    }
    return true;
}

// The leader's node as of now: its stat in *r, or why it cannot fence (the
// code; nothing was sent). A "no node" from a server behind the quorum is
// asked again behind a sync: only the quorum's answer ends a term.
int read_node(Client &c, const std::string &node, int64_t deadline, Reply *r, std::string *why) {
    bool closed = false;
    for (int synced = 0; synced < 2; ++synced) {
        auto send = [node, synced](ZkPort &zk, ReplyFn fn) {
            if (synced) zk.sync(node, ReplyFn([](Reply &&) {}));
            zk.exists(node, false, std::move(fn));
        };
        if (!ask(c, deadline, send, r, &closed)) {
            if (closed) return kEClosed;
            *why = "no answer within timeout_ms to the read of " + node + "; nothing was sent";
            return kETimedOut;
        }
        if (r->rc != ZNONODE) break;
    }
    if (r->rc == ZOK && r->has_stat) return kOk;
    if (connection_trouble(r->rc) || r->rc == ZRUNTIMEINCONSISTENCY) {
        *why = std::string("the connection failed before the write was sent (") + zerror(r->rc) +
               "): nothing was committed";
        return r->rc == ZSESSIONEXPIRED ? kESessionExpired : kEConnLoss;
    }
    if (r->rc == ZNONODE) {
        *why = "the leader's node " + node + " is gone: its term is over; nothing was sent";
        return kEFenced;
    }
    *why = "reading the leader's node " + node + ": " + zerror(r->rc) + "; nothing was sent";
    return err_from_zk(r->rc);
}

}  // namespace

int fenced_commit_at(Client &c, const std::string &node, int64_t token, std::vector<ZkOp> ops,
                     int timeout_ms, int *failed, int *zk_rc, std::string *why) {
    *failed = -1;
    *zk_rc = 0;
    if (timeout_ms <= 0 || ops.empty() || token <= 0) return kEInval;
    if (c.on_loop_thread()) return kEDeadlk;
    int64_t deadline = boottime_ns() + int64_t(timeout_ms) * kNsPerMs;
    ZkOp check;
    check.kind = ZkOp::kCheck;
    check.path = node;
    Reply stat;
    int rc = read_node(c, node, deadline, &stat, why);
#ifdef ZKELECT_MUTATION_FENCED_WRITE_UNCHECKED
    // Mutation: neither the read's verdict nor the check (of the root,
    // which always stands) fences the write.
    rc = kOk;
    stat.stat.czxid = token;
    check.path = "/";
    check.version = -1;
#endif
    if (rc != kOk) {
        *zk_rc = stat.rc;
        return rc;
    }
    if (stat.stat.czxid != token) {
        *why = "the node " + node + " was created by transaction " +
               std::to_string(stat.stat.czxid) + ", not by the term's token " +
               std::to_string(token) + ": it is another term's node; nothing was sent";
        return kEFenced;
    }
#ifndef ZKELECT_MUTATION_FENCED_WRITE_UNCHECKED
    check.version = stat.stat.version;
#endif
    const size_t n = ops.size();
    ops.insert(ops.begin(), std::move(check));
    Reply r;
    bool closed = false;
    auto send = [ops = std::move(ops)](ZkPort &zk, ReplyFn fn) { zk.multi(ops, std::move(fn)); };
    if (!ask(c, deadline, send, &r, &closed)) {
        if (closed) {
            *why = "the client is closing: the write may have been sent";
            return kEClosed;
        }
        *why = "no answer within timeout_ms: the write may still commit (only while the "
               "leader's node stands); read what it wrote to find out";
        return kETimedOut;
    }
    return fenced_outcome(r, n, failed, zk_rc, why);
}

}  // namespace zkelect
