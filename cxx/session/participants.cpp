// Client::participants: an election's candidates in line, asked of
// ZooKeeper from a user's thread (synced first, a lost connection asked
// again after a pause), each node's data read for its id.
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "client.h"

namespace zkelect {

namespace {
struct QueryState {
    std::mutex mu;
    std::condition_variable cv;
    int outstanding = 0;
    int rc = 0;
    bool listed = false;
    std::vector<std::string> children;
    std::vector<Reply> datas;
};
}  // namespace

int Client::participants(const std::string &path, int timeout_ms,
                         std::vector<ParticipantInfo> *out, std::string *why) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::shared_ptr<ZkPort> session;
    std::shared_ptr<QueryState> st;
    std::vector<Candidate> order;
    // A connection lost under the listing: asked again once the client is
    // back, after a pause that doubles (at most 6 times, within the
    // deadline). A server that requires SASL of a client without it drops
    // every connection at its first request: meanwhile the client finds
    // out why (watch_for_sasl_refusal) and the query says so.
    for (int attempt = 0;; ++attempt) {
        session = session_snapshot();
        if (!session) {
            *why = "the client is closing";
            return kEClosed;
        }
        st = std::make_shared<QueryState>();
        st->outstanding = 1;
        // "Who leads now" asked of a server that has not applied another
        // session's latest create or delete would answer with the past: sync
        // first (one more round trip, through the quorum's leader).
#ifndef ZKELECT_MUTATION_UNSYNCED_READS
        session->sync(path, ReplyFn([](Reply &&) {}));
#endif
        session->get_children(path, false, [st](Reply &&r) {
            std::lock_guard<std::mutex> lock(st->mu);
            st->rc = r.rc;
            st->children = std::move(r.children);
            st->listed = true;
            st->outstanding--;
            st->cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(st->mu);
        if (!st->cv.wait_until(lock, deadline, [&] { return st->outstanding == 0; })) {
            *why = "ZooKeeper did not answer within " + std::to_string(timeout_ms) + " ms";
            return connected() ? kETimedOut : kEConnLoss;
        }
        if (st->rc == ZCONNECTIONLOSS && attempt < 6) {
            lock.unlock();
            std::unique_lock<std::mutex> l(mu_);
            auto pause = std::min(deadline, std::chrono::steady_clock::now() +
                                                std::chrono::milliseconds(50 << attempt));
            connected_cv_.wait_until(l, pause, [&] { return auth_failed_ || stopping_; });
            connected_cv_.wait_until(l, deadline,
                                     [&] { return auth_failed_ || stopping_ || connected(); });
            if (auth_failed_) {
                *why = auth_why_;
                return kEAuth;
            }
            if (connected()) continue;
        }
        if (st->rc == ZNONODE) {
            out->clear();
            return kOk;  // no path: no candidates
        }
        if (st->rc != ZOK) {
            *why = std::string("listing ") + path + ": " + zerror(st->rc);
            return err_from_zk(st->rc);
        }
        order = order_candidates(st->children);
        st->datas.assign(order.size(), Reply{});
        st->outstanding = static_cast<int>(order.size());
        break;
    }
    for (size_t i = 0; i < order.size(); ++i) {
        session->get(path + "/" + order[i].name, false, [st, i](Reply &&r) {
            std::lock_guard<std::mutex> lock(st->mu);
            st->datas[i] = std::move(r);
            st->outstanding--;
            st->cv.notify_all();
        });
    }
    std::unique_lock<std::mutex> lock(st->mu);
    if (!st->cv.wait_until(lock, deadline, [&] { return st->outstanding == 0; })) {
        *why = "ZooKeeper did not answer within " + std::to_string(timeout_ms) + " ms";
        return connected() ? kETimedOut : kEConnLoss;
    }
    out->clear();
    for (size_t i = 0; i < order.size(); ++i) {
        const Reply &r = st->datas[i];
        if (r.rc == ZNONODE) continue;  // left while we asked
        if (r.rc != ZOK) {
            *why = "reading " + order[i].name + ": " + zerror(r.rc);
            return err_from_zk(r.rc);
        }
        out->push_back({order[i].name, r.data, r.stat.czxid, r.stat.ctime_ms});
    }
    return kOk;
}

}  // namespace zkelect
