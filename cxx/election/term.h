// A candidacy's term of leadership (docs/design.md, "Leading"): the claim
// of the first place in line once the session's lease allows it, the term
// that begins with ELECTED and ends with DEPOSED, and what runs while it
// lasts: the check at the lease's deadline, the retry of a claim
// acknowledged too late to lead on, LEASE_LOW (lease.warn.percent), the
// bound a reconnect's shorter timeout puts on the term's lease, and the
// node's token and version a fenced write checks.
//
// It owns whether a term runs, its timers and the facts of our node a term
// needs (its czxid, the fencing token, and the data version the latest
// own-node read found); the state, the node's name and the line stay the
// candidacy's, read and changed through its CandidacyHost. A term begun
// or ended tells the candidacy's Neighbours and Transfers. Runs on the
// client's loop thread.
#pragma once

#include <cstdint>

#include "candidacy_host.h"

namespace zkelect {

class Neighbours;
class Transfers;

class Term {
public:
    Term(CandidacyHost &host, Neighbours &neighbours, Transfers &transfers)
        : host_(host), neighbours_(neighbours), transfers_(transfers) {}
    Term(const Term &) = delete;
    Term &operator=(const Term &) = delete;

    // A term began (ELECTED) and has not ended (DEPOSED).
    bool leading() const { return leading_; }

    // Our node is made (or adopted after a lost reply): its czxid is the
    // token of any term it leads.
    void node_made(int64_t czxid) { czxid_ = czxid; }
    // An own-node read found our node (czxid) at data version `version`.
    void saw_own(int64_t czxid, int32_t version) {
        own_version_czxid_ = czxid;
        own_version_ = version;
    }
    // The version a fenced write checks our node at: the latest read's when
    // it was of this node, else 0 (a new node's).
    int32_t fence_version() const { return own_version_czxid_ == czxid_ ? own_version_ : 0; }
    // When the failover a term may follow began (CLOCK_BOOTTIME; 0: none):
    // ELECTED's failover time counts from it.
    void failover_from(int64_t at) { pred_gone_at_ = at; }

    // First in line (the candidacy is kClaiming): lead at once if the
    // session's lease allows, else ask for the renewal that tells (on_lease).
    void claim();
    // A keepalive's acknowledgement: the lease runs until `until`. Extends a
    // term's, or lets a claim lead; nothing in any other state.
    void on_lease(int64_t until);
    // A reconnect: a shorter timeout it negotiated lowers the term's lease.
    void on_connected();
    // The term ends (no-op without one): DEPOSED with why (kLeaseEnded when
    // the lease ran out first, whatever the news), the lease revoked, a
    // transfer not handed over ended.
    void end(Reason why);

private:
    void begin(int64_t until);
    void retry_claim_at(int64_t at);
    void schedule_lease_check(int64_t at);
    void on_lease_check(int64_t at);
    // LEASE_LOW (lease.warn.percent; lease_warn.cpp): armed for the term's
    // deadline `until`, and told of every renewal.
    void schedule_lease_warn(int64_t until);
    void on_lease_warn(int64_t at, int percent);
    void on_lease_renewed(int64_t until);
    int64_t timeout_ns() const;

    CandidacyHost &host_;
    Neighbours &neighbours_;
    Transfers &transfers_;

    bool leading_ = false;
    int64_t czxid_ = 0;
    // Our node's data version as the latest own-node read found it, and
    // that node's czxid (which node it was: czxid_ tells ours).
    int32_t own_version_ = 0;
    int64_t own_version_czxid_ = 0;
    int64_t lease_check_at_ = 0;  // the pending lease check's time; 0: none
    int64_t lease_warn_at_ = 0;   // the pending LEASE_LOW check's time; 0: none
    bool lease_warned_ = false;   // LEASE_LOW said; a renewal above the mark clears it
    int64_t retry_at_ = 0;        // the pending claim retry's time; 0: none
    uint64_t retry_gen_ = 0;      // and the candidacy's gen it was armed in
    // CLOCK_BOOTTIME when the predecessor's deletion was notified while we
    // followed, 0 otherwise: the start of a failover as this candidate sees it.
    int64_t pred_gone_at_ = 0;
};

}  // namespace zkelect
