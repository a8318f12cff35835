#include "observer.h"

#include <chrono>
#include <future>

#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "names.h"

namespace zkelect {

std::shared_ptr<Observer> Observer::open(Client &client, std::shared_ptr<ObserverShared> shared) {
    auto obs = std::make_shared<Observer>(client, std::move(shared));
    Client *c = &client;
    client.post([c, obs] {
        obs->attach(c->add_member(obs));
        obs->start();
    });
    return obs;
}

void Observer::stop_and_wait() {
    if (client_.stopped()) return;  // a client shut down: stopped with it
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    auto self = shared_from_this();
    client_.post([self, done] {
        self->stop();
        done->set_value();
    });
    finished.wait_for(std::chrono::milliseconds(client_.effective_timeout_ms()));
}

ClientShutdown::Step Observer::shutdown_step() {
    auto self = shared_from_this();
    return [self](ClientShutdown::Gone gone) {
        self->stop();
        gone();
    };
}

Observer::Observer(Client &client, std::shared_ptr<ObserverShared> shared)
    : client_(client), shared_(std::move(shared)) {}

ReplyFn Observer::route(Handler h) {
    std::weak_ptr<Observer> weak = weak_from_this();
    uint64_t gen = gen_;
    return client_.on_loop([weak, gen, h](Reply &&r) {
        if (auto self = weak.lock()) ((*self).*h)(gen, std::move(r));
    });
}

void Observer::emit(EventType t, std::string message, int error, int zk_rc) {
    auto ev = std::make_unique<Event>();
    ev->type = t;
    ev->message = std::move(message);
    ev->error = error;
    ev->zk_rc = zk_rc;
    ev->time_ns = realtime_ns();
    shared_->queue.push(std::move(ev));
}

void Observer::report(const std::string &node, const std::string &id, int64_t token) {
    if (reported_ && node == leader_node_) return;
    reported_ = true;
    leader_node_ = node;
    auto ev = std::make_unique<Event>();
    ev->type = EventType::kLeaderChanged;
    ev->message = node.empty() ? "no leader" : "leader " + id;
    ev->node = node;
    ev->id = id;
    ev->token = token;
    ev->time_ns = realtime_ns();
    shared_->queue.push(std::move(ev));
}

void Observer::start() {
    if (client_.connected()) list(false, /*synced=*/true);
}

void Observer::stop() {
    stopped_ = true;
    ++gen_;
    client_.remove_member(member_id_);
}

void Observer::list(bool watch_children, bool synced) {
    ++gen_;
    if (synced) client_.session().sync(shared_->path, ReplyFn([](Reply &&) {}));
    client_.session().get_children(
        shared_->path, watch_children,
        route(watch_children ? &Observer::on_watched_children : &Observer::on_children));
    if (watch_children) client_.watch(shared_->path, member_id_);
}

void Observer::on_children(uint64_t gen, Reply &&r) {
    if (gen != gen_ || stopped_) return;
    if (r.rc == ZNONODE) {
        report("", "", 0);
        // Wait for the path to appear.
        client_.watch(shared_->path, member_id_);
        client_.session().exists(shared_->path, true, route(&Observer::on_path));
        return;
    }
    if (r.rc != ZOK) {
        refused(r.rc, "list the election path " + shared_->path);
        return;
    }
    auto order = order_candidates(r.children);
    if (order.empty()) {
        list(true);  // an empty election: the first create wakes us
        return;
    }
    watched_ = order.front().name;
    client_.watch(shared_->path + "/" + watched_, member_id_);
    client_.session().get(shared_->path + "/" + watched_, true, route(&Observer::on_leader));
}

void Observer::on_watched_children(uint64_t gen, Reply &&r) {
    if (gen != gen_ || stopped_) return;
    if (r.rc == ZOK && order_candidates(r.children).empty()) {
        report("", "", 0);
        return;  // the children watch is set
    }
    on_children(gen, std::move(r));
}

void Observer::on_leader(uint64_t gen, Reply &&r) {
    if (gen != gen_ || stopped_) return;
    if (r.rc == ZOK) {
        report(watched_, r.data, r.stat.czxid);
    } else if (r.rc == ZNONODE) {
        list(false);
    } else {
        refused(r.rc, "read the leader's node " + shared_->path + "/" + watched_);
    }
}

// An error on a live connection: no permission ends the observation with
// ERROR (nothing to retry); any other refusal is retried after a short
// pause; connection trouble waits for the reconnect, which lists again.
void Observer::refused(int rc, const std::string &what) {
    if (connection_trouble(rc)) return;
    if (rc == ZNOAUTH) {
        if (!failed_) emit(EventType::kError, "not allowed to " + what, kEAuth, rc);
        failed_ = true;
        return;
    }
    std::weak_ptr<Observer> weak = weak_from_this();
    uint64_t gen = gen_;
    client_.at(boottime_ns() + int64_t(client_.effective_timeout_ms()) * kNsPerMs / 24,
               [weak, gen] {
                   auto self = weak.lock();
                   if (self && gen == self->gen_ && !self->stopped_ && self->client_.connected())
                       self->list(false);
               });
}

void Observer::on_path(uint64_t gen, Reply &&r) {
    if (gen != gen_ || stopped_) return;
    if (r.rc == ZOK) list(false);
}

void Observer::on_node_event(int, const std::string &path) {
    if (stopped_) return;
    if (path == shared_->path || path == shared_->path + "/" + watched_) list(false);
}

void Observer::on_connected(bool new_session) {
    if (stopped_) return;
    if (!new_session || reported_) {
        if (!new_session) emit(EventType::kReconnected, "reconnected (same session)");
    }
    // A reconnect within the session never goes back in time (ZooKeeper
    // keeps the session's last seen zxid); a new session may land on a
    // server behind the quorum.
    list(false, /*synced=*/new_session);
}

void Observer::on_suspended() {
    if (!stopped_) emit(EventType::kSuspended, "connection to ZooKeeper lost");
}

void Observer::on_expired() {
    if (!stopped_) emit(EventType::kExpired, "ZooKeeper session expired");
    ++gen_;
}

void Observer::on_auth_failed() {
    if (!stopped_) emit(EventType::kError, client_.auth_failure(), kEAuth, ZAUTHFAILED);
}

}  // namespace zkelect
