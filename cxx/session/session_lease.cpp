#include "session_lease.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "clock.h"

namespace zkelect {

int64_t SessionLease::margin_ns() const {
    return lease::margin_ns(int64_t(client_.effective_timeout_ms()) * kNsPerMs,
                            client_.configured_margin_ms());
}

int64_t SessionLease::full_ns() const {
    return lease::full_ns(int64_t(client_.effective_timeout_ms()) * kNsPerMs, margin_ns());
}

int64_t SessionLease::report_lag_ns() const {
    return lease::report_lag(int64_t(client_.effective_timeout_ms()) * kNsPerMs, tick_ns_);
}

bool SessionLease::usable() const {
    return lease::lease_usable(int64_t(client_.effective_timeout_ms()) * kNsPerMs, report_lag_ns(),
                               margin_ns());
}

int64_t SessionLease::period_ns() const {
    int64_t p = lease::keepalive_period(int64_t(client_.effective_timeout_ms()) * kNsPerMs,
                                        report_lag_ns(), margin_ns());
    // A shut connection sends none; the timer still ticks, slowly.
    return p > 0 ? p : int64_t(client_.effective_timeout_ms()) * kNsPerMs / 6;
}

void SessionLease::asking() { asking_ = true; }

void SessionLease::tick_known(int64_t tick_ns) {
    bool was_asking = asking_;
    asking_ = false;
    tick_ns_ = tick_ns;
    if (!was_asking || !may_claim()) return;
    // Claims held back while the tickTime was read go on: with the lease
    // earned meanwhile (from the handshake), or with a keepalive now.
    if (until_ > boottime_ns()) tell_claimers();
    else renew_now();
}

void SessionLease::hold(uint64_t member, const std::string &node_path, bool claiming) {
    holders_[member] = node_path;
    if (claiming) claimers_.insert(member);
    else claimers_.erase(member);
    schedule();
}

void SessionLease::release(uint64_t member) {
    holders_.erase(member);
    claimers_.erase(member);
}

void SessionLease::tell_claimers() {
    if (claimers_.empty()) return;
    if (until_ <= boottime_ns()) {
        // Too late to lead on: each claimer would only ask for a keepalive
        // once the write just acknowledged counts (Candidacy::on_lease).
        // One such keepalive for all of them, not a timer each per write;
        // none while claims are held back (tick_known tells them again).
        if (claim_retry_ || !may_claim()) return;
        claim_retry_ = true;
        client_.at(boottime_ns() + report_lag_ns(), [this] {
            claim_retry_ = false;
            if (!claimers_.empty()) renew_now();
        });
        return;
    }
    // A claimer that begins its term leaves the set while it is told.
    std::vector<uint64_t> told(claimers_.begin(), claimers_.end());
    for (uint64_t m : told) client_.deliver_lease_to(m, until_);
}

int64_t SessionLease::earns(int64_t sent) {
    // A connection whose server reports touches too late for any lease.
    if (!asking_ && !usable()) return 0;
    SessionFacts f = client_.session_facts();
    f.margin_ns = margin_ns();
    f.writes = &writes_;
#ifndef ZKELECT_MUTATION_IGNORE_TICK_TIME
    f.report_lag_ns = asking_ ? lease::kLagAsking : report_lag_ns();
#endif
    earned_under_ns_ = f.timeout_ns;
    return lease::until(f, sent);
}

void SessionLease::acknowledged(int64_t sent, int64_t earned, int64_t rtt_us) {
    lease::record(writes_, {sent, boottime_ns()},
                  int64_t(client_.effective_timeout_ms()) * kNsPerMs / 24);
    // Only ever extended: an older write acknowledged late proves less.
    if (earned > until_) until_ = earned;
    if (rtt_us >= 0) {
        told_all_at_ = boottime_ns();
        client_.deliver_lease(until_, rtt_us);
        return;
    }
    tell_claimers();
    // Every member hears of the other writes too, at most once per T/24:
    // a burst of E creates told to E leaders one by one cost E x E, and
    // while such a burst is answered a keepalive waits behind it, so the
    // creates are what keeps the leaders' leases growing meanwhile.
    if (tell_all_pending_) return;
    tell_all_pending_ = true;
    int64_t at = std::max(boottime_ns(), told_all_at_ + int64_t(client_.effective_timeout_ms()) *
                                                          kNsPerMs / 24);
    client_.at(at, [this] {
        tell_all_pending_ = false;
        told_all_at_ = boottime_ns();
        if (until_ > 0) client_.deliver_lease(until_, -1);
    });
}

void SessionLease::renew_now() {
    if (holders_.empty()) return;
    send({});
}

void SessionLease::renew_for(uint64_t member, const std::string &node_path) {
    send({member, node_path});
}

// The nodes one keepalive checks: every holder's (up to kMaxChecks, taken
// in turn from where the last keepalive stopped), and `extra`'s.
std::vector<std::pair<uint64_t, std::string>> SessionLease::targets(
    const std::pair<uint64_t, std::string> &extra) {
    std::vector<std::pair<uint64_t, std::string>> out;
    if (!extra.second.empty()) out.push_back(extra);
#ifdef ZKELECT_MUTATION_LOST_OWN_WATCH
    // Mutation: one node per session is checked, whatever the holders.
    if (out.empty() && !holders_.empty()) out.push_back(*holders_.begin());
    return out;
#endif
    auto it = holders_.lower_bound(next_checked_);
    for (size_t n = 0; n < holders_.size() && out.size() < kMaxChecks; ++n) {
        if (it == holders_.end()) it = holders_.begin();
        if (it->first != extra.first || extra.second.empty()) out.push_back(*it);
        ++it;
    }
    next_checked_ = it == holders_.end() ? 0 : it->first;
    return out;
}

void SessionLease::send(const std::pair<uint64_t, std::string> &extra) {
    if (!client_.connected()) return;
    if (!asking_ && !usable()) return;  // it would earn nothing
    int64_t sent = boottime_ns();
    // One keepalive at a time, unless the one in flight is overdue: a reply
    // that never comes on a live connection must not end leadership for good.
    if (inflight_ && sent - inflight_sent_ < full_ns() * 2 / 3) return;
    auto checked = targets(extra);
    if (checked.empty()) return;
    inflight_ = true;
    inflight_sent_ = sent;
    uint64_t seq = ++sent_seq_;
    int64_t earned = earns(sent);
    uint64_t gen = gen_;
    std::vector<std::string> paths;
    paths.reserve(checked.size());
    for (const auto &c : checked) paths.push_back(c.second);
    auto on_reply = client_.on_loop([this, gen, seq, sent, earned, checked](Reply &&r) {
        if (gen != gen_) return;
        // A late reply to an overdue keepalive says nothing of the one sent
        // after it, which may still be on its way.
        if (seq == sent_seq_) inflight_ = false;
        if (r.rc == ZOK) {
            client_.bump(kKeepalives);
            acknowledged(sent, earned, (boottime_ns() - sent) / 1000);
            return;
        }
        if ((r.rc != ZNONODE && r.rc != ZNOAUTH) || r.results.size() != checked.size()) return;
        // The multi says whose node failed it: gone (resigned, or deleted by
        // hand), or no longer ours to read (its ACL changed: its candidacy
        // cannot prove its place and ends). That candidacy hears of it as of
        // any deletion, and the others get their keepalive at once, without it.
        for (size_t i = 0; i < checked.size(); ++i) {
            if (r.results[i] != ZNONODE && r.results[i] != ZNOAUTH) continue;
            const auto &[member, target] = checked[i];
            auto it = holders_.find(member);
            if (it != holders_.end() && it->second == target) {
                holders_.erase(it);
                claimers_.erase(member);
            }
            client_.deliver_node_failed(member, target, r.results[i] == ZNONODE);
        }
        renew_now();
    });
#ifdef ZKELECT_MUTATION_LEASE_BY_READS
    // Mutation: a read stands in for the write that earns the lease.
    client_.session().exists(paths.front(), false, std::move(on_reply));
#else
    client_.session().check(paths, std::move(on_reply));
#endif
}

void SessionLease::schedule() {
    if (scheduled_) return;
    scheduled_ = true;
    client_.at(boottime_ns() + period_ns(), [this] {
        scheduled_ = false;
        if (holders_.empty()) return;
        renew_now();
        schedule();
    });
}

void SessionLease::on_connected(bool new_session) {
    ++gen_;
    inflight_ = false;
    asking_ = false;  // the client says at once what holds for this connection
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
    claimers_.clear();
    until_ = 0;
    earned_under_ns_ = 0;
    cap_ = INT64_MAX;
}

}  // namespace zkelect
