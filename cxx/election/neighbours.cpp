#include "neighbours.h"

#include <zookeeper/zookeeper.h>

#include "client.h"
#include "election_shared.h"

namespace zkelect {

using State = CandidacyState;

std::string Neighbours::path_of(const std::string &name) const {
    return host_.shared().path + "/" + name;
}

bool Neighbours::following() const {
    return host_.state() == State::kFollowing || host_.state() == State::kHeir;
}

bool Neighbours::place(const std::vector<Candidate> &order, size_t me) {
    heir_ = me == 1;
    gpred_first_ = me == 2;
    // The nodes before the one before our predecessor, nearest first, a
    // few of them: where we move up to when our neighbours go.
    ahead_.clear();
    gpred_index_ = me >= 2 ? me - 2 : 0;
    walk_ = order.size() >= kWalkFrom;
    if (walk_) ahead_.assign(order, gpred_index_, kAhead);
    return heir_;
}

void Neighbours::watch(const std::vector<Candidate> &order, size_t me) {
    watch_queue(order[me - 1].name, me >= 2 ? order[me - 2].name : std::string(),
                /*gpred_after_pred=*/true);
    keep_rechecking();
}

// Reads (and so watches) the predecessor and the one before it, unless the
// watch a read of this session armed on that node has not fired yet.
//
// gpred_after_pred: the read of the node before the predecessor waits for
// the predecessor's reply. After a listing, the predecessor's read is what
// a joining candidacy waits for to follow; sent together, every session of
// a burst of joins put a second read in the servers' queues ahead of later
// sessions' predecessor reads (3N-1 reads where 2N+1 are on anyone's way;
// issue 31, bench/results/ANALYSIS.md). The node before the predecessor
// only tells a follower early that it moved up: a deletion before its read
// is still heard, from that read's NONODE.
void Neighbours::watch_queue(const std::string &pred, const std::string &gpred,
                             bool gpred_after_pred) {
    if (pred != pred_) pred_armed_ = pred_announced_ = false;
    if (gpred != gpred_) gpred_armed_ = false;
    pred_ = pred;
    gpred_ = gpred;
    gpred_waits_ = false;
    if (!pred_armed_) {
        read_watched(&Neighbours::pred_, &Neighbours::pred_armed_, &Neighbours::on_pred);
        gpred_waits_ = gpred_after_pred && !gpred_.empty() && !gpred_armed_;
    }
    if (!gpred_.empty() && !gpred_armed_ && !gpred_waits_)
        read_watched(&Neighbours::gpred_, &Neighbours::gpred_armed_, &Neighbours::on_gpred);
}

// A getData with a watch on the neighbour *name. Its reply counts only while
// that is still the neighbour: then it marks the watch armed and goes to h.
void Neighbours::read_watched(std::string Neighbours::*name, bool Neighbours::*armed, Handler h) {
    std::string node = this->*name;
    host_.client().watch(path_of(node), host_.member_id());
    uint64_t gen = host_.gen();
    auto got = [this, gen, node, name, armed, h](Reply &&r) {
        if (gen != host_.gen() || node != this->*name) return;
        on_neighbour(name, armed, h, std::move(r));
    };
    host_.zk().get(path_of(node), true, host_.client().on_loop(while_alive(host_.life(), std::move(got))));
}

void Neighbours::on_neighbour(std::string Neighbours::*name, bool Neighbours::*armed, Handler h,
                              Reply &&r) {
    if (r.rc == ZOK || r.rc == ZNONODE) {
        if (r.rc == ZOK) this->*armed = true;
        // No watch was set; a watch an earlier read set on it has fired
        // (the deletion's notification comes before this reply), and the
        // name never comes back (sequence numbers only grow).
        else host_.client().unwatch(path_of(this->*name), host_.member_id());
        (this->*h)(host_.gen(), std::move(r));
        return;
    }
    // ZNOAUTH: another identity's node under election.acl=creator. ZooKeeper
    // sends no notification about a node the session may not read, not even
    // to an exists watch, so there is no way to follow it: ERROR.
    host_.refused(r.rc,
                  "read the node " + path_of(this->*name) +
                      " to watch it (election.acl=creator needs every participant to use "
                      "the same identity)",
                  [this, name, armed, h] {
                      if (!(this->*name).empty() && !(this->*armed)) read_watched(name, armed, h);
                  });
}

void Neighbours::forget() {
    heir_ = false;
    gpred_first_ = false;
    ahead_.clear();  // its memory too: a leader keeps none
    walk_ = false;
    gpred_index_ = 0;
    pred_.clear();
    gpred_.clear();
    pred_announced_ = false;
    // Watches armed before may be gone (a new session) or stale: read again.
    pred_armed_ = false;
    gpred_armed_ = false;
    gpred_waits_ = false;
}

bool Neighbours::on_node_event(int type, const std::string &path) {
    if (!gpred_.empty() && path == path_of(gpred_)) {
        if (type == ZOO_DELETED_EVENT) {
            gpred_deleted();
            return true;
        }
        gpred_armed_ = false;
        if (host_.state() == State::kFollowing) watch_queue(pred_, gpred_);  // re-arms the one-shot watch
        return true;
    }
    if (pred_.empty() || path != path_of(pred_)) return false;
    pred_armed_ = false;
    if (!following()) return true;
    if (type == ZOO_DELETED_EVENT) pred_deleted();
    else watch_queue(pred_, gpred_);  // re-arms the one-shot watch
    return true;
}

void Neighbours::on_pred(uint64_t gen, Reply &&r) {
    if (gen != host_.gen() || !following()) return;
    if (r.rc == ZOK && gpred_waits_) {
        gpred_waits_ = false;
        if (host_.state() == State::kFollowing && !gpred_.empty() && !gpred_armed_)
            read_watched(&Neighbours::gpred_, &Neighbours::gpred_armed_, &Neighbours::on_gpred);
    }
    if (r.rc == ZOK) {
        if (!pred_announced_) {
            pred_announced_ = true;
            host_.announce(EventType::kFollowing, Reason::kNone, "following " + pred_, pred_, r.data, 0);
            host_.shared().changed();
        }
    } else if (r.rc == ZNONODE) {
        // Gone before our watch was set: decide again, at once.
        host_.claim_or_list();
    }
}

void Neighbours::on_gpred(uint64_t gen, Reply &&r) {
    if (gen != host_.gen() || host_.state() != State::kFollowing) return;
    if (r.rc == ZNONODE) gpred_gone();
}

// The node before our predecessor is gone. If it was the lowest in our last
// listing, our predecessor is the lowest now (nothing created since can sort
// before it), so we are heir: keepalives start now, and the claim at the
// next failover needs no round trip. Otherwise one listing, now rather than
// at our predecessor's deletion, tells us where we stand.
void Neighbours::gpred_gone() {
    gpred_armed_ = false;
    gpred_.clear();
#ifdef ZKELECT_MUTATION_HEIR_FROM_ANY_GPRED
    // Mutation: any deletion ahead of the predecessor makes us heir.
    gpred_first_ = true;
#endif
    if (gpred_first_) {
        gpred_first_ = false;
        make_heir();
        return;
    }
    if (!ahead_.empty()) {
        // The node before it in our last listing is the one before our
        // predecessor now (move_up says why); read it, and so watch it.
        next_ahead();
        read_watched(&Neighbours::gpred_, &Neighbours::gpred_armed_, &Neighbours::on_gpred);
        return;
    }
    host_.list_again();
}

void Neighbours::make_heir() {
    heir_ = true;
    ahead_.clear();
    host_.become_heir();
}

// gpred_ = the nearest node left in ahead_ (the caller knows gpred_ gone or
// moved to pred_).
void Neighbours::next_ahead() {
    // One node ahead of ours is gone: our place is the last listing's, less
    // the deletions seen since.
    host_.shared().stats.update([](ElectionCounts &st) {
        if (st.queue_position > 1) --st.queue_position;
    });
    gpred_ = ahead_.pop_front();
    --gpred_index_;
    gpred_first_ = gpred_index_ == 0;
}

bool Neighbours::move_up_if_known() {
    if (!walk_ || heir_ || gpred_.empty() || (!gpred_first_ && ahead_.empty())) return false;
    move_up();
    return true;
}

// Our predecessor is gone and we follow: the node before it in our last
// listing (gpred_) is our predecessor now, without listing the path again
// (docs/semantics.md, "Moving up without a listing"). That listing shows
// our node, so it showed every node that sorts before ours; sequence
// numbers only grow, so no node made since sorts before ours, and the
// nodes between gpred_ and us in it are gone. Should gpred_
// be gone too, its read says so and we move up again, at most kAhead times
// before a listing. When gpred_ was the first of the listing, it is the
// lowest node left: we are heir, and claim only once it is gone as well.
void Neighbours::move_up() {
    host_.failover_from(0);  // a deletion that did not make us first is no failover of ours
    std::string pred = gpred_;
#ifdef ZKELECT_MUTATION_HEIR_FROM_ANY_GPRED
    // Mutation: moving up to any node makes us heir.
    gpred_first_ = true;
#endif
    if (gpred_first_) {
        gpred_first_ = false;
        make_heir();
        watch_queue(pred, std::string());
        return;
    }
    next_ahead();          // gpred_: the node before our new predecessor
    gpred_armed_ = false;  // that flag was of the node that is now pred
    watch_queue(pred, std::string(gpred_));
}

// The node before our predecessor was deleted: its watch fired, or a
// re-check found it gone. It matters only while we follow.
void Neighbours::gpred_deleted() {
    gpred_armed_ = false;
    if (host_.state() != State::kFollowing) return;
    gpred_gone();
}

// Our predecessor was deleted: its watch fired, or a re-check found it gone.
void Neighbours::pred_deleted() {
    pred_armed_ = false;
    if (!following()) return;
    host_.failover_from(boottime_ns());
    // The heir's predecessor was the lowest node left (our last listing,
    // less the deletions we saw since) and no later node can sort before
    // ours: we lead, and a lease already earned lets us say so without
    // another round trip.
    host_.claim_or_list();
}

// --- re-checking the neighbours ---------------------------------------------
//
// ZooKeeper notifies a watch only to a session that may read the node: once
// an operator takes READ on our predecessor (or the node before it) away
// from our identity, its deletion is never notified to us, and we would wait
// in line while nobody leads (explorer seeds 903, 616487803). So while we
// follow, the session checks once a session timeout, for all its waiting
// candidacies in one request, whether the nodes they watch are still there
// (cxx/session/neighbour_check.h: no watcher is added to any node, the herd rule
// holds); a node found gone counts as its deletion heard. A reply on our
// connection comes after every notification ZooKeeper sent before it, so a
// deletion our armed watch does hear is handled first, and the check's
// answer then finds the neighbour changed or our state moved on.
void Neighbours::keep_rechecking() {
    if (rechecking_) return;
    rechecking_ = true;
    host_.client().neighbour_check().enlist(
        host_.member_id(), [life = host_.life(), this](std::vector<NeighbourCheck::Target> &out) {
            auto keep = life.lock();
            return keep && recheck_targets(out);
        });
}

bool Neighbours::recheck_targets(std::vector<NeighbourCheck::Target> &out) {
    if (!following()) {
        // The chain ends; the listing that makes us follow again starts one.
        rechecking_ = false;
        return false;
    }
    // The answer counts only while that node is still the neighbour and
    // nothing made in-flight replies stale (the candidacy's gen).
    auto target = [this, &out](std::string Neighbours::*name, void (Neighbours::*gone)()) {
        std::string node = this->*name;
        uint64_t gen = host_.gen();
        out.push_back({path_of(node), while_alive(host_.life(), [this, gen, node, name, gone] {
                           if (gen == host_.gen() && node == this->*name) (this->*gone)();
                       })});
    };
    size_t before = out.size();
    if (!pred_.empty()) target(&Neighbours::pred_, &Neighbours::pred_deleted);
    if (host_.state() == State::kFollowing && !gpred_.empty())
        target(&Neighbours::gpred_, &Neighbours::gpred_deleted);
    // The election's requests count the session's check once: it asks for
    // this election's nodes too.
    if (out.size() > before) host_.shared().stats.update([](ElectionCounts &st) { ++st.requests; });
    return true;
}

}  // namespace zkelect
