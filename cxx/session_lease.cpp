#include "session_lease.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "client.h"
#include "clock.h"

namespace zkelect {

int64_t SessionLease::margin_ns() const {
    return lease::margin_ns(int64_t(client_.effective_timeout_ms()) * kNsPerMs,
                            client_.settings().lease_margin_ms);
}

int64_t SessionLease::full_ns() const {
    return lease::full_ns(int64_t(client_.effective_timeout_ms()) * kNsPerMs, margin_ns());
}

void SessionLease::hold(uint64_t member, const std::string &node_path) {
    holders_[member] = node_path;
    schedule();
}

void SessionLease::release(uint64_t member) { holders_.erase(member); }

int64_t SessionLease::earns(int64_t sent) {
    SessionFacts f = client_.session_facts();
    f.margin_ns = margin_ns();
    f.writes = &writes_;
    earned_under_ns_ = f.timeout_ns;
    return lease::until(f, sent);
}

void SessionLease::acknowledged(int64_t sent, int64_t earned, int64_t rtt_us) {
    writes_.push_back({sent, boottime_ns()});
    while (writes_.size() > 4) writes_.pop_front();
    // Only ever extended: an older write acknowledged late proves less.
    if (earned > until_) until_ = earned;
    client_.deliver_lease(until_, rtt_us);
}

void SessionLease::renew_now() {
    if (holders_.empty()) return;
    send(holders_.begin()->first, holders_.begin()->second);
}

void SessionLease::renew_for(uint64_t member, const std::string &node_path) {
    send(member, node_path);
}

void SessionLease::send(uint64_t member, const std::string &target) {
    if (!client_.connected()) return;
    int64_t sent = boottime_ns();
    // One keepalive at a time, unless the one in flight is overdue: a reply
    // that never comes on a live connection must not end leadership for good.
    if (inflight_ && sent - inflight_sent_ < full_ns() * 2 / 3) return;
    inflight_ = true;
    inflight_sent_ = sent;
    int64_t earned = earns(sent);
    uint64_t gen = gen_;
    auto on_reply = client_.on_loop([this, gen, sent, earned, member, target](Reply &&r) {
        if (gen != gen_) return;
        inflight_ = false;
        if (r.rc == ZOK) {
            client_.bump(kKeepalives);
            acknowledged(sent, earned, (boottime_ns() - sent) / 1000);
            return;
        }
        if (r.rc == ZNONODE) {
            // The node checked is gone (resigned, or deleted by hand): its
            // candidacy hears of it as of any deletion, and the others get
            // their keepalive from another node at once.
            auto it = holders_.find(member);
            if (it != holders_.end() && it->second == target) holders_.erase(it);
            client_.deliver_node_deleted(member, target);
            renew_now();
        }
    });
#ifdef ZKELECT_MUTATION_LEASE_BY_READS
    // Mutation: a read stands in for the write that earns the lease.
    client_.session().exists(target, false, std::move(on_reply));
#else
    client_.session().check(target, std::move(on_reply));
#endif
}

void SessionLease::schedule() {
    if (scheduled_) return;
    scheduled_ = true;
    client_.at(boottime_ns() + int64_t(client_.effective_timeout_ms()) * kNsPerMs / 6, [this] {
        scheduled_ = false;
        if (holders_.empty()) return;
        renew_now();
        schedule();
    });
}

void SessionLease::on_connected(bool new_session) {
    ++gen_;
    inflight_ = false;
    cap_ = INT64_MAX;
    const int64_t t = int64_t(client_.effective_timeout_ms()) * kNsPerMs;
#ifndef ZKELECT_MUTATION_NO_RENEGOTIATION_CAP
    if (!new_session && earned_under_ns_ > t) {
        // A shorter timeout was negotiated: the quorum's revalidation may
        // expire the session at (handshake + T'), before a lease earned
        // under the longer T ends.
        cap_ = lease::cap_after_renegotiation(INT64_MAX, client_.touch_floor(), t, margin_ns());
        if (until_ > cap_) until_ = cap_;
    }
#endif
    earned_under_ns_ = std::min(earned_under_ns_, t);
}

void SessionLease::on_expired() {
    // Touches of a dead session prove nothing now, and its nodes are gone.
    ++gen_;
    inflight_ = false;
    writes_.clear();
    holders_.clear();
    until_ = 0;
    earned_under_ns_ = 0;
    cap_ = INT64_MAX;
}

}  // namespace zkelect
