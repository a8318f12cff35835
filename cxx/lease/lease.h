// The lease: how long a candidacy may call itself leader after a write of
// its session was acknowledged, given what it knows of the session's recent
// touches. Pure arithmetic with its inputs passed in, so every rule of
// docs/semantics.md ("Leadership is a lease") is a unit test
// (tests/unit/lease_test.cpp), plus the one atomic that is_leader() reads.
//
// All times are CLOCK_BOOTTIME nanoseconds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>

namespace zkelect {

// A request of ours the server answered (for writes: acknowledged through
// the quorum), with its sending and answering times.
struct AckedWrite {
    int64_t sent;
    int64_t acked;
};

// What is known, when a write is sent, about the session's touches.
struct SessionFacts {
    int64_t timeout_ns = 0;  // T: the negotiated session timeout
    int64_t margin_ns = 0;   // taken off every deadline (clock rates, scheduling)
    // The current connection's handshake, a touch made by the quorum's
    // leader, happened after touch_floor and before connected_at
    // (INT64_MAX while disconnected).
    int64_t touch_floor = 0;
    int64_t connected_at = INT64_MAX;
    const std::deque<AckedWrite> *writes = nullptr;  // newest last
    // Requests of any kind the session's server answered, newest last: the
    // evidence that something of ours reached it (ZkSession::answered).
    const std::deque<AckedWrite> *answered = nullptr;
    // How late the quorum's leader hears of a touch made at our server
    // (lease::report_lag); 0 for T/4. lease::kLagAsking while the server's
    // tickTime is being read: then no touch of ours counts but the
    // handshake, which the quorum's leader made itself.
    int64_t report_lag_ns = 0;
};

namespace lease {

// The margin for a configured value (-1: derived, max(T/20, 10 ms)).
int64_t margin_ns(int64_t timeout_ns, int configured_ms);
// Whether a margin leaves any lease at all under timeout T.
inline bool margin_fits(int64_t timeout_ns, int64_t margin_ns) {
    return margin_ns > 0 && margin_ns < timeout_ns / 2;
}
// T/2 - margin: the longest lease one write can earn.
inline int64_t full_ns(int64_t timeout_ns, int64_t margin_ns) {
    return timeout_ns / 2 - margin_ns > 0 ? timeout_ns / 2 - margin_ns : 0;
}

// How late the quorum's leader hears of a touch of ours made at the server
// we are connected to: a follower reports its sessions' touches when the
// leader pings it, every tickTime/2. ZooKeeper's default minimum session
// timeout of 2 x tickTime makes that at most T/4, which is what the rules
// assume when tickTime is unknown (tick_ns 0); a server configured with a
// lower minSessionTimeout can grant a T < 2 x tickTime, and then it is
// tickTime/2 (docs/semantics.md, "Why that is safe").
inline int64_t report_lag(int64_t timeout_ns, int64_t tick_ns) {
    return tick_ns / 2 > timeout_ns / 4 ? tick_ns / 2 : timeout_ns / 4;
}
// SessionFacts::report_lag_ns while the lag is being asked for.
constexpr int64_t kLagAsking = INT64_MAX;

// The keepalive period under report lag `lag`. T/6 while lag <= T/4: a
// steady session's lease is then the full T/2 - margin. Beyond, a third of
// what the lag leaves, W = T - lag - margin - T/24 (at most T/6): a lease
// earned at s rests on a write acknowledged by s - lag, at most one period
// and the history's spacing (T/24) older, so it runs at least
// W - period - rtt = 2W/3 - rtt past s, beyond the next keepalive's
// acknowledgement (s + W/3 + rtt) while rtt < W/6.
int64_t keepalive_period(int64_t timeout_ns, int64_t lag_ns, int64_t margin_ns);
// Whether a session can hold a lease at all under report lag `lag`: the
// period above is at least T/24 (W >= T/8). Otherwise a connection with
// that lag is never led on.
bool lease_usable(int64_t timeout_ns, int64_t lag_ns, int64_t margin_ns);
// The longest lease a write can earn under report lag `lag`, from its send:
// min(T/2, T - lag) - margin (the handshake's own lease excepted, which no
// lag concerns). For the WARNING's words; until() is the rule.
inline int64_t longest_ns(int64_t timeout_ns, int64_t lag_ns, int64_t margin_ns) {
    int64_t l = (timeout_ns - lag_ns < timeout_ns / 2 ? timeout_ns - lag_ns : timeout_ns / 2) -
                margin_ns;
    return l > 0 ? l : 0;
}

// How often a connected client (with candidacies or not: Client::probe)
// sends a read of its own when nothing it sent in that long was answered:
// the evidence of touches a quiet session has (libzookeeper's own pings are
// sent on its I/O thread, unseen).
inline int64_t probe_period(int64_t timeout_ns) { return timeout_ns / 3; }

// The latest touch of the session that the quorum surely heard of by the
// time a write sent at `sent` is acknowledged; INT64_MIN / 2 when none is
// known. A request of ours counts once answered by sent - report lag.
int64_t surely_heard(const SessionFacts &f, int64_t sent);

// Keeps `w` in a history of answered requests (newest last) so that what a
// later send needs stays in it however busy the session is: a request whose
// answer came within `spacing` of the newest kept one's is left out (the
// history keeps the first of each such window), and at most kHistory are
// kept. A send at s counts the latest entry answered by s - lag (T/4, or
// tickTime/2 when that is more); with spacing T/24 and 32 entries, one is
// there for every s within 4T/3 of the newest, at most T/24 older than the
// best answer. Keeping only the last
// few requests instead would hold nothing old enough under a burst.
constexpr size_t kHistory = 32;
void record(std::deque<AckedWrite> &history, AckedWrite w, int64_t spacing_ns);

// The deadline an acknowledged write sent at `sent` earns:
// min(sent + T/2, surely_heard + T) - margin. Compute it when sending.
int64_t until(const SessionFacts &f, int64_t sent);

// After a reconnect that negotiated a shorter timeout T', the quorum's
// revalidation set the session's expiry to (handshake + T'); a lease earned
// under the longer T must not outlive it.
int64_t cap_after_renegotiation(int64_t current, int64_t touch_floor, int64_t new_timeout_ns,
                                int64_t new_margin_ns);

}  // namespace lease

// The published lease of one candidacy: the deadline is_leader() compares
// the clock with, lock-free. The loop thread publishes and extends it; a
// user's resign or close fences it, and a fence cannot be overwritten by a
// claim the loop had not yet seen the resign for: only the loop, handling
// that resign, lifts it.
class LeaseCell {
public:
    static constexpr int64_t kFenced = -1;

    bool held(int64_t now) const {
        int64_t v = v_.load(std::memory_order_acquire);
#ifdef ZKELECT_MUTATION_IS_LEADER_NO_CLOCK
        (void)now;
        return v > 0;
#else
        return v > 0 && now < v;
#endif
    }
    int64_t value() const { return v_.load(std::memory_order_acquire); }

    // Loop thread. Start a term: false when fenced (a resign is on its way).
    bool publish(int64_t until);
    // Loop thread. Push the deadline of a held lease later; never revives
    // one that was revoked or fenced, nor one that ran out by now (its
    // DEPOSED may still be on its way: is_leader() must not go 1, 0, 1
    // with no event between; a new term begins only with publish()).
    void extend(int64_t until, int64_t now);
    // Loop thread. End the term; returns the deadline it had (0 if none).
    // A fence stays.
    int64_t revoke();
    // Any thread (resign, close): leadership ends now, and stays ended until
    // the loop lifts the fence.
    void fence();
    // Loop thread, handling the resign that fenced.
    void lift_fence();
    // Lower a held deadline (a shorter renegotiated timeout).
    void cap(int64_t until);

private:
    std::atomic<int64_t> v_{0};
};

}  // namespace zkelect
