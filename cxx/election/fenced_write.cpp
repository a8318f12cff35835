#include "fenced_write.h"

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <future>
#include <utility>

#include "candidacy.h"
#include "clock.h"
#include "election.h"
#include "errors.h"
#include "waiters.h"

namespace zkelect {

int fenced_outcome(const Reply &r, size_t ops, int *failed, int *zk_rc, std::string *why) {
    *failed = -1;
    *zk_rc = r.rc;
    if (r.rc == ZOK) return kOk;
    if (connection_trouble(r.rc)) {
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
    // leading_ alone also holds while the lease is being renewed (Claiming)
    // or ran out; is_leader() is what the user was told.
    if (!leading_ || node_.empty() || closing_ || !shared_->is_leader()) {
        done(kENotLeader, Reply{});
        return;
    }
    ZkOp check;
    check.kind = ZkOp::kCheck;
    check.path = node_path(node_);
    check.version = own_version_czxid_ == czxid_ ? own_version_ : 0;
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

int Election::fenced_commit(std::vector<ZkOp> ops, int timeout_ms, int *failed, int *zk_rc,
                            std::string *why) {
    *failed = -1;
    *zk_rc = 0;
    if (timeout_ms <= 0 || ops.empty()) return kEInval;
    if (client_.on_loop_thread()) return kEDeadlk;
    Inside inside(events_.waiters());
    if (!inside) return kEClosed;
    {
        std::lock_guard<std::mutex> lock(shared_->mu);
        Phase p = shared_->phase.load();
        if (p == Phase::kClosed) return kEClosed;
        if (p != Phase::kCandidate || !shared_->is_leader()) return kENotLeader;
    }
    const size_t n = ops.size();
    auto result = std::make_shared<std::promise<std::pair<int, Reply>>>();
    auto outcome = result->get_future();
    int64_t deadline = boottime_ns() + int64_t(timeout_ms) * kNsPerMs;
    auto cand = candidacy_;
    client_.post([cand, ops = std::move(ops), result]() mutable {
        cand->fenced_write(std::move(ops), [result](int code, Reply &&r) {
            result->set_value({code, std::move(r)});
        });
    });
    while (outcome.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
        if (events_.waiters().closing()) return kEClosed;
        if (boottime_ns() > deadline) {
            *why = "no answer within timeout_ms: the write may still commit (only while this "
                   "candidacy's node stands); read what it wrote to find out";
            return kETimedOut;
        }
    }
    std::pair<int, Reply> got;
    try {
        got = outcome.get();
    } catch (const std::future_error &) {
        return kEClosed;  // the candidacy went with its client
    }
    if (got.first != kOk) return got.first;
    return fenced_outcome(got.second, n, failed, zk_rc, why);
}

}  // namespace zkelect
