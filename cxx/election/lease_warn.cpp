// LEASE_LOW (lease.warn.percent): a leader told that its lease runs low
// because the keepalive renewing it is late, while there is still time to
// stop its work on its own terms rather than at the deadline's DEPOSED.
// Same timer discipline as the term's lease check (term.cpp): one pending
// at a time, re-armed at the new deadline when a renewal came.
#include <string>

#include "client.h"
#include "election_shared.h"
#include "term.h"

namespace zkelect {

namespace {

// The mark: this share of the longest lease one keepalive earns. A healthy
// session renews every T/6, so about 60% of it is left at the lowest.
int64_t warn_ns(int percent, int64_t timeout_ns, int64_t margin_ns) {
    return lease::full_ns(timeout_ns, margin_ns) * percent / 100;
}

}  // namespace

void Term::on_lease_renewed(int64_t until) {
    int percent = host_.client().settings().lease_warn_percent;
    if (percent <= 0) return;
    if (until - boottime_ns() > warn_ns(percent, timeout_ns(), host_.margin_ns()))
        lease_warned_ = false;
    schedule_lease_warn(until);
}

void Term::schedule_lease_warn(int64_t until) {
    int percent = host_.client().settings().lease_warn_percent;
    if (percent <= 0 || until <= 0) return;
    int64_t at = until - warn_ns(percent, timeout_ns(), host_.margin_ns());
    if (lease_warn_at_ != 0 && lease_warn_at_ <= at) return;
    lease_warn_at_ = at;
    host_.client().at(at, while_alive(host_.life(), [this, at, percent] {
        on_lease_warn(at, percent);
    }));
}

void Term::on_lease_warn(int64_t at, int percent) {
    if (lease_warn_at_ != at) return;  // a later one superseded
    lease_warn_at_ = 0;
    if (!leading_) return;
    int64_t until = host_.shared().lease.value();
    if (until <= 0) return;  // revoked or fenced: the term is ending
    int64_t now = boottime_ns();
    int64_t mark = warn_ns(percent, timeout_ns(), host_.margin_ns());
    if (until - now > mark) {
        schedule_lease_warn(until);  // renewed since
        return;
    }
    if (now >= until || lease_warned_) return;
    lease_warned_ = true;
    host_.client().bump(kLeaseLow);
    host_.announce(EventType::kLeaseLow, Reason::kNone,
                   "lease low: " + std::to_string((until - now) / kNsPerMs) +
                       " ms left, below lease.warn.percent=" + std::to_string(percent) +
                       " of its length; the keepalive renewing it is late",
                   host_.node(), host_.shared().id, czxid_);
}

}  // namespace zkelect
