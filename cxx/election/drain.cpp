// The Candidacy's side of a transfer's drain (drain.h): kDraining, between
// the hand-over's DEPOSED and the delete of the old leader's node.
#include "candidacy.h"
#include "drain.h"

namespace zkelect {

// Called by hand_over() before it deposes: the DEPOSED event finds the
// drain already releasable (a holder that answers it at once with
// zkelect_release() is never refused).
bool Candidacy::begin_drain(int64_t lease_until) {
    int ms = client_.settings().transfer_drain_ms;
    if (ms <= 0 || node_.empty() || !want_) return false;
    drain_bound_ = boottime_ns() + int64_t(ms) * kNsPerMs;
    uint64_t seq = ++drain_seq_;
    set_state(State::kDraining);  // keeps the session's keepalives (update_hold)
    shared_->drain.publish(drain::until(lease_until, drain_bound_));
    shared_->drain_seq.store(seq);
    std::weak_ptr<Candidacy> weak = weak_from_this();
    client_.at(drain::delete_at(drain_bound_, margin_ns()), [weak, seq] {
        auto self = weak.lock();
        // Not released in time: the node goes all the same.
        if (self && self->state_ == State::kDraining && self->drain_seq_ == seq) self->requeue();
    });
    return true;
}

void Candidacy::release(uint64_t seq) {
    if (state_ != State::kDraining || seq != drain_seq_) return;
    requeue();  // the node is deleted, a new one made at the back
}

// Every way out of kDraining: the release, the bound, or anything that
// ends the node otherwise (a resign, a close, an expiry, a delete by
// hand, an error). The node no longer stands for the holder, and the
// transfer's outcome is read once the delete and the new create are sent.
void Candidacy::leave_drain() {
    shared_->drain_seq.store(0);
    shared_->drain.revoke();
    ++drain_seq_;
    std::weak_ptr<Candidacy> weak = weak_from_this();
    client_.post([weak] {
        if (auto self = weak.lock()) self->close_hand_over();
    });
}

}  // namespace zkelect
