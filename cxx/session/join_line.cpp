#include "join_line.h"

#include <algorithm>
#include <climits>
#include <iterator>

#include "member.h"

namespace zkelect {

bool JoinLine::take(Ticket t) {
    if (held_.count(t)) return true;
    if (held_.size() >= window_ || !hooks_.connected()) return false;
    // A place given up ahead of t still counts here (it is dropped when the
    // round reaches it): t then waits one round more, never jumps the line.
    if (!line_.empty() && line_.front().first < t) return false;
    if (!line_.empty() && line_.front().first == t) line_.pop_front();
    held_.emplace(t, hooks_.now_ns());
    arm_bound();
    return true;
}

void JoinLine::wait(Ticket t, std::weak_ptr<Member> m) {
    held_.erase(t);
    auto at = std::lower_bound(line_.begin(), line_.end(), t,
                               [](const auto &e, Ticket x) { return e.first < x; });
    line_.emplace(at, t, std::move(m));
    if (held_.size() < window_) post_round();
}

void JoinLine::give_back(Ticket t) {
    if (held_.erase(t)) post_round();
}

void JoinLine::on_connected() {
    int64_t now = hooks_.now_ns();
    for (auto &h : held_) h.second = now;
    post_round();
    arm_bound();
}

// Turns are handed on from the loop's next round, not from inside the
// member that ends its own: that member is in the middle of a change of
// state, and the next one's join sends requests of its own. One round at a
// time, however many turns end before it runs.
void JoinLine::post_round() {
    if (round_posted_ || line_.empty()) return;
    round_posted_ = true;
    hooks_.post([this] { give_turns(); });
}

void JoinLine::give_turns() {
    round_posted_ = false;
    // Not while disconnected: nobody could create with a turn, and handing
    // it on would only empty the line (on_connected moves it again).
    if (!hooks_.connected()) return;
    int64_t now = hooks_.now_ns();
    for (size_t i = 0; i < 100000 && held_.size() < window_ && !line_.empty(); ++i) {
        Ticket t = line_.front().first;
        auto m = line_.front().second.lock();
        line_.pop_front();
        if (!m || held_.count(t)) continue;
        held_.emplace(t, now);
        if (!m->on_join_turn(t)) held_.erase(t);
    }
    arm_bound();
    if (held_.size() < window_) post_round();
}

// One timer at a time, for the oldest turn held.
void JoinLine::arm_bound() {
    if (bound_armed_ || held_.empty() || !hooks_.connected()) return;
    int64_t oldest = INT64_MAX;
    for (const auto &h : held_) oldest = std::min(oldest, h.second);
    bound_armed_ = true;
    hooks_.at(oldest + hooks_.bound_ns(), [this] {
        bound_armed_ = false;
        take_back_overdue();
    });
}

void JoinLine::take_back_overdue() {
    if (!hooks_.connected()) return;  // on_connected restarts every turn's bound
    int64_t since = hooks_.now_ns() - hooks_.bound_ns();
    for (auto it = held_.begin(); it != held_.end();)
        it = it->second <= since ? held_.erase(it) : std::next(it);
    post_round();
    arm_bound();
}

}  // namespace zkelect
