// LEASE_LOW (lease.warn.percent): a leader told that its lease runs low
// because the keepalive renewing it is late, while there is still time to
// stop its work on its own terms rather than at the deadline's DEPOSED.
// Same timer discipline as the lease check (schedule_lease_check): one
// pending at a time, re-armed at the new deadline when a renewal came.
#include <string>

#include "candidacy.h"

namespace zkelect {

namespace {

// The mark: this share of the longest lease one keepalive earns. A healthy
// session renews every T/6, so about 60% of it is left at the lowest.
int64_t warn_ns(int percent, int64_t timeout_ns, int64_t margin_ns) {
    return lease::full_ns(timeout_ns, margin_ns) * percent / 100;
}

}  // namespace

void Candidacy::on_lease_renewed(int64_t until) {
    int percent = client_.settings().lease_warn_percent;
    if (percent <= 0) return;
    if (until - boottime_ns() > warn_ns(percent, timeout_ns(), margin_ns())) lease_warned_ = false;
    schedule_lease_warn(until);
}

void Candidacy::schedule_lease_warn(int64_t until) {
    int percent = client_.settings().lease_warn_percent;
    if (percent <= 0 || until <= 0) return;
    int64_t at = until - warn_ns(percent, timeout_ns(), margin_ns());
    if (lease_warn_at_ != 0 && lease_warn_at_ <= at) return;
    lease_warn_at_ = at;
    std::weak_ptr<Candidacy> weak = weak_from_this();
    client_.at(at, [weak, at, percent] {
        auto self = weak.lock();
        if (!self || self->lease_warn_at_ != at) return;  // a later one superseded
        self->lease_warn_at_ = 0;
        if (!self->leading_) return;
        int64_t until = self->shared_->lease.value();
        if (until <= 0) return;  // revoked or fenced: the term is ending
        int64_t now = boottime_ns();
        int64_t mark = warn_ns(percent, self->timeout_ns(), self->margin_ns());
        if (until - now > mark) {
            self->schedule_lease_warn(until);  // renewed since
            return;
        }
        if (now >= until || self->lease_warned_) return;
        self->lease_warned_ = true;
        self->client_.bump(kLeaseLow);
        self->emit(EventType::kLeaseLow, Reason::kNone,
                   "lease low: " + std::to_string((until - now) / kNsPerMs) +
                       " ms left, below lease.warn.percent=" + std::to_string(percent) +
                       " of its length; the keepalive renewing it is late",
                   self->node_, self->shared_->id, self->czxid_);
    });
}

}  // namespace zkelect
