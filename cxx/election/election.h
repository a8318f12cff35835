// One election handle, as the C API hands it out: the user's side of a
// candidacy. It checks and records the user's commands (the phase), fences
// the lease on resign and close, and hands the commands, numbered, to the
// candidacy on the client's loop, which alone runs the state machine. Its
// events reach the user through events().
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "client.h"
#include "client_shutdown.h"
#include "election_shared.h"
#include "event_delivery.h"

namespace zkelect {

class Candidacy;

class Election {
public:
    // Throws (bad_alloc) only; the path and id are checked by the caller.
    Election(Client &client, std::string path, std::string id);
    ~Election();
    Election(const Election &) = delete;
    Election &operator=(const Election &) = delete;

    // Any thread. kOk, kEState (not idle / not a candidate), kEClosed,
    // kELimit (the new node would bring the client's candidate nodes above
    // zk.session.nodes.max.bytes: nothing done; *why says so when given).
    // A volunteer reserves the node's bytes (Client::reserve_node_bytes);
    // the candidacy releases them once its node is gone.
    int volunteer(std::string *why = nullptr);
    int resign();
    // resign() and volunteer() in one: the node goes and a new one is made
    // behind it, at the back of the line. kOk, kEState (not a candidate),
    // kEClosed, kELimit (as volunteer: the new node counts beside the old
    // one until that is gone).
    int requeue(std::string *why = nullptr);
    // Leave for good: leadership ends at once, the node is deleted; waits
    // for that while it can happen (connected), at most one session timeout.
    void close();
    // close() without the wait: leadership ends at once and the deletion
    // is under way; the future is ready once the candidacy is done with it.
    // For a caller that must not block (the simulation's one thread).
    std::shared_future<void> leave();
    // The handle's end: kEDeadlk from one of its own callbacks (it would
    // wait on itself); else ends event delivery, releases the threads
    // blocked in the handle's calls and waits for them to leave, then
    // close(). Nothing of the handle is in use afterwards.
    int shut_down();
    // The first half of the client's shutdown (client_shutdown.h), on the
    // caller's thread: leadership ends now (is_leader answers 0), the phase
    // is closed (every later command says kEClosed). The step returned
    // ends the candidacy on the loop as a resign would (DEPOSED, reason
    // RESIGNED, for a leader; RESIGNED once the node is gone), then leaves
    // for good. Empty when the handle was closed already. After it,
    // shut_down() waits for nothing.
    ClientShutdown::Step begin_shutdown();

    bool is_leader() const { return shared_->is_leader(); }
    // kOk when leading, else kEClosed, the candidacy's error, kEState (not a
    // candidate) or kETimedOut. timeout_ms < 0: no limit. abandon() is
    // checked on every wake-up (a closing handle).
    int await_leader(int timeout_ms, const std::function<bool()> &abandon);
    // The same, abandoned (kEClosed) when shut_down() begins.
    int await_leader(int timeout_ms);
    int fencing_token(int64_t *token) const;
    // Hand leadership to the candidate whose id is target and wait for the
    // outcome (Candidacy::transfer). Any thread but the client's loop:
    // kEDeadlk there. kEInval for our own id or timeout_ms <= 0,
    // kENotLeader when not leading, kEClosed when shut_down() begins.
    int transfer(const std::string &target, int timeout_ms);
    // transfer() without the wait, for a caller that must not block (the
    // simulation's one thread): kOk once the transfer is handed to the
    // loop, which calls done(outcome) there; else the code at once.
    int begin_transfer(const std::string &target, int timeout_ms, std::function<void(int)> done);
    // The holder of a transfer's drain is done (zkelect_release): kOk, or
    // kEState when no drain waits for it, kEClosed. Any thread.
    int release();
    bool is_draining() const { return shared_->is_draining(); }
    // cxx/election/fenced_write.cpp: ops committed in one multi behind a check of
    // this candidacy's node, waiting at most timeout_ms (> 0) for the
    // answer. Any thread but the loop (kEDeadlk). *failed: the index of the
    // user's op ZooKeeper refused (-1: none), *zk_rc its code (or the
    // check's, or the connection's), *why a message when not kOk.
    int fenced_commit(std::vector<ZkOp> ops, int timeout_ms, int *failed, int *zk_rc,
                      std::string *why);
    // fenced_commit() without the wait, for a caller that must not block
    // (the simulation's one thread): kOk once the batch is handed to the
    // loop, which calls done there with what fenced_commit would return
    // (code, failed, zk_rc, why); else the code at once (kENotLeader,
    // kEClosed, kEInval), done not called.
    using FencedDone = std::function<void(int code, int failed, int zk_rc, const std::string &why)>;
    int begin_fenced_commit(std::vector<ZkOp> ops, FencedDone done);

    ElectionShared &shared() { return *shared_; }
    EventDelivery &events() { return events_; }

private:
    // Reserves this candidacy's node bytes, or says why not (kELimit).
    int reserve(std::string *why);

    Client &client_;
    std::shared_ptr<ElectionShared> shared_;
    std::shared_ptr<Candidacy> candidacy_;  // lives on the loop; posted to only
    EventDelivery events_;                  // after shared_: uses its queue
};

}  // namespace zkelect
