// Client::participants: an election's candidates in line, asked of
// ZooKeeper from a user's thread (synced first, a lost connection asked
// again after a pause), each node's data read for its id; and
// Client::read_children, the same for any children of a path (a balanced
// group's members).
#include <zookeeper/zookeeper.h>

#include <algorithm>
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

using Deadline = std::chrono::steady_clock::time_point;

// read_children's reads in flight at most: with ZooKeeper's 1 MB bound on
// a node's data, what a query holds at once stays below 64 MB whatever
// was written under the path, at a cost of one round trip per 64 nodes.
constexpr size_t kReadsInFlight = 64;

std::string no_answer(int timeout_ms) {
    return "ZooKeeper did not answer within " + std::to_string(timeout_ms) + " ms";
}

// What read_each holds at most: the reads in flight (a reply's data is
// whole in memory until its callback returns), and the bytes of data kept
// per node (a longer one is kept empty). Unlimited for participants,
// whose ids are returned as stored.
struct ReadBound {
    size_t in_flight = SIZE_MAX;
    size_t keep = SIZE_MAX;
};

// Each of names read for its data and stat, by deadline; a node gone
// meanwhile is left out.
int read_each(const Client &client, ZkPort &session, const std::string &path,
              const std::vector<std::string> &names, Deadline deadline, int timeout_ms,
              std::vector<NodeRead> *out, std::string *why, ReadBound bound = {}) {
    auto st = std::make_shared<QueryState>();
    st->datas.assign(names.size(), Reply{});
    const size_t keep = bound.keep;
    std::unique_lock<std::mutex> lock(st->mu);
    for (size_t next = 0; next < names.size() || st->outstanding > 0;) {
        // Sent from this thread as the window frees: the callbacks run on
        // ZooKeeper's thread, which must not wait for this one's lock.
        std::vector<size_t> send;
        for (; next < names.size() && size_t(st->outstanding) + send.size() < bound.in_flight; ++next)
            send.push_back(next);
        st->outstanding += static_cast<int>(send.size());
        if (!send.empty()) {
            lock.unlock();
            for (size_t i : send)
                session.get(path + "/" + names[i], false, [st, i, keep](Reply &&r) {
                    if (r.data.size() > keep) std::string().swap(r.data);
                    std::lock_guard<std::mutex> l(st->mu);
                    st->datas[i] = std::move(r);
                    st->outstanding--;
                    st->cv.notify_all();
                });
            lock.lock();
        }
        const size_t window = bound.in_flight;
        if (!st->cv.wait_until(lock, deadline, [&] {
                return st->outstanding == 0 ||
                       (next < names.size() && size_t(st->outstanding) < window);
            })) {
            *why = no_answer(timeout_ms);
            return client.connected() ? kETimedOut : kEConnLoss;
        }
    }
    out->clear();
    for (size_t i = 0; i < names.size(); ++i) {
        Reply &r = st->datas[i];
        if (r.rc == ZNONODE) continue;  // left while we asked
        if (r.rc != ZOK) {
            *why = "reading " + names[i] + ": " + client.reply_error(r.rc);
            return err_from_zk(r.rc);
        }
        out->push_back({names[i], std::move(r.data), r.stat});
    }
    return kOk;
}

}  // namespace

// The wait after a listing lost with its connection: a pause that doubles
// with the attempt, then until the client is connected again, by deadline.
// kOk once it is; kEAuth when the servers refused its credentials
// meanwhile; else kETimedOut (the caller answers for the listing).
int Client::await_reconnect(int attempt, Deadline deadline, std::string *why) {
    std::unique_lock<std::mutex> l(mu_);
    auto pause = std::min(deadline, std::chrono::steady_clock::now() +
                                        std::chrono::milliseconds(50 << attempt));
    connected_cv_.wait_until(l, pause, [&] { return auth_failed_ || stopping_; });
    connected_cv_.wait_until(l, deadline, [&] { return auth_failed_ || stopping_ || connected(); });
    if (auth_failed_) {
        *why = auth_why_;
        return kEAuth;
    }
    return connected() ? kOk : kETimedOut;
}

// The children of path (none when it does not exist), listed by deadline
// on the session it was listed with (*session).
int Client::list_children(const std::string &path, Deadline deadline, int timeout_ms,
                          std::shared_ptr<ZkPort> *session, std::vector<std::string> *children,
                          std::string *why) {
    // A connection lost under the listing: asked again once the client is
    // back, after a pause that doubles (at most 6 times, within the
    // deadline). A server that requires SASL of a client without it drops
    // every connection at its first request: meanwhile the client finds
    // out why (watch_for_sasl_refusal) and the query says so.
    for (int attempt = 0;; ++attempt) {
        *session = session_snapshot();
        if (!*session) {
            *why = "the client is closing";
            return kEClosed;
        }
        auto st = std::make_shared<QueryState>();
        st->outstanding = 1;
        // "Who leads now" asked of a server that has not applied another
        // session's latest create or delete would answer with the past: sync
        // first (one more round trip, through the quorum's leader).
#ifndef ZKELECT_MUTATION_UNSYNCED_READS
        (*session)->sync(path, ReplyFn([](Reply &&) {}));
#endif
        (*session)->get_children(path, false, [st](Reply &&r) {
            std::lock_guard<std::mutex> lock(st->mu);
            st->rc = r.rc;
            st->children = std::move(r.children);
            st->listed = true;
            st->outstanding--;
            st->cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(st->mu);
        if (!st->cv.wait_until(lock, deadline, [&] { return st->outstanding == 0; })) {
            *why = no_answer(timeout_ms);
            return connected() ? kETimedOut : kEConnLoss;
        }
        if (st->rc == ZCONNECTIONLOSS && attempt < 6) {
            lock.unlock();
            int rc = await_reconnect(attempt, deadline, why);
            if (rc == kEAuth) return rc;
            if (rc == kOk) continue;
        }
        if (st->rc != ZOK && st->rc != ZNONODE) {
            *why = std::string("listing ") + path + ": " + reply_error(st->rc);
            return err_from_zk(st->rc);
        }
        children->clear();  // no path: no children
        if (st->rc == ZOK) *children = std::move(st->children);
        return kOk;
    }
}

int Client::participants(const std::string &path, int timeout_ms,
                         std::vector<ParticipantInfo> *out, std::string *why) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::shared_ptr<ZkPort> session;
    std::vector<std::string> children;
    int rc = list_children(path, deadline, timeout_ms, &session, &children, why);
    if (rc != kOk) return rc;
    std::vector<std::string> names;
    for (const Candidate &c : order_candidates(children)) names.push_back(c.name);
    std::vector<NodeRead> read;
    if (!names.empty()) rc = read_each(*this, *session, path, names, deadline, timeout_ms, &read, why);
    if (rc != kOk) return rc;
    out->clear();
    for (NodeRead &n : read)
        out->push_back({std::move(n.name), std::move(n.data), n.stat.czxid, n.stat.ctime_ms});
    return kOk;
}

int Client::read_children(const std::string &path, int timeout_ms,
                          const std::function<bool(const std::string &)> &keep, size_t max,
                          size_t max_data,
                          std::vector<NodeRead> *out, size_t *unread, std::string *why) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::shared_ptr<ZkPort> session;
    std::vector<std::string> children;
    int rc = list_children(path, deadline, timeout_ms, &session, &children, why);
    if (rc != kOk) return rc;
    std::vector<std::string> names;
    for (std::string &c : children)
        if (keep(c)) names.push_back(std::move(c));
    std::sort(names.begin(), names.end());
    *unread = names.size() > max ? names.size() - max : 0;
    if (names.size() > max) names.resize(max);
    out->clear();
    if (names.empty()) return kOk;
    return read_each(*this, *session, path, names, deadline, timeout_ms, out, why,
                     ReadBound{kReadsInFlight, max_data});
}

}  // namespace zkelect
