#include "term.h"

#include "client.h"
#include "election_shared.h"
#include "neighbours.h"
#include "transfer.h"

namespace zkelect {

using State = CandidacyState;

int64_t Term::timeout_ns() const {
    return int64_t(host_.client().effective_timeout_ms()) * kNsPerMs;
}

void Term::claim() {
    Client &client = host_.client();
    int64_t until = client.lease().until();
#ifdef ZKELECT_MUTATION_HEIR_CLAIM_NO_LEASE
    // Mutation: claim on the listing alone, with a full lease from now.
    until = boottime_ns() + client.lease().full_ns();
#endif
    // Not before the connected server's tickTime is known, nor on a
    // connection whose server leaves no lease (SessionLease::may_claim):
    // the claim waits in kClaiming, and the lease tells again (on_lease)
    // when the tickTime is known.
    if (until > boottime_ns() && client.lease().may_claim()) {
        begin(until);
        return;
    }
    client.lease().renew_now();  // its acknowledgement comes to on_lease
}

void Term::on_lease(int64_t until) {
    ElectionShared &shared = host_.shared();
    switch (host_.state()) {
        case State::kLeading:
        case State::kTransferring:
            // Only extends a lease still held: resign may have fenced it
            // from the user's thread.
            shared.lease.extend(until, boottime_ns());
            schedule_lease_check(until);
            on_lease_renewed(shared.lease.value());
            break;
        case State::kClaiming:
            if (!host_.client().lease().may_claim()) break;  // see claim()
            if (until <= boottime_ns()) {
                // Acknowledged too late to lead on (we were paused, the reply
                // crawled, or no touch of the session is known to have
                // reached the quorum recently): try again once the write
                // just acknowledged counts as one (the report lag: T/4, or
                // tickTime/2 when the server said more).
                retry_claim_at(boottime_ns() + host_.client().lease().report_lag_ns());
                break;
            }
            begin(until);
            break;
        default: break;
    }
}

void Term::on_connected() {
    // The session's lease was lowered already if this reconnect negotiated
    // a shorter timeout (SessionLease::on_connected); a term's lease follows.
    ElectionShared &shared = host_.shared();
    int64_t cap = host_.client().lease().renegotiation_cap();
    if (leading_ && shared.lease.value() > cap) {
        shared.lease.cap(cap);
        schedule_lease_check(shared.lease.value());
        schedule_lease_warn(shared.lease.value());
    }
}

void Term::begin(int64_t until) {
    ElectionShared &shared = host_.shared();
    shared.token.store(czxid_);
    if (!shared.lease.publish(until)) {
        // The user resigned or closed after the claim was sent: that
        // command is on its way here and wins; no term begins.
        return;
    }
    host_.set_state(State::kLeading);
    leading_ = true;
    neighbours_.new_term();
    host_.client().bump(kTermsWon);
    {
        int64_t now = realtime_ns(), token = czxid_;
        int64_t failover_us = pred_gone_at_ ? (boottime_ns() - pred_gone_at_) / 1000 : -1;
        pred_gone_at_ = 0;
        shared.stats.update_with_failover(
            [now, token](ElectionCounts &st) {
                ++st.terms_won;
                st.queue_position = 0;  // the heir knows without a listing
                st.term_began_ns = now;
                st.term_ended_ns = 0;
                st.term_token = token;
            },
            failover_us);
    }
    host_.announce(EventType::kElected, Reason::kNone, "elected", host_.node(), shared.id, czxid_);
    shared.changed();
    schedule_lease_check(until);
    lease_warned_ = false;
    schedule_lease_warn(until);
    // A leader holds a data watch on P for transfers asked from outside
    // (one watch per leader per path; only a write of P's data wakes it).
    transfers_.watch_marker();
    // Counted in the client's book, and givable to a balanced group's
    // member; a give that outlives the candidacy says so rather than hang.
    host_.client().leaderships().began(
        host_.member_id(), [this, life = host_.life()](int64_t owner, int64_t deadline,
                                                       std::function<void(int)> done) {
            if (auto keep = life.lock()) transfers_.give(owner, deadline, std::move(done));
            else done(kENotLeader);
        });
}

void Term::end(Reason why) {
    if (!leading_) return;
    leading_ = false;
    host_.client().leaderships().ended(host_.member_id());
    ElectionShared &shared = host_.shared();
    int64_t until = shared.lease.revoke();
    // Leadership that already ran out ended with its lease, whatever news
    // (a deleted node, an expiry) arrives first after a pause.
    if (why != Reason::kResigned && why != Reason::kClosed && until != 0 && boottime_ns() >= until)
        why = Reason::kLeaseEnded;
    if (host_.state() == State::kLeading || host_.state() == State::kTransferring)
        host_.set_state(State::kClaiming);
    // A transfer not yet handed over cannot go on without the leadership.
    transfers_.on_deposed();
    static constexpr Counter kByReason[] = {kDeposedClosed,      kDeposedResigned,
                                            kDeposedSuspended,   kDeposedLeaseEnded,
                                            kDeposedExpired,     kDeposedNodeDeleted,
                                            kDeposedClosed};
    // A transfer has no client counter of its own (the losses say it).
    if (why != Reason::kNone && why != Reason::kTransferred)
        host_.client().bump(kByReason[static_cast<int>(why)]);
    {
        int64_t now = realtime_ns();
        int r = static_cast<int>(why);
        shared.stats.update([now, r](ElectionCounts &st) {
            st.term_ended_ns = now;
            ++st.losses[r];
        });
    }
    static constexpr const char *kText[] = {"deposed",       "resigned", "connection suspended",
                                            "lease ended",   "session expired",
                                            "node deleted",  "closed",
                                            "leadership transferred"};
    host_.announce(EventType::kDeposed, why, kText[static_cast<int>(why)], {}, {}, 0);
    shared.changed();
}

void Term::retry_claim_at(int64_t at) {
    // One retry pending at a time: every acknowledgement that comes too
    // late to lead on asks for one, and a join of E elections whose
    // acknowledgements crawled piled up E x E timers (issue 35).
    if (retry_at_ != 0 && retry_at_ <= at && retry_gen_ == host_.gen()) return;
    retry_at_ = at;
    retry_gen_ = host_.gen();
    uint64_t gen = host_.gen();
    host_.client().at(at, while_alive(host_.life(), [this, gen, at] {
        if (retry_at_ == at) retry_at_ = 0;
        if (gen == host_.gen() && host_.state() == State::kClaiming)
            host_.client().lease().renew_now();
    }));
}

void Term::schedule_lease_check(int64_t at) {
#ifdef ZKELECT_MUTATION_NO_LEASE_TIMER
    (void)at;
    return;
#endif
    // One check pending at a time, at the earliest deadline asked for: a
    // timer per renewal piled up as many timers as acknowledgements while
    // the lease ran (E x E of them on a join of E elections, issue 35). The
    // check that finds the lease renewed re-arms itself at the new deadline;
    // a lower deadline (a cap) arms an earlier one.
    if (lease_check_at_ != 0 && lease_check_at_ <= at) return;
    lease_check_at_ = at;
    host_.client().at(at, while_alive(host_.life(), [this, at] { on_lease_check(at); }));
}

void Term::on_lease_check(int64_t at) {
    if (lease_check_at_ != at) return;  // a later one superseded
    lease_check_at_ = 0;
    if (!leading_) return;
    int64_t until = host_.shared().lease.value();
    if (until > at || (until == at && boottime_ns() < until)) {
        schedule_lease_check(until);  // renewed since
        return;
    }
    if (until != at) return;  // fenced: the resign or close on its way ends the term
    host_.depose(Reason::kLeaseEnded);
    // Keep the node: a write acknowledged later proves we still hold the
    // first place, and we lead again.
    host_.client().lease().renew_now();
}

}  // namespace zkelect
