// The lease rules of docs/semantics.md, one test per rule and per boundary:
// each fails if its rule is dropped or its inequality flipped.
#include <gtest/gtest.h>

#include <deque>

#include "drain.h"
#include "election_shared.h"
#include "handshake_cap.h"
#include "lease.h"

using namespace zkelect;

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t T = 2000 * kMs;
constexpr int64_t M = 100 * kMs;
constexpr int64_t kSent = 1000000 * kMs;  // an arbitrary boot-clock time

// A session connected for ever with nothing of ours answered: no rule
// gives it a touch but the (long past) handshake.
SessionFacts quiet_session() {
    SessionFacts f;
    f.timeout_ns = T;
    f.margin_ns = M;
    f.touch_floor = 0;
    f.connected_at = 1;
    return f;
}

}  // namespace

TEST(LeaseMargin, DerivedIsTwentiethOfTimeoutWithTenMsFloor) {
    EXPECT_EQ(lease::margin_ns(T, -1), T / 20);
    EXPECT_EQ(lease::margin_ns(100 * kMs, -1), 10 * kMs);
    EXPECT_EQ(lease::margin_ns(T, 250), 250 * kMs);
}

TEST(LeaseMargin, MustBePositiveAndBelowHalfTheTimeout) {
    EXPECT_FALSE(lease::margin_fits(T, 0));
    EXPECT_TRUE(lease::margin_fits(T, 1));
    EXPECT_TRUE(lease::margin_fits(T, T / 2 - 1));
    EXPECT_FALSE(lease::margin_fits(T, T / 2));
    EXPECT_EQ(lease::full_ns(T, M), T / 2 - M);
    EXPECT_EQ(lease::full_ns(T, T), 0);
}

TEST(LeaseProbe, AQuietSessionsEvidenceComesEveryThird) {
    EXPECT_EQ(lease::probe_period(T), T / 3);
}

TEST(LeaseRules, NoKnownTouchEarnsNothing) {
    SessionFacts f = quiet_session();
    f.connected_at = INT64_MAX;  // disconnected: no handshake, no ping rule
    EXPECT_LE(lease::until(f, kSent), kSent);
}

TEST(LeaseRules, HandshakeCountsFromItsFloorOnceConnectedBeforeSending) {
    SessionFacts f = quiet_session();
    f.touch_floor = kSent - T * 3 / 4;
    f.connected_at = kSent;
    EXPECT_EQ(lease::until(f, kSent), f.touch_floor + T - M);
    f.connected_at = kSent + 1;  // the handshake may come after the write
    EXPECT_LE(lease::until(f, kSent), kSent);
}

TEST(LeaseRules, NeverLongerThanHalfTheTimeoutFromTheSend) {
    SessionFacts f = quiet_session();
    f.touch_floor = kSent;  // a touch as late as the send itself
    f.connected_at = kSent;
    EXPECT_EQ(lease::until(f, kSent), kSent + T / 2 - M);
}

TEST(LeaseRules, WriteCountsOnlyIfAcknowledgedAQuarterBeforeTheSend) {
    SessionFacts f = quiet_session();
    std::deque<AckedWrite> writes{{kSent - T / 2, kSent - T / 4}};
    f.writes = &writes;
    EXPECT_EQ(lease::until(f, kSent), std::min(kSent + T / 2, kSent - T / 2 + T) - M);
    writes.front().acked = kSent - T / 4 + 1;
    EXPECT_LE(lease::until(f, kSent), kSent);
    // The latest qualifying write wins, whatever the order.
    writes = {{kSent - T, kSent - T + kMs}, {kSent - T * 2 / 3, kSent - T / 2}, {kSent - T * 3 / 4, kSent - T / 2}};
    EXPECT_EQ(lease::until(f, kSent), kSent - T * 2 / 3 + T - M);
}

// Issue 27 finding 7: libzookeeper's pings are sent on its I/O thread and
// their answers are not seen, so no touch is assumed from them; only an
// answer to a request of ours is evidence (a probe every T/3 on a quiet
// session). The old rule credited sent - T/4 - T/3 - T/12 to any session
// connected, awake and unstuck over that window: with the I/O thread stuck
// and nothing outstanding, it credited pings never sent.
TEST(LeaseRules, NoTouchIsAssumedWithoutAnAnswer) {
    SessionFacts f = quiet_session();
    EXPECT_LE(lease::until(f, kSent), kSent);
    std::deque<AckedWrite> answered;
    f.answered = &answered;
    EXPECT_LE(lease::until(f, kSent), kSent);
}

TEST(LeaseRules, AnAnswerCountsFromItsSendingIfAnsweredAQuarterBeforeTheSend) {
    SessionFacts f = quiet_session();
    const int64_t probe = kSent - T / 4 - T / 3;  // the latest probe before kSent - T/4
    std::deque<AckedWrite> answered{{probe, kSent - T / 4}};
    f.answered = &answered;
    EXPECT_EQ(lease::surely_heard(f, kSent), probe);
    EXPECT_EQ(lease::until(f, kSent), probe + T - M);
    EXPECT_GT(lease::until(f, kSent), kSent + T / 3);  // a quiet claim still leads at once
    answered.front().acked = kSent - T / 4 + 1;  // answered too late to have been reported
    EXPECT_LE(lease::until(f, kSent), kSent);
}

TEST(LeaseRules, AnAnswerCountsOnlyOnTheCurrentConnection) {
    SessionFacts f = quiet_session();
    std::deque<AckedWrite> answered{{kSent - T / 2, kSent - T / 2 + kMs}};
    f.answered = &answered;
    f.touch_floor = INT64_MIN / 2;
    f.connected_at = kSent - T / 2;
    EXPECT_EQ(lease::surely_heard(f, kSent), kSent - T / 2);
    f.connected_at = kSent - T / 2 + 1;  // sent on the connection before
    EXPECT_LT(lease::surely_heard(f, kSent), kSent - T / 2);
    f.connected_at = INT64_MAX;  // disconnected now
    EXPECT_LT(lease::surely_heard(f, kSent), kSent - T / 2);
}

TEST(LeaseRules, PausedProcessLeasesOnlyFromWhatWasAnswered) {
    // Resumed from a pause just now: what was answered before the pause
    // still counts from when it was sent, and nothing else does.
    SessionFacts f = quiet_session();
    std::deque<AckedWrite> answered{{kSent - T, kSent - T + kMs}};
    f.answered = &answered;
    EXPECT_LE(lease::until(f, kSent), kSent);
    std::deque<AckedWrite> writes{{kSent - T / 2, kSent - T / 2 + kMs}};
    f.writes = &writes;
    EXPECT_EQ(lease::until(f, kSent), kSent + T / 2 - M);
}

// Issue 27 finding 9: a follower reports touches every tickTime/2, which
// is at most T/4 only while T >= 2 x tickTime (ZooKeeper's default floor,
// not a rule). A server that grants less stretches the lag to tickTime/2.
TEST(LeaseReportLag, AQuarterOfTheTimeoutUnlessTheTickSaysMore) {
    EXPECT_EQ(lease::report_lag(T, 0), T / 4);          // unknown: the default floor
    EXPECT_EQ(lease::report_lag(T, T / 2), T / 4);      // T = 2 x tickTime
    EXPECT_EQ(lease::report_lag(T, T / 10), T / 4);     // a short tick changes nothing
    EXPECT_EQ(lease::report_lag(T, T), T / 2);          // T = tickTime
}

TEST(LeaseRules, WriteCountsOnlyOnceTheReportLagHasPassed) {
    SessionFacts f = quiet_session();
    const int64_t tick = T * 4 / 3;  // T = 1.5 x tickTime
    f.report_lag_ns = lease::report_lag(T, tick);
    ASSERT_EQ(f.report_lag_ns, tick / 2);
    std::deque<AckedWrite> writes{{kSent - tick / 2 - kMs, kSent - tick / 2}};
    f.writes = &writes;
    EXPECT_EQ(lease::until(f, kSent), kSent - tick / 2 - kMs + T - M);
    writes.front().acked = kSent - tick / 2 + 1;  // answered by s - T/4, not by s - tickTime/2
    EXPECT_LE(lease::until(f, kSent), kSent);
    f.report_lag_ns = 0;  // what the old rule (T/4) made of it: a lease
    EXPECT_GT(lease::until(f, kSent), kSent);
    // The same for any answered request.
    f.report_lag_ns = tick / 2;
    f.writes = nullptr;
    std::deque<AckedWrite> answered{{kSent - tick / 2 - kMs, kSent - tick / 2 + 1}};
    f.answered = &answered;
    EXPECT_LE(lease::until(f, kSent), kSent);
    answered.front().acked = kSent - tick / 2;
    EXPECT_EQ(lease::until(f, kSent), kSent - tick / 2 - kMs + T - M);
}

TEST(LeaseRules, WhileTheLagIsAskedOnlyTheHandshakeCounts) {
    SessionFacts f = quiet_session();
    f.report_lag_ns = lease::kLagAsking;
    std::deque<AckedWrite> writes{{kSent - T / 2, kSent - T / 2 + kMs}};
    std::deque<AckedWrite> answered{{kSent - T / 2, kSent - T / 2 + kMs}};
    f.writes = &writes;
    f.answered = &answered;
    EXPECT_LE(lease::until(f, kSent), kSent);
    f.touch_floor = kSent - T * 3 / 4;
    f.connected_at = kSent - kMs;
    EXPECT_EQ(lease::until(f, kSent), kSent - T * 3 / 4 + T - M);
}

TEST(LeaseKeepalive, PeriodIsASixthUnlessTheLagLeavesLess) {
    EXPECT_EQ(lease::keepalive_period(T, T / 4, M), T / 6);
    EXPECT_TRUE(lease::lease_usable(T, T / 4, M));
    // T = 1.5 s, tickTime = 2 s, margin 75 ms: W = 1500 - 1000 - 75 - 62.5.
    const int64_t t = 1500 * kMs, m = 75 * kMs, lag = 1000 * kMs;
    const int64_t w = t - lag - m - t / 24;
    EXPECT_EQ(lease::keepalive_period(t, lag, m), w / 3);
    EXPECT_TRUE(lease::lease_usable(t, lag, m));
    EXPECT_EQ(lease::longest_ns(t, lag, m), 425 * kMs);
    EXPECT_EQ(lease::longest_ns(t, t / 4, m), t / 2 - m);
    // T = 1 s, tickTime = 2 s: nothing is left.
    EXPECT_FALSE(lease::lease_usable(1000 * kMs, lag, 50 * kMs));
    EXPECT_EQ(lease::keepalive_period(1000 * kMs, lag, 50 * kMs), 0);
    // The boundary: usable exactly while the period is at least T/24.
    for (int64_t l = t / 4; l < t; l += kMs)
        EXPECT_EQ(lease::lease_usable(t, l, m), lease::keepalive_period(t, l, m) >= t / 24) << l;
}

// A steady session (a keepalive every period, each acknowledged after rtt,
// thinned into the history as SessionLease keeps it) under every usable lag:
// each lease ends before the argument's bound and after the next keepalive
// is acknowledged, so a leader leads without a gap.
TEST(LeaseKeepalive, ASteadySessionLeadsWithoutAGapWithinTheBound) {
    for (int64_t tick_ms : {0, 500, 1000, 1200, 1500, 1700, 2000, 2200}) {
        const int64_t t = 1500 * kMs, m = 75 * kMs, rtt = 10 * kMs;
        const int64_t lag = lease::report_lag(t, tick_ms * kMs);
        if (!lease::lease_usable(t, lag, m)) {
            EXPECT_GE(tick_ms, 2000) << tick_ms;
            continue;
        }
        const int64_t period = lease::keepalive_period(t, lag, m);
        std::deque<AckedWrite> writes;
        SessionFacts f = quiet_session();
        f.timeout_ns = t;
        f.margin_ns = m;
        f.touch_floor = INT64_MIN / 2;
        f.report_lag_ns = lag;
        f.writes = &writes;
        for (int64_t s = kSent; s < kSent + 10 * t; s += period) {
            int64_t earned = lease::until(f, s);
            if (s > kSent + 2 * t) {
                EXPECT_LE(earned, s + lease::longest_ns(t, lag, m)) << tick_ms;
                EXPECT_GT(earned, s + period + rtt) << tick_ms << " at " << s;
            }
            lease::record(writes, {s, s + rtt}, t / 24);
        }
    }
}

// A margin that fits T but leaves a lease shorter than T/6 (0.3 T of the
// configured timeout under a server that grants two ticks, 2/3 of it:
// zkelect-sim seeds 388 and 39786): the keepalive comes before the lease
// runs out, or the leader is DEPOSED and ELECTED again at every one.
TEST(LeaseKeepalive, ALargeMarginShortensThePeriod) {
    const int64_t t = 2666 * kMs, m = 1200 * kMs, rtt = 3 * kMs;
    const int64_t lag = lease::report_lag(t, 1333 * kMs);
    ASSERT_TRUE(lease::margin_fits(t, m));
    ASSERT_TRUE(lease::lease_usable(t, lag, m));
    const int64_t period = lease::keepalive_period(t, lag, m);
    EXPECT_EQ(period, (t / 2 - m) / 2);
    std::deque<AckedWrite> writes;
    SessionFacts f = quiet_session();
    f.timeout_ns = t;
    f.margin_ns = m;
    f.touch_floor = INT64_MIN / 2;
    f.report_lag_ns = lag;
    f.writes = &writes;
    for (int64_t s = kSent; s < kSent + 10 * t; s += period) {
        if (s > kSent + 2 * t) EXPECT_GT(lease::until(f, s), s + period + rtt) << s;
        lease::record(writes, {s, s + rtt}, t / 24);
    }
    // The default margin (T/20) keeps T/6.
    EXPECT_EQ(lease::keepalive_period(t, lag, t / 20), t / 6);
}

TEST(LeaseRules, ShorterRenegotiatedTimeoutCapsALease) {
    const int64_t t2 = 800 * kMs, m2 = 40 * kMs, floor = kSent;
    EXPECT_EQ(lease::cap_after_renegotiation(kSent + T, floor, t2, m2), floor + t2 - m2);
    EXPECT_EQ(lease::cap_after_renegotiation(kSent + kMs, floor, t2, m2), kSent + kMs);  // never raises
    EXPECT_EQ(lease::cap_after_renegotiation(0, floor, t2, m2), 0);  // no lease stays none
}

TEST(LeaseCell, HeldOnlyBeforeItsDeadline) {
    LeaseCell c;
    EXPECT_FALSE(c.held(5));
    ASSERT_TRUE(c.publish(100));
    EXPECT_TRUE(c.held(99));
    EXPECT_FALSE(c.held(100));
}

TEST(LeaseCell, FenceBeatsALaterClaim) {
    // A resign returned; a claim the loop made before it saw that resign
    // must not make is_leader() answer 1 again.
    LeaseCell c;
    c.fence();
    EXPECT_FALSE(c.publish(1000));
    EXPECT_FALSE(c.held(1));
    c.extend(2000, 1);
    EXPECT_FALSE(c.held(1));
    EXPECT_EQ(c.revoke(), 0);
    EXPECT_EQ(c.value(), LeaseCell::kFenced);  // revoke keeps the fence
    c.lift_fence();
    EXPECT_TRUE(c.publish(1000));
    EXPECT_TRUE(c.held(1));
}

TEST(LeaseCell, FenceEndsAHeldLease) {
    LeaseCell c;
    ASSERT_TRUE(c.publish(1000));
    c.fence();
    EXPECT_FALSE(c.held(1));
}

TEST(LeaseCell, ExtendNeverRevivesOrShortens) {
    LeaseCell c;
    c.extend(1000, 1);
    EXPECT_FALSE(c.held(1));  // nothing to extend
    ASSERT_TRUE(c.publish(1000));
    c.extend(500, 1);
    EXPECT_EQ(c.value(), 1000);
    c.extend(2000, 1);
    EXPECT_EQ(c.value(), 2000);
    EXPECT_EQ(c.revoke(), 2000);
    c.extend(3000, 1);
    EXPECT_EQ(c.value(), 0);
}

// Issue 50, 7(a): a lease that ran out (is_leader answered 0, its DEPOSED
// not yet posted: the lease check runs after the keepalive acknowledgement
// already in the loop's mailbox) stays out. Extending it made is_leader go
// 1, 0, 1 with neither DEPOSED nor ELECTED between.
TEST(LeaseCell, ExtendNeverRevivesALapsedLease) {
    LeaseCell c;
    ASSERT_TRUE(c.publish(1000));
    EXPECT_TRUE(c.held(999));
    EXPECT_FALSE(c.held(1000));  // ran out: is_leader 0
    c.extend(5000, 1200);        // the acknowledgement handled after that
    EXPECT_FALSE(c.held(1200)) << "a lapsed lease came back to life";
    EXPECT_FALSE(c.held(4000));
    LeaseCell d;
    ASSERT_TRUE(d.publish(1000));
    d.extend(6000, 999);  // one still held is pushed on
    EXPECT_TRUE(d.held(5999));
}

TEST(LeaseCell, CapLowersButNeverEndsSilently) {
    LeaseCell c;
    ASSERT_TRUE(c.publish(1000));
    c.cap(600);
    EXPECT_EQ(c.value(), 600);
    c.cap(900);
    EXPECT_EQ(c.value(), 600);
    c.cap(-5);  // already over: a deadline in the past, which the lease check ends with DEPOSED
    EXPECT_EQ(c.value(), 1);
    EXPECT_FALSE(c.held(1));
}

// Issue 27 finding 2: a handshake that negotiated a shorter timeout bounds
// every lease of the client from the moment ZooKeeper's thread delivers it,
// before the loop gets to cap each lease; the loop's settle lifts it, and a
// later handshake keeps its own bound until it is settled in turn.
TEST(HandshakeCap, BoundsUntilTheLoopSettlesThatHandshake) {
    HandshakeCap cap;
    EXPECT_TRUE(cap.allows(kSent));
    uint64_t first = cap.lower(kSent + T);
    EXPECT_TRUE(cap.allows(kSent + T - 1));
    EXPECT_FALSE(cap.allows(kSent + T));
    uint64_t second = cap.lower(kSent + 2 * T);  // never raised by a later one
    EXPECT_FALSE(cap.allows(kSent + T));
    cap.settle(first);  // the later handshake is not applied yet
    EXPECT_FALSE(cap.allows(kSent + T));
    cap.settle(second);
    EXPECT_TRUE(cap.allows(kSent + 100 * T));
}

TEST(HandshakeCap, AnElectionsIsLeaderObeysIt) {
    HandshakeCap cap;
    ElectionShared shared("/p", "id");
    shared.handshake_cap = &cap;
    ASSERT_TRUE(shared.lease.publish(boottime_ns() + 60000 * kMs));
    EXPECT_TRUE(shared.is_leader());
    uint64_t seq = cap.lower(boottime_ns() - 1);  // a handshake the loop has not seen
    EXPECT_FALSE(shared.is_leader());
    cap.settle(seq);
    EXPECT_TRUE(shared.is_leader());
}

// Found by the C API's unread-queue test (a term every 7 ms, DEPOSED
// lease_ended in a quiet run): a history of only the last four answers held
// nothing answered T/4 before a send under a burst, so no touch was known
// and a steady leader's lease ran out. The thinned history keeps one.
TEST(LeaseHistory, ABurstKeepsAnAnswerOldEnoughForTheNextSend) {
    std::deque<AckedWrite> history;
    const int64_t spacing = T / 24;
    for (int64_t t = 0; t <= T; t += 7 * kMs) lease::record(history, {t, t + kMs}, spacing);
    SessionFacts f = quiet_session();
    f.touch_floor = INT64_MIN / 2;
    f.writes = &history;
    const int64_t send = T + 8 * kMs;
    EXPECT_GE(lease::surely_heard(f, send), send - T / 4 - spacing - kMs);
    EXPECT_EQ(lease::until(f, send), send + T / 2 - M);
    EXPECT_LE(history.size(), lease::kHistory);
    // Sparse answers are all kept, newest last.
    std::deque<AckedWrite> sparse;
    lease::record(sparse, {0, kMs}, spacing);
    lease::record(sparse, {T, T + kMs}, spacing);
    ASSERT_EQ(sparse.size(), 2u);
    EXPECT_EQ(sparse.back().sent, T);
}

// A transfer's drain (drain.h): its deadline follows the session's lease
// but never passes the bound, and a node not released is deleted only a
// margin after the bound, so a yes of is_draining() just before the bound
// leaves the holder the margin, as a yes of is_leader() does.
TEST(Drain, DeadlineIsTheLeaseCappedAtTheBound) {
    EXPECT_EQ(drain::until(kSent + T / 2, kSent + T), kSent + T / 2);
    EXPECT_EQ(drain::until(kSent + T, kSent + T / 2), kSent + T / 2);
    EXPECT_EQ(drain::until(0, kSent), 0);                      // no lease: no drain
    EXPECT_EQ(drain::until(LeaseCell::kFenced, kSent), 0);     // resigned meanwhile
    EXPECT_EQ(drain::delete_at(kSent, M), kSent + M);
    // The cell keeps the drain's deadline like the lease's: a revoke ends
    // it, and no later keepalive revives it.
    ElectionShared sh("/p", "a");
    ASSERT_TRUE(sh.drain.publish(drain::until(boottime_ns() + T, boottime_ns() + T / 2)));
    EXPECT_TRUE(sh.is_draining());
    sh.drain.revoke();
    sh.drain.extend(boottime_ns() + T, boottime_ns());
    EXPECT_FALSE(sh.is_draining());
}
