// Releasing a candidacy's nodes: the one way out of every state that holds
// a node, or may hold one whose name it never learnt (a create whose reply
// was lost), and the deletion of what was released.
//
// Every exit (resign, close, an error, a new enrollment, a session's end)
// goes through release_nodes(): the node it knows, or the create whose
// outcome is unknown (found later by the uuid its name carries), becomes
// an entry of garbage_, deleted by collect_garbage(). Nothing else clears
// node_ while the node may be there, so no state can forget one (issue 50:
// a destroy while waiting for a session, an ERROR while recovering, each
// left a live session's node first in line for good, and nobody led).
//
// RESIGNED (and a close's end) waits for garbage_ to empty; a closed
// handle's candidacy stays a member of its client until then, so the
// client keeps deleting in the background after destroy returned. Refusals
// do not end that: a missing permission is said once in an ERROR and tried
// again once a session timeout (an operator may fix the ACL); a throttled
// server is asked again after a pause that doubles up to T. The session's
// end removes whatever is left in any case.
#include "candidacy.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "names.h"

namespace zkelect {

void Candidacy::release_nodes() {
    if (!node_.empty()) {
        garbage_[uuid_] = node_;
    } else if (create_out_) {
        // The create may have landed: find it by its uuid and delete it.
        garbage_[uuid_] = "";
        unknown_since_[uuid_] = garbage_listings_;
        abandoned_.insert(uuid_);
    }
    node_.clear();
    create_out_ = false;
    account();
}

void Candidacy::collect_garbage() {
    account();
    if (garbage_.empty()) {
        if (state_ == State::kResigning) finish_resign();
        return;
    }
    if (!client_.connected()) return;  // on_connected calls again
    bool unknown = false;
    for (auto &[uuid, name] : garbage_) {
        if (name.empty()) {
            unknown = true;
            continue;
        }
        // resign() then close() both come here: one delete on the wire.
        if (!deleting_.insert(name).second) continue;
        std::weak_ptr<Candidacy> weak = weak_from_this();
        std::string key = uuid;
        zk().remove(node_path(name), client_.on_loop([weak, key, name](Reply &&r) {
            auto self = weak.lock();
            if (!self) return;
            self->deleting_.erase(name);
            auto it = self->garbage_.find(key);
            if (it == self->garbage_.end() || it->second != name) return;
            if (r.rc == ZOK || r.rc == ZNONODE) {
                self->garbage_throttled_ = 0;
                self->forget(name);
            } else if (r.rc == ZNOAUTH && self->closing_) {
                // A closed handle waits for no one; its client keeps at it.
                self->garbage_refused(r.rc, name);
                self->client_.keep_removing(self->node_path(name));
                self->forget(name);
            } else {
                // Deleting a child needs DELETE on the election path.
                self->garbage_refused(r.rc, name);
                return;
            }
            if (self->garbage_.empty() && self->state_ == State::kResigning) self->finish_resign();
        }));
    }
    if (unknown) {
        shared_->stats.update([](ElectionCounts &st) { st.requests += 2; });
        std::weak_ptr<Candidacy> weak = weak_from_this();
        uint64_t asked = ++garbage_listings_;
        client_.list(shared_->path, ListingFn([weak, asked](const Listing &l) {
                         if (auto self = weak.lock()) self->on_garbage_children(asked, l);
                     }), true);
    }
    if (garbage_.empty() && state_ == State::kResigning) finish_resign();
}

void Candidacy::say_garbage_refused(int rc, const std::string &name) {
    std::string what =
        name.empty() ? "list " + shared_->path +
                           " to find our node whose create's reply was lost (no READ "
                           "permission on it)"
                     : "delete our node " + node_path(name) + " (no DELETE permission on " +
                           shared_->path + ")";
    emit(EventType::kError, Reason::kNone,
         "not allowed to " + what +
             ": trying again every session timeout until it is gone or this client's "
             "session ends",
         {}, {}, 0, kEAuth, rc);
}

// The listing that looks for a lost create may not read the path. A lost
// create of a session that ended goes with that session's close: no
// listing needs to find it, and a closed handle must not wait for one that
// may never be allowed. But a session the client gave up (no server took
// it for T) may still be open on the servers: they expire it at most T +
// tickTime (tickTime <= T/2) after they last heard of it or their leader
// took office, both before this session began. Until then the node may be
// there, and RESIGNED would say it is gone (sim seed 581989636). False when
// no create of unknown outcome is left to look for; else *pause is at most
// the time until that session is surely gone.
bool Candidacy::lost_creates_left(int64_t t, int64_t *pause) {
    const int64_t now = boottime_ns();
    const int64_t ended_t = std::max(t, ended_timeout_);
    if (ended_gone_at_ == 0) ended_gone_at_ = now + ended_t + ended_t / 2;
    if (now >= ended_gone_at_) {
        for (auto it = garbage_.begin(); it != garbage_.end();)
            it = it->second.empty() && ended_session_.count(it->first) ? garbage_.erase(it)
                                                                        : std::next(it);
    } else {
        *pause = std::min(*pause, ended_gone_at_ - now);
    }
    account();
    bool unknown = false;
    for (const auto &g : garbage_) unknown = unknown || g.second.empty();
    if (!unknown && garbage_.empty() && state_ == State::kResigning) finish_resign();
    return unknown;
}

// A delete of garbage (name) or the listing that looks for an unknown
// create (name empty) was answered with an error. The node stays ours to
// delete: connection trouble waits for the reconnect (on_connected collects
// again); anything else is tried again after a pause.
void Candidacy::garbage_refused(int rc, const std::string &name) {
    if (connection_trouble(rc)) return;
    int64_t t = timeout_ns();
    int64_t pause = t;
    if (rc == ZNOAUTH) {
        // Said once per node (per lost create): the node stays, so no
        // RESIGNED yet; the session's end removes it in any case.
        if (refused_.insert(name).second) say_garbage_refused(rc, name);
        if (closing_ && !name.empty()) return;  // handed to the client (keep_removing)
        if (name.empty() && !lost_creates_left(t, &pause)) return;
    } else {
        // ZTHROTTLEDOP (the server's throttledOpWaitTime) and the like:
        // refused unexecuted. T/24, doubling, then once a session timeout.
        int n = std::min(garbage_throttled_++, 5);
        pause = std::min(t, (t / 24) << n);
    }
    int64_t at = boottime_ns() + pause;
    // One retry pending: every refused reply of a pass would arm its own.
    if (garbage_retry_at_ != 0 && garbage_retry_at_ <= at) return;
    garbage_retry_at_ = at;
    std::weak_ptr<Candidacy> weak = weak_from_this();
    client_.at(at, [weak, at] {
        auto self = weak.lock();
        if (!self || self->garbage_retry_at_ != at) return;
        self->garbage_retry_at_ = 0;
        self->collect_garbage();
    });
}

void Candidacy::forget(const std::string &name) {
    refused_.erase(name);
    for (auto it = garbage_.begin(); it != garbage_.end();)
        it = it->second == name ? garbage_.erase(it) : std::next(it);
    account();
}

void Candidacy::on_garbage_children(uint64_t asked, const Listing &r) {
    if (r.rc != ZOK && r.rc != ZNONODE) {
        // Without READ on the path the unknown create cannot be found: the
        // node would stay first in line for the session's life.
        garbage_refused(r.rc, {});
        return;
    }
    garbage_throttled_ = 0;
    refused_.erase(std::string());
    bool found = false, unjudged = false;
    for (auto it = garbage_.begin(); it != garbage_.end();) {
        if (!it->second.empty()) {
            ++it;
            continue;
        }
        if (auto s = unknown_since_.find(it->first); s != unknown_since_.end() && s->second >= asked) {
            unjudged = true;  // this listing was asked for before its create was sent
            ++it;
            continue;
        }
        std::string name;
        // Never our live node, whatever a uuid says: deleting it would
        // depose us for nothing.
        for (const auto &child : r.children)
            if (has_uuid(child, it->first) && child != node_) name = child;
        unknown_since_.erase(it->first);
        if (name.empty()) {
            it = garbage_.erase(it);  // abandoned_ still catches a late one
        } else {
            it->second = name;
            found = true;
            ++it;
        }
    }
    account();
    if (found || unjudged || (garbage_.empty() && state_ == State::kResigning)) collect_garbage();
}

void Candidacy::close_as_resign(uint64_t command, std::function<void()> done) {
    // Taking part: a candidate, a resign still deleting, a node being
    // made. An idle candidacy (or one an ERROR stopped) says nothing, as
    // its resign would not.
    resigned_on_close_ = want_ || state_ != State::kIdle;
    if (term_.leading()) {
        want_ = false;
        depose(Reason::kResigned);
    }
    close(command, std::move(done));
}

void Candidacy::finish_resign() {
    if (state_ != State::kResigning) return;
    if (closing_) {
        set_state(State::kClosed);
        if (resigned_on_close_) emit(EventType::kResigned, Reason::kNone, "resigned: node removed");
        shared_->changed();
        auto done = std::move(close_done_);
        client_.remove_member(member_id_);
        if (done) done();
        return;
    }
    set_state(State::kIdle);
    if (want_) {
        // volunteer() came while the old node was going: the resign is
        // done all the same, and its RESIGNED comes before the new node's
        // events. The phase stays the volunteer's (candidate).
        emit(EventType::kResigned, Reason::kNone, "resigned: node removed");
        begin_enrollment();
        return;
    }
    // Idle before RESIGNED is seen: a volunteer made on that event succeeds.
    shared_->settle(applied_);
    emit(EventType::kResigned, Reason::kNone, "resigned: node removed");
}

}  // namespace zkelect
