#include "lease.h"

#include <algorithm>

namespace zkelect {
namespace lease {

constexpr int64_t kNsPerMs = 1000000;

int64_t margin_ns(int64_t timeout_ns, int configured_ms) {
    if (configured_ms >= 0) return int64_t(configured_ms) * kNsPerMs;
    return std::max<int64_t>(timeout_ns / 20, 10 * kNsPerMs);
}

int64_t keepalive_period(int64_t timeout_ns, int64_t lag_ns, int64_t margin_ns) {
    const int64_t t = timeout_ns;
    // No lease runs past s + T/2 - margin: under a margin above T/6 (one that
    // a server's shorter timeout made large, say) a keepalive every T/6 would
    // come after the lease ran out, and the leader would be DEPOSED and
    // ELECTED again at every one. Half of it outlasts an acknowledgement
    // while rtt < (T/2 - margin)/2.
    const int64_t cap = std::min(t / 6, full_ns(t, margin_ns) / 2);
    if (lag_ns <= t / 4) return cap;
    int64_t w = t - lag_ns - margin_ns - t / 24;
    return std::max<int64_t>(std::min(cap, w / 3), 0);
}

bool lease_usable(int64_t timeout_ns, int64_t lag_ns, int64_t margin_ns) {
    if (lag_ns <= timeout_ns / 4) return true;
    return keepalive_period(timeout_ns, lag_ns, margin_ns) >= timeout_ns / 24;
}

int64_t surely_heard(const SessionFacts &f, int64_t sent) {
    const int64_t t = f.timeout_ns;
    int64_t touched = INT64_MIN / 2;
    // This connection's handshake (a session's creation or its revalidation
    // on reconnect) is a touch made by the quorum's leader itself: no report
    // lag, whatever the servers' tickTime.
    if (f.connected_at <= sent) touched = f.touch_floor;
    // While the lag is being asked for, nothing else counts.
    if (f.report_lag_ns == kLagAsking) return touched;
    const int64_t lag = f.report_lag_ns > 0 ? f.report_lag_ns : t / 4;
    // A write of ours acknowledged by sent - lag: its server reported the
    // touch to the quorum's leader within tickTime/2 <= lag, and was still in
    // the quorum after `sent` (it acknowledges the write being sent now).
    if (f.writes) {
        for (const auto &w : *f.writes)
            if (w.acked <= sent - lag) touched = std::max(touched, w.sent);
    }
    // Any request of ours answered on this connection by sent - lag (a read,
    // the library's own probe): it reached the server after it was sent,
    // and that server, which acknowledges the write being sent now over the
    // same connection, was in the quorum throughout (a server that loses
    // the quorum drops its connections) and reported the touch within
    // tickTime/2 <= lag. Only answers count, never a ping assumed sent: an
    // I/O thread that stood still sent nothing.
    if (f.answered) {
        for (const auto &a : *f.answered)
            if (a.sent >= f.connected_at && a.acked <= sent - lag)
                touched = std::max(touched, a.sent);
    }
    return touched;
}

void record(std::deque<AckedWrite> &history, AckedWrite w, int64_t spacing_ns) {
    if (!history.empty() && w.acked - history.back().acked < spacing_ns) return;
    history.push_back(w);
    while (history.size() > kHistory) history.pop_front();
}

int64_t until(const SessionFacts &f, int64_t sent) {
#ifdef ZKELECT_MUTATION_LEASE_BY_READS
    // Mutation: every acknowledged request (reads too) earns a full lease.
    return sent + full_ns(f.timeout_ns, f.margin_ns);
#else
    const int64_t t = f.timeout_ns;
    return std::min(sent + t / 2, surely_heard(f, sent) + t) - f.margin_ns;
#endif
}

int64_t cap_after_renegotiation(int64_t current, int64_t touch_floor, int64_t new_timeout_ns,
                                int64_t new_margin_ns) {
    if (current <= 0) return current;
    return std::min(current, touch_floor + new_timeout_ns - new_margin_ns);
}

}  // namespace lease

bool LeaseCell::publish(int64_t until) {
#ifdef ZKELECT_MUTATION_RESIGN_NO_FENCE
    v_.store(until, std::memory_order_release);
    return true;
#else
    int64_t cur = v_.load(std::memory_order_acquire);
    while (cur != kFenced) {
        if (v_.compare_exchange_weak(cur, until, std::memory_order_acq_rel)) return true;
    }
    return false;
#endif
}

void LeaseCell::extend(int64_t until, int64_t now) {
    int64_t cur = v_.load(std::memory_order_acquire);
    while (cur > 0 && now < cur && cur < until &&
           !v_.compare_exchange_weak(cur, until, std::memory_order_acq_rel)) {
    }
}

int64_t LeaseCell::revoke() {
    int64_t cur = v_.load(std::memory_order_acquire);
    while (cur > 0) {
        if (v_.compare_exchange_weak(cur, 0, std::memory_order_acq_rel)) return cur;
    }
    return 0;
}

void LeaseCell::fence() {
#ifdef ZKELECT_MUTATION_RESIGN_NO_FENCE
    v_.store(0, std::memory_order_release);
#else
    v_.store(kFenced, std::memory_order_release);
#endif
}

void LeaseCell::lift_fence() {
    int64_t expect = kFenced;
    v_.compare_exchange_strong(expect, 0, std::memory_order_acq_rel);
}

void LeaseCell::cap(int64_t until) {
    int64_t cur = v_.load(std::memory_order_acquire);
    while (cur > 0 && cur > until &&
           !v_.compare_exchange_weak(cur, until > 0 ? until : 1, std::memory_order_acq_rel)) {
    }
}

}  // namespace zkelect
