// A client's line of candidacies waiting to create their nodes (issue 35;
// docs/design.md, "The join line"). At most `window` hold a turn at once:
// E elections joining together would otherwise hold every request and
// reply of the burst at its peak, and the resident set keeps that peak.
//
// The order is first asked, first served: a candidacy's place is its
// ticket, taken by its volunteer and kept until it resigns, however long
// it waits (for its old node's delete, for a session). A turn is held from
// the create until the first place in line, only while connected to be
// given, and for at most `bound_ns()` of connected time: a holder stuck
// longer (a refused request retried, a recovery waiting) goes on without
// it, and the next in line gets it.
//
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

namespace zkelect {

class Member;

class JoinLine {
public:
    using Ticket = uint64_t;
    struct Hooks {
        std::function<void(std::function<void()>)> post;        // run on the loop's next round
        std::function<void(int64_t, std::function<void()>)> at;  // run at CLOCK_BOOTTIME ns
        std::function<bool()> connected;
        std::function<int64_t()> bound_ns;  // longest a turn is held (connected)
        std::function<int64_t()> now_ns;
    };
    JoinLine(size_t window, Hooks hooks) : window_(window), hooks_(std::move(hooks)) {}

    // A new place, behind every one taken before.
    Ticket ticket() { return ++last_; }
    // True: t holds a turn (already, or now: one is free, the client is
    // connected and nobody waiting asked before t). False: t must wait().
    bool take(Ticket t);
    // t waits at its place: in line (once per call; the caller keeps track)
    // and, if it held a turn, gives it back.
    void wait(Ticket t, std::weak_ptr<Member> m);
    // t's turn, if it holds one, goes to the next in line. Its place in line,
    // if any, is dropped lazily: Member::on_join_turn says no to a ticket it
    // no longer waits with.
    void give_back(Ticket t);
    bool holds(Ticket t) const { return held_.count(t) != 0; }
    // A new connection: the turns held restart their bound, and the line
    // moves again.
    void on_connected();

    size_t holding() const { return held_.size(); }
    size_t waiting() const { return line_.size(); }  // stale places included

private:
    void post_round();
    void give_turns();
    void arm_bound();
    void take_back_overdue();

    size_t window_;
    Hooks hooks_;
    Ticket last_ = 0;
    // Sorted by ticket: places are nearly always taken at the back; a place
    // kept (a holder that lost its session, a volunteer behind its resign)
    // goes back where its ticket says.
    std::deque<std::pair<Ticket, std::weak_ptr<Member>>> line_;
    std::unordered_map<Ticket, int64_t> held_;  // ticket -> since (boottime ns)
    bool round_posted_ = false;
    bool bound_armed_ = false;
};

}  // namespace zkelect
