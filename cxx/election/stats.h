// The figures a candidacy keeps about itself for zkelect_election_stats():
// written by the loop thread as things happen, copied whole by whoever asks.
// A plain struct behind one mutex rather than atomics: the loop writes a few
// fields at each transition, a reader wants them consistent with each other
// (a term's start with its state), and neither side holds the lock for more
// than a copy of ~400 bytes. is_leader() never looks here.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

namespace zkelect {

// Fixed buckets, so a snapshot is a copy and its JSON form has the same
// keys every time (Prometheus histograms need fixed upper bounds anyway).
template <int N>
struct Histogram {
    static constexpr int kBuckets = N;
    const int64_t *bounds_us;  // N upper bounds, ascending; +Inf is implied
    uint64_t counts[N + 1] = {};  // not cumulative; counts[N] is above the last
    uint64_t count = 0;
    int64_t sum_us = 0;
    int64_t last_us = -1;
    int64_t min_us = -1;
    int64_t max_us = -1;

    explicit Histogram(const int64_t *b) : bounds_us(b) {}
    void add(int64_t us) {
        int i = 0;
        while (i < N && us > bounds_us[i]) ++i;
        ++counts[i];
        ++count;
        sum_us += us;
        last_us = us;
        if (min_us < 0 || us < min_us) min_us = us;
        if (us > max_us) max_us = us;
    }
};

// Keepalive round trips: a check on the quorum, normally one or two ms on a
// LAN; the upper buckets catch a struggling ensemble before the lease does.
inline constexpr int64_t kKeepaliveBoundsUs[] = {500,   1000,   2500,   5000,   10000,
                                                 25000, 50000,  100000, 250000, 1000000};
// Failover as one successor sees it: from the predecessor's deletion being
// notified to ELECTED. Normally one round trip (or none for the heir).
inline constexpr int64_t kFailoverBoundsUs[] = {1000,   2500,   5000,    10000,   25000,  50000,
                                                100000, 250000, 1000000, 2500000, 10000000};

// What the loop updates in place (StatsCell::update).
struct ElectionCounts {
    // The candidacy's state (Candidacy::State as int) and since when
    // (CLOCK_REALTIME ns).
    int state = 0;
    const char *state_name = "";  // static
    int64_t state_since_ns = 0;
    // The current or last term: when it began and ended (REALTIME ns; 0
    // none). A term that has not ended has term_ended_ns 0.
    int64_t term_began_ns = 0;
    int64_t term_ended_ns = 0;
    int64_t term_token = 0;
    // Our index in the queue at the last listing (0 = first), -1 when none;
    // and how many candidates that listing held.
    int64_t queue_position = -1;
    int64_t queue_length = 0;
    uint64_t terms_won = 0;
    uint64_t losses[8] = {};  // by Reason; [0] unused
    uint64_t requests = 0;       // requests this candidacy sent to ZooKeeper
    uint64_t notifications = 0;  // watch notifications it received
};

using KeepaliveHistogram = Histogram<10>;
using FailoverHistogram = Histogram<11>;

// A copy of everything, for the JSON.
struct ElectionStats : ElectionCounts {
    KeepaliveHistogram keepalive{kKeepaliveBoundsUs};
    FailoverHistogram failover{kFailoverBoundsUs};
};

// The histograms are made at their first figure: a follower records none,
// and most leaders of a process of many elections never fail over, while
// the two cost 280 bytes in every election (issue 35).
class StatsCell {
public:
    template <class F>
    void update(F &&f) {
        std::lock_guard<std::mutex> lock(mu_);
        f(s_);
    }
    void add_keepalive(int64_t us) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!keepalive_) keepalive_ = std::make_unique<KeepaliveHistogram>(kKeepaliveBoundsUs);
        keepalive_->add(us);
    }
    // f's update and a failover of us (none when us < 0) under one lock: a
    // copy sees both or neither.
    template <class F>
    void update_with_failover(F &&f, int64_t us) {
        std::lock_guard<std::mutex> lock(mu_);
        f(s_);
        if (us < 0) return;
        if (!failover_) failover_ = std::make_unique<FailoverHistogram>(kFailoverBoundsUs);
        failover_->add(us);
    }
    ElectionStats copy() const {
        ElectionStats out;
        std::lock_guard<std::mutex> lock(mu_);
        static_cast<ElectionCounts &>(out) = s_;
        if (keepalive_) out.keepalive = *keepalive_;
        if (failover_) out.failover = *failover_;
        return out;
    }

private:
    mutable std::mutex mu_;
    ElectionCounts s_;
    std::unique_ptr<KeepaliveHistogram> keepalive_;
    std::unique_ptr<FailoverHistogram> failover_;
};

}  // namespace zkelect
