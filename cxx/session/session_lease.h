// The session's lease: one stream of keepalive writes per ZooKeeper session,
// however many candidacies lead or wait as heirs on it.
//
// What a keepalive proves is about the session, not about a node
// (docs/semantics.md, "One lease per session"): an acknowledged write sent at
// s shows that the session's server was in the quorum after s, so the
// session cannot expire before lease::until(facts, s). Every candidacy of the
// session reads the same deadline. A candidacy adds only what is its own:
// that its node is first (its listing, its predecessor's deletion) and still
// exists (its own-node watch; its node dies only with the session, unless
// someone deletes it by hand).
//
// Loop thread only, like everything the Client drives.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "lease.h"
#include "zk_port.h"

namespace zkelect {

// Everything a SessionLease uses of the client whose session it leases;
// Client implements it. Written down so that the lease's dependency on the
// loop is explicit and cannot grow unnoticed.
class LeaseHost {
public:
    // The session timeout in force, and the configured margin (-1: derived
    // from the timeout): the inputs of margin_ns() and full_ns().
    virtual int effective_timeout_ms() const = 0;
    virtual int configured_margin_ms() const = 0;
    // The session's touches as the lease rules need them, and the earliest
    // the current connection's handshake can have been.
    virtual SessionFacts session_facts() = 0;
    virtual int64_t touch_floor() const = 0;
    virtual bool connected() const = 0;
    // The current session (swapped on expiry): keepalives go there.
    virtual ZkPort &session() = 0;
    virtual ReplyFn on_loop(std::function<void(Reply &&)> fn) = 0;
    virtual void at(int64_t at_ns, std::function<void()> fn) = 0;
    virtual void bump(Counter c) = 0;
    // The members hear of the lease only through these: every member (a
    // keepalive's acknowledgement), or one.
    virtual void deliver_lease(int64_t until, int64_t rtt_us) = 0;
    virtual void deliver_lease_to(uint64_t member, int64_t until) = 0;
    virtual void deliver_node_failed(uint64_t member, const std::string &path, bool deleted) = 0;

protected:
    ~LeaseHost() = default;
};

class SessionLease {
public:
    explicit SessionLease(LeaseHost &client) : client_(client) {}
    SessionLease(const SessionLease &) = delete;
    SessionLease &operator=(const SessionLease &) = delete;

    // A holder is a candidacy that leads, claims or is heir: while there is
    // one, a keepalive goes out every T/6 (less when the report lag is
    // longer than T/4: period_ns()). It names its node, and every
    // keepalive checks every holder's node (docs/semantics.md, "A node
    // deleted by hand"): a node deleted while its own-node watch was lost
    // still ends its candidacy's lease within T/6 and a round trip.
    // claiming: it waits for a lease to begin its term (kClaiming), so
    // every acknowledged write is for it to hear of, not only keepalives.
    void hold(uint64_t member, const std::string &node_path, bool claiming = false);
    void release(uint64_t member);

    // Send a keepalive now, unless one is in flight and not overdue. Its
    // acknowledgement reaches every member (Member::on_lease); any other
    // write's reaches the claiming holders at once and every member within
    // T/24, once for all the writes acknowledged meanwhile: telling every
    // leader of every create made a join of E elections on one session
    // cost E x E deliveries (issue 35).
    void renew_now();
    // The same for a member that does not hold (yet): a follower that may
    // have become first earns the lease while its listing is in flight.
    void renew_for(uint64_t member, const std::string &node_path);

    // The deadline a write of this session sent now (at `sent`) earns if it
    // is acknowledged; call when sending.
    int64_t earns(int64_t sent);
    // A write sent at `sent`, which earned `earned` when sent, was
    // acknowledged (a create, or a keepalive): the lease grows to it and
    // every member hears of it.
    void acknowledged(int64_t sent, int64_t earned, int64_t rtt_us = -1);

    // The session's lease deadline (CLOCK_BOOTTIME ns); 0 when none.
    int64_t until() const { return until_; }
    int64_t margin_ns() const;
    int64_t full_ns() const;  // T/2 - margin: the longest lease one write earns

    // How late the quorum's leader hears of touches made at the current
    // connection's server (lease::report_lag; docs/semantics.md, "Why that
    // is safe"), set by the client on every connection:
    // asking(): the server's tickTime is being read. Until it is known, no
    // touch counts but the handshake, and no candidacy claims (may_claim).
    void asking();
    // The tickTime that holds for this connection (0: unknown, T >= 2 x
    // tickTime assumed). When the lag it makes leaves no usable lease
    // (lease::lease_usable) the connection is shut: it earns nothing, sends
    // no keepalive, and no candidacy claims on it. Otherwise the members
    // that wait to claim hear of the lease again.
    void tick_known(int64_t tick_ns);
    // A candidacy may begin a term now: the lag is known and leaves a lease.
    bool may_claim() const { return !asking_ && usable(); }
    bool usable() const;
    int64_t report_lag_ns() const;
    int64_t period_ns() const;  // lease::keepalive_period

    // Called by the Client before its members hear of the event.
    // A reconnect of the same session that negotiated a shorter timeout
    // lowers the lease; renegotiation_cap() then tells members how far
    // (INT64_MAX when nothing was lowered).
    void on_connected(bool new_session);
    void on_expired();
    int64_t renegotiation_cap() const { return cap_; }

private:
    // At most this many nodes in one keepalive: a multi of 1,000 checks of
    // election paths stays well inside ZooKeeper's 1 MB request limit.
    static constexpr size_t kMaxChecks = 1000;
    std::vector<std::pair<uint64_t, std::string>> targets(
        const std::pair<uint64_t, std::string> &extra);
    void send(const std::pair<uint64_t, std::string> &extra);
    void schedule();
    void tell_claimers();

    LeaseHost &client_;
    std::map<uint64_t, std::string> holders_;  // member -> a node of its own
    std::set<uint64_t> claimers_;              // holders in kClaiming
    // This session's acknowledged writes, newest last, thinned by
    // lease::record: touches known to have happened (lease::surely_heard).
    std::deque<AckedWrite> writes_;
    int64_t until_ = 0;
    int64_t earned_under_ns_ = 0;  // the T leases were earned under
    int64_t cap_ = INT64_MAX;
    bool inflight_ = false;
    int64_t inflight_sent_ = 0;
    uint64_t sent_seq_ = 0;      // keepalives sent; the in-flight one is the last
    uint64_t next_checked_ = 0;  // the holder the next keepalive checks first
    bool scheduled_ = false;
    bool claim_retry_ = false;  // tell_claimers' keepalive is pending
    bool tell_all_pending_ = false;  // acknowledged's delivery to every member
    int64_t told_all_at_ = 0;        // when every member heard last
    uint64_t gen_ = 0;  // bumped on every connection change: stale replies
    bool asking_ = false;  // the connection's tickTime is being read
    int64_t tick_ns_ = 0;  // the tickTime that holds; 0: unknown
};

}  // namespace zkelect
