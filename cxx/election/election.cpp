#include "election.h"

#include <chrono>
#include <future>

#include "candidacy.h"
#include "errors.h"

namespace zkelect {

Election::Election(Client &client, std::string path, std::string id)
    : client_(client),
      shared_(std::make_shared<ElectionShared>(std::move(path), std::move(id),
                                               size_t(client.settings().events_queue_max))),
      candidacy_(std::make_shared<Candidacy>(client, shared_)),
      events_(shared_->queue) {
    shared_->handshake_cap = &client_.handshake_cap();
    Client *c = &client_;
    auto cand = candidacy_;
    client_.post([c, cand] { cand->attach(c->add_member(cand)); });
}

// RAII: a handle dropped without close() still leaves the election.
Election::~Election() {
    if (shared_->phase.load() != Phase::kClosed) close();
}

int Election::reserve(std::string *why) {
    int64_t need = client_.candidate_node_bytes(shared_->path), total = 0;
    if (client_.reserve_node_bytes(need, &total)) return kOk;
    if (why)
        *why = "zk.session.nodes.max.bytes: this candidacy's node (up to " + std::to_string(need) +
               " bytes) would bring this client's candidate nodes to " + std::to_string(total) +
               " bytes, above the bound of " +
               std::to_string(client_.settings().session_nodes_max_bytes) +
               " (ZooKeeper ends a session with one transaction listing all its nodes, "
               "which must fit the servers' jute.maxbuffer; docs/limits.md); nothing was done";
    return kELimit;
}

int Election::volunteer(std::string *why) {
    uint64_t n;
    {
        std::lock_guard<std::mutex> lock(shared_->mu);
        Phase p = shared_->phase.load();
        if (p == Phase::kClosed) return kEClosed;
        // While a resign is carried out the volunteer queues behind it: the
        // new node is made once the old one is gone (after RESIGNED).
        if (p == Phase::kCandidate) return kEState;
        // The node's bytes, reserved here and handed to the candidacy with
        // the command (it releases them once the node is gone).
        if (int rc = reserve(why); rc != kOk) return rc;
        shared_->phase.store(Phase::kCandidate);
        shared_->last_error.store(0);
        n = ++shared_->commands;
    }
    auto cand = candidacy_;
    client_.post([cand, n] { cand->volunteer(n, /*reserved=*/1); });
    return kOk;
}

int Election::resign() {
    uint64_t n;
    {
        std::lock_guard<std::mutex> lock(shared_->mu);
        Phase p = shared_->phase.load();
        if (p == Phase::kClosed) return kEClosed;
        if (p != Phase::kCandidate) return kEState;
        shared_->phase.store(Phase::kResigning);
        // Leadership ends now, not when the loop gets to it; a claim the
        // loop makes before it sees this command cannot undo it.
        shared_->lease.fence();
        n = ++shared_->commands;
    }
    shared_->cv.notify_all();
    auto cand = candidacy_;
    client_.post([cand, n] { cand->resign(n); });
    return kOk;
}

int Election::requeue(std::string *why) {
    uint64_t r, v;
    {
        // Both commands under one lock: no other call can fall between
        // them, so the candidacy steps back and re-enters as one step.
        std::lock_guard<std::mutex> lock(shared_->mu);
        Phase p = shared_->phase.load();
        if (p == Phase::kClosed) return kEClosed;
        if (p != Phase::kCandidate) return kEState;
        if (int rc = reserve(why); rc != kOk) return rc;  // the new node, beside the old
        shared_->lease.fence();  // as resign(): leadership ends now
        r = ++shared_->commands;
        shared_->last_error.store(0);
        v = ++shared_->commands;
    }
    shared_->cv.notify_all();
    auto cand = candidacy_;
    client_.post([cand, r, v] {
        cand->resign(r);
        cand->volunteer(v, /*reserved=*/1);
    });
    return kOk;
}

std::shared_future<void> Election::leave() {
    uint64_t n;
    {
        std::lock_guard<std::mutex> lock(shared_->mu);
        shared_->phase.store(Phase::kClosed);
        shared_->lease.fence();
        n = ++shared_->commands;
    }
    shared_->cv.notify_all();
    auto done = std::make_shared<std::promise<void>>();
    std::shared_future<void> finished = done->get_future().share();
    auto cand = candidacy_;
    client_.post([cand, n, done] { cand->close(n, [done] { done->set_value(); }); });
    return finished;
}

void Election::close() {
    auto finished = leave();
    if (client_.stopped()) return;  // nothing runs the close (a client shut down)
    // The node's deletion is waited for, within bounds, while it can happen
    // at all; otherwise (and past the bound) the loop keeps at it in the
    // background, and the session's end removes the node anyway.
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(client_.effective_timeout_ms());
    while (finished.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready &&
           client_.connected() && std::chrono::steady_clock::now() < deadline) {
    }
}

int Election::shut_down() {
    int rc = events_.close([this] {
        shared_->queue.close();
        shared_->changed();
    });
    if (rc != kOk) return rc;
    // Closed already by its client's shutdown: the client finishes it.
    if (shared_->phase.load() != Phase::kClosed) close();
    return kOk;
}

ClientShutdown::Step Election::begin_shutdown() {
    uint64_t n;
    {
        std::lock_guard<std::mutex> lock(shared_->mu);
        if (shared_->phase.load() == Phase::kClosed) return nullptr;
        shared_->phase.store(Phase::kClosed);
        shared_->lease.fence();
        n = ++shared_->commands;
    }
    shared_->cv.notify_all();
    auto cand = candidacy_;
    return [cand, n](ClientShutdown::Gone gone) { cand->close_as_resign(n, std::move(gone)); };
}

int Election::await_leader(int timeout_ms) {
    Inside inside(events_.waiters());
    if (!inside) return kEClosed;
    return await_leader(timeout_ms, [this] { return events_.waiters().closing(); });
}

int Election::await_leader(int timeout_ms, const std::function<bool()> &abandon) {
    ElectionShared &s = *shared_;
    auto done = [&] {
        return s.is_leader() || s.phase.load() != Phase::kCandidate || s.last_error.load() != 0 ||
               abandon();
    };
    std::unique_lock<std::mutex> lock(s.mu);
    if (timeout_ms < 0) s.cv.wait(lock, done);
    else s.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
    if (s.is_leader()) return kOk;
    if (s.phase.load() == Phase::kClosed || abandon()) return kEClosed;
    if (int err = s.last_error.load(); err != 0) return err;
    if (s.phase.load() != Phase::kCandidate) return kEState;
    return kETimedOut;
}

int Election::begin_transfer(const std::string &target, int timeout_ms,
                             std::function<void(int)> done) {
    if (timeout_ms <= 0 || target == shared_->id) return kEInval;
    {
        std::lock_guard<std::mutex> lock(shared_->mu);
        Phase p = shared_->phase.load();
        if (p == Phase::kClosed) return kEClosed;
        if (p != Phase::kCandidate || !shared_->is_leader()) return kENotLeader;
    }
    int64_t deadline = boottime_ns() + int64_t(timeout_ms) * kNsPerMs;
    auto cand = candidacy_;
    client_.post([cand, target, deadline, done = std::move(done)] {
        cand->transfer(target, deadline, done);
    });
    return kOk;
}

int Election::transfer(const std::string &target, int timeout_ms) {
    if (timeout_ms <= 0 || target == shared_->id) return kEInval;
    if (client_.on_loop_thread()) return kEDeadlk;
    Inside inside(events_.waiters());
    if (!inside) return kEClosed;
    auto result = std::make_shared<std::promise<int>>();
    auto outcome = result->get_future();
    int64_t deadline = boottime_ns() + int64_t(timeout_ms) * kNsPerMs;
    int rc = begin_transfer(target, timeout_ms, [result](int rc) { result->set_value(rc); });
    if (rc != kOk) return rc;
    // The loop answers by the deadline, plus the handover's delete and a
    // synced listing; the bound past that covers a loop that cannot (a
    // connection lost meanwhile): the transfer then ends there on its own.
    // A drain (transfer.drain.ms) comes between the handover and its delete.
    int64_t bound = deadline + 2 * int64_t(client_.effective_timeout_ms()) * kNsPerMs +
                    int64_t(client_.settings().transfer_drain_ms) * kNsPerMs;
    while (outcome.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
        if (events_.waiters().closing()) return kEClosed;
        if (boottime_ns() > bound) return kETimedOut;
    }
    try {
        return outcome.get();
    } catch (const std::future_error &) {
        return kEClosed;  // the candidacy went with its client
    }
}

int Election::release() {
    if (shared_->phase.load() == Phase::kClosed) return kEClosed;
    uint64_t seq = shared_->drain_seq.exchange(0);
    if (seq == 0) return kEState;
    // The node no longer stands for the holder once this returns: its
    // delete is on its way.
    shared_->drain.revoke();
    auto cand = candidacy_;
    client_.post([cand, seq] { cand->release(seq); });
    return kOk;
}

int Election::fencing_token(int64_t *token) const {
    if (!shared_->is_leader()) return kENotLeader;
    *token = shared_->token.load();
    return kOk;
}

}  // namespace zkelect
