// Watches who leads an election without taking part (etcd's Observe). It
// watches the current leader's node only, or, while the election is empty,
// the path's children: never a watch per candidate.
#pragma once

#include <memory>
#include <string>

#include "client.h"
#include "client_shutdown.h"
#include "event_queue.h"

namespace zkelect {

struct ObserverShared {
    ObserverShared(std::string p, size_t queue_max) : path(std::move(p)), queue(queue_max) {}
    const std::string path;
    EventQueue queue;
};

class Observer : public Member, public std::enable_shared_from_this<Observer> {
public:
    // Any thread: makes an observer of path and starts it on the client's
    // loop. stop_and_wait() ends it (waits at most one session timeout).
    static std::shared_ptr<Observer> open(Client &client, std::shared_ptr<ObserverShared> shared);
    void stop_and_wait();
    // Its end in the client's shutdown (client_shutdown.h): stops on the
    // loop; an observer has no node, so it is gone at once.
    ClientShutdown::Step shutdown_step();

    Observer(Client &client, std::shared_ptr<ObserverShared> shared);
    void attach(uint64_t member_id) { member_id_ = member_id; }
    void start();
    void stop();

    void on_connected(bool new_session) override;
    void on_suspended() override;
    void on_expired() override;
    void on_auth_failed() override;
    void on_node_event(int type, const std::string &path) override;

private:
    using Handler = void (Observer::*)(uint64_t gen, Reply &&r);
    ReplyFn route(Handler h);
    // synced: a sync goes ahead of the listing (pipelined, one round trip
    // in all), so that its server has seen every write the quorum committed
    // before: the first LEADER_CHANGED names the leader as it is, not as a
    // server that lags behind the quorum saw it.
    void list(bool watch_children, bool synced = false);
    void on_children(uint64_t gen, Reply &&r);
    void on_watched_children(uint64_t gen, Reply &&r);
    void on_leader(uint64_t gen, Reply &&r);
    void on_path(uint64_t gen, Reply &&r);
    void refused(int rc, const std::string &what);
    void report(const std::string &node, const std::string &id, int64_t token);
    void emit(EventType t, std::string message, int error = 0, int zk_rc = 0);

    Client &client_;
    std::shared_ptr<ObserverShared> shared_;
    uint64_t member_id_ = 0;
    uint64_t gen_ = 0;
    bool stopped_ = false;
    bool reported_ = false;
    bool failed_ = false;  // an ERROR said we may not look: said once
    std::string leader_node_;  // "" while there is none
    std::string watched_;      // the node whose deletion we wait for
};

}  // namespace zkelect
