#include "transfer.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "client.h"
#include "drain.h"
#include "election_shared.h"
#include "names.h"
#include "transfer_marker.h"

namespace zkelect {

using State = CandidacyState;

namespace {
void ignore(Reply &&) {}

int code_of(int rc) {
    return connection_trouble(rc) ? kEConnLoss : rc == ZNOAUTH ? kEAuth : kEZk;
}
}  // namespace

ReplyFn Transfers::route(void (Transfers::*h)(uint64_t gen, Reply &&r)) {
    uint64_t gen = host_.gen();
    return host_.client().on_loop(
        while_alive(host_.life(), [this, h, gen](Reply &&r) { (this->*h)(gen, std::move(r)); }));
}

void Transfers::set_data(const std::string &data, int32_t version) {
    host_.zk().set(host_.shared().path, data, version, ReplyFn(ignore));
}

// --- the leader's side -------------------------------------------------------

void Transfers::start(const std::string &target, int64_t deadline, std::function<void(int)> done,
                      int32_t request_version, int64_t owner) {
    if (run_.get().done && run_.get().owner != 0 && owner == 0) {
        // A balanced group's move is in the way of a transfer asked for
        // (by the user, from outside, by a priority): the one asked for
        // wins. Not handed over yet, the move ends as refused; handed
        // over, we no longer lead.
        if (run_.get().handed) {
            done(kENotLeader);
            return;
        }
        end(kEState);
    }
    if (host_.state() == State::kTransferring || run_.get().done) {
        done(kEState);
        return;
    }
    if (host_.state() != State::kLeading || !host_.leading() || host_.node().empty()) {
        done(kENotLeader);
        return;
    }
    Run &x = run_.mut();
    x = Run{};
    x.target = target;
    x.deadline = deadline;
    x.done = std::move(done);
    x.request_version = request_version;
    x.owner = owner;
    x.seq = ++run_seq_;
    // Synced: a candidate that joined just before the call is found.
    host_.shared().stats.update([](ElectionCounts &st) { st.requests += 2; });
    uint64_t gen = host_.gen();
    host_.client().list(host_.shared().path,
                        while_alive(host_.life(), [this, gen](const Listing &l) { on_listing(gen, l); }),
                        true);
    uint64_t seq = x.seq;
    host_.client().at(deadline, while_alive(host_.life(), [this, seq] {
        // Still looking for the target, or waiting for it to be next: the
        // leadership goes on as after a resign, whoever is next. A balanced
        // group's move is given up instead, this candidacy leading on: a
        // taker that never says ready may be dead or cut off, and first in
        // line after us.
        if (run_.get().seq != seq || !pending() || !host_.leading()) return;
        if (run_.get().owner != 0) end(kETimedOut);
        else hand_over(kETimedOut);
    }));
}

void Transfers::give(int64_t owner, int64_t deadline, std::function<void(int)> done) {
    if (owner == 0) {
        done(kEInval);
        return;
    }
    start({}, deadline, std::move(done), -1, owner);
}

void Transfers::on_listing(uint64_t gen, const Listing &l) {
    if (!pending()) return;
    if (gen != host_.gen() || !host_.leading()) {
        end(kENotLeader);
        return;
    }
    if (l.rc != ZOK) {
        end(code_of(l.rc));
        return;
    }
    auto me = l.position.find(host_.node());
    if (me == l.position.end() || me->second != 0) {
        end(kENotLeader);
        return;
    }
    auto after = std::make_shared<std::vector<std::string>>();
    for (size_t i = 1; i < l.order.size(); ++i) after->push_back(l.order[i].name);
    find_target(gen, after, 0);
}

// Reads the candidates behind us, eight at a time in one burst, in line
// order, until one carries the id: what it costs grows with the target's
// place, not with the length of the line.
void Transfers::find_target(uint64_t gen, std::shared_ptr<std::vector<std::string>> after,
                            size_t from) {
    if (from >= after->size()) {
        end(kENoCandidate);
        return;
    }
    size_t n = std::min<size_t>(8, after->size() - from);
    auto replies = std::make_shared<std::vector<Reply>>(n);
    auto left = std::make_shared<size_t>(n);
    const std::string &path = host_.shared().path;
    uint64_t seq = run_.get().seq;
    for (size_t i = 0; i < n; ++i) {
        auto got = [this, gen, seq, after, from, i, replies, left](Reply &&r) {
            (*replies)[i] = std::move(r);
            if (--*left != 0 || run_.get().seq != seq) return;
            on_targets(gen, *after, from, *replies);
            if (pending() && run_.get().to.empty() && host_.leading() && gen == host_.gen())
                find_target(gen, after, from + replies->size());
        };
        host_.zk().get(path + "/" + (*after)[from + i], false,
                       host_.client().on_loop(while_alive(host_.life(), std::move(got))));
    }
}

// One burst's replies: the target found (its node becomes `to`), or the
// transfer ended, or neither (the caller reads the next burst).
void Transfers::on_targets(uint64_t gen, const std::vector<std::string> &after, size_t from,
                           const std::vector<Reply> &replies) {
    if (!pending()) return;
    if (gen != host_.gen() || !host_.leading()) {
        end(kENotLeader);
        return;
    }
    for (size_t k = 0; k < replies.size(); ++k) {
        const Reply &x = replies[k];
        bool theirs = run_.get().owner != 0
                          ? x.has_stat && x.stat.ephemeral_owner == run_.get().owner
                          : x.data == run_.get().target;
        if (x.rc == ZOK && theirs) {
            if (run_.get().owner != 0) {
                // The marker names the target's id; a node whose data is no
                // id (or a priority below ours) is not given to.
                if (node_priority(after[from + k]) < node_priority(host_.node()) ||
                    !check_participant_id(x.data).empty()) {
                    end(kENotSup);
                    return;
                }
                run_.mut().target = x.data;
            }
            // Everyone ahead of the target must step back; one that never
            // reads the request would hold the transfer until its deadline
            // and then let whoever is next lead. Refused, nothing changed.
            for (size_t j = 0; j < from + k; ++j)
                if (!steps_back(after[j])) {
                    end(kENotSup);
                    return;
                }
            write_marker(after[from + k]);
            return;
        }
        if (connection_trouble(x.rc)) {
            end(kEConnLoss);
            return;
        }
    }
}

void Transfers::write_marker(const std::string &to) {
    Run &x = run_.mut();
    x.to = to;
    host_.set_state(State::kTransferring);
    x.written = true;
    host_.zk().set(host_.shared().path, transfer_marker_text(host_.node(), to, "asked", x.target),
                   x.request_version,
                   host_.client().on_loop(while_alive(host_.life(), [this](Reply &&r) {
                       on_marker_written(std::move(r));
                   })));
    // Behind the write (one session's requests are answered in order): the
    // watch sees every later word of the target or of the heirs.
    read_leader_marker();
}

void Transfers::read_leader_marker() {
    host_.client().watch(host_.shared().path, host_.member_id());
    host_.zk().get(host_.shared().path, true, route(&Transfers::on_leader_marker));
}

void Transfers::on_marker_written(Reply &&r) {
    if (r.rc == ZOK || !pending() || host_.state() != State::kTransferring) return;
    if (connection_trouble(r.rc)) {
        // The write may have landed, and the heirs act on it: ending here
        // would leave a marker naming our live node, a transfer nobody
        // runs (heirs stepping back for it, askers from outside waiting
        // it out). The read on the next connection (on_connected) tells.
        run_.mut().unsure = true;
        return;
    }
    // Nobody saw a request: the leader leads on as before. (Asked from
    // outside, ZBADVERSION: the asker withdrew, or P's data changed.)
    run_.mut().written = false;
    host_.set_state(State::kLeading);
    end(code_of(r.rc));
}

void Transfers::on_leader_marker(uint64_t gen, Reply &&r) {
    if (gen != host_.gen() || host_.state() != State::kTransferring || run_.get().handed) return;
    if (r.rc != ZOK) return;  // a reconnect reads it again (on_connected)
    marker_armed_ = true;
    marker_data_ = r.data;
    marker_version_ = r.stat.version;
    auto m = parse_transfer_marker(r.data);
    const bool ours = m && m->from == host_.node() && m->to == run_.get().to;
    if (run_.get().unsure) {
        if (!ours) {
            // The write lost with the connection did not land (or was
            // written over): nothing to clear, nothing changed.
            run_.mut().written = false;
            host_.set_state(State::kLeading);
            end(kEConnLoss);
            return;
        }
        run_.mut().unsure = false;  // it stands: the transfer goes on
    }
    if (!ours) return;
    if (m->state == "ready") hand_over(kOk);
    else if (m->state == "gone") hand_over(kETargetLost);
}

// Ends our term and our place in line: the lease is revoked here, before
// the delete is sent, so this candidacy answers is_leader 0 before anyone
// behind it can be elected (as for a resign). Then it joins at the back.
void Transfers::hand_over(int code) {
    run_.mut().handed = true;
    run_.mut().result = code;
    // transfer.drain.ms: the node stays until the holder has stopped its
    // work; set up before DEPOSED is said.
    bool draining = begin_drain(host_.shared().lease.value());
    host_.depose(Reason::kTransferred);
    // Clear the marker before the delete: by the time anyone is elected the
    // request is gone (a leftover would be harmless: it names our old node).
    // Asked from outside, the outcome takes its place for the asker, who
    // checks who is first itself (the code may turn from 0 to target lost).
    const Run &x = run_.get();
    set_data(x.request_version >= 0 ? transfer_result_text(host_.node(), code, x.target) : "", -1);
    if (!draining) {
        host_.requeue();
        close_hand_over();
    }
}

void Transfers::close_hand_over() {
    if (!run_.get().done) return;
    // Until answered: a listing that a new session dropped, or that the
    // connection's loss answered, is sent again by on_connected.
    run_.mut().closing = true;
    std::string to = run_.get().to;
    uint64_t seq = run_.get().seq;
    // Answered after the delete and the new create: who is first now.
    host_.shared().stats.update([](ElectionCounts &st) { st.requests += 2; });
    host_.client().list(host_.shared().path,
                        while_alive(host_.life(), [this, to, seq](const Listing &l) {
                            if (!run_.get().done || run_.get().seq != seq) return;
                            if (connection_trouble(l.rc)) return;  // on_connected asks again
                            int result = run_.get().result;
                            if (l.rc == ZOK && !l.order.empty() && l.order[0].name == to)
                                result = kOk;
                            else if (result == kOk)
                                result = kETargetLost;
                            end(result);
                        }),
                        true);
}

void Transfers::end(int code) {
    const Run &x = run_.get();
    // A request left in P's data would still name our live node: heirs
    // would step back for a transfer nobody runs any more.
    if (x.request_version >= 0 && !x.handed && !host_.node().empty()) {
        // Asked from outside, nothing changed: the outcome replaces our
        // marker, or the request itself if it is still there unchanged.
        set_data(transfer_result_text(host_.node(), code, x.target),
                 x.written ? -1 : x.request_version);
    } else if (x.written && !x.handed) {
        clear_marker("", x.to);
    }
    auto done = std::move(run_.mut().done);
    run_.reset();
    if (host_.state() == State::kTransferring) host_.set_state(State::kLeading);
    if (done) done(code);
}

void Transfers::on_deposed() {
    if (pending()) end(kENotLeader);
}

// --- the drain ---------------------------------------------------------------

// Called by hand_over() before it deposes: the DEPOSED event finds the
// drain already releasable (a holder that answers it at once with
// zkelect_release() is never refused).
bool Transfers::begin_drain(int64_t lease_until) {
    int ms = host_.client().settings().transfer_drain_ms;
    if (ms <= 0 || host_.node().empty() || !host_.wanted()) return false;
    drain_bound_ = boottime_ns() + int64_t(ms) * kNsPerMs;
    uint64_t seq = ++drain_seq_;
    host_.set_state(State::kDraining);  // keeps the session's keepalives
    host_.shared().drain.publish(drain::until(lease_until, drain_bound_));
    host_.shared().drain_seq.store(seq);
    host_.client().at(drain::delete_at(drain_bound_, host_.margin_ns()),
                      while_alive(host_.life(), [this, seq] {
                          // Not released in time: the node goes all the same.
                          if (host_.state() == State::kDraining && drain_seq_ == seq)
                              host_.requeue();
                      }));
    return true;
}

void Transfers::on_lease_draining(int64_t until) {
    // The node stands as long as the session does: no longer than the
    // drain's bound, though (drain.h).
    host_.shared().drain.extend(drain::until(until, drain_bound_), boottime_ns());
}

void Transfers::release(uint64_t seq) {
    if (host_.state() != State::kDraining || seq != drain_seq_) return;
    host_.requeue();  // the node is deleted, a new one made at the back
}

// Every way out of kDraining: the release, the bound, or anything that
// ends the node otherwise (a resign, a close, an expiry, a delete by
// hand, an error). The node no longer stands for the holder, and the
// transfer's outcome is read once the delete and the new create are sent.
void Transfers::leave_drain() {
    host_.shared().drain_seq.store(0);
    host_.shared().drain.revoke();
    ++drain_seq_;
    host_.client().post(while_alive(host_.life(), [this] { close_hand_over(); }));
}

// --- the marker, as the candidacy's watch on P sees it ----------------------

void Transfers::on_path_event() {
    marker_armed_ = false;
    if (host_.state() == State::kTransferring && !run_.get().handed) read_leader_marker();
    else if (host_.state() == State::kHeir || host_.state() == State::kLeading) watch_marker();
}

void Transfers::clear_marker(const std::string &text, const std::string &to) {
    leftover_.reset();
    send_clear({text, to}, -1);
}

// P's data set to the clear's text (at `version`; -1: any); lost with the
// connection, kept for the next one.
void Transfers::send_clear(const Leftover &clear, int32_t version) {
    host_.zk().set(host_.shared().path, clear.text, version,
                   host_.client().on_loop(while_alive(host_.life(), [this, clear](Reply &&r) {
                       if (connection_trouble(r.rc)) leftover_.mut() = clear;
                   })));
}

void Transfers::on_connected() {
    marker_armed_ = false;
    if (!leftover_.get().to.empty()) {
        // Cleared only while it is still our marker: a newer line (our next
        // transfer's, an asker's) stays.
        auto left = leftover_.get();
        leftover_.reset();
        auto again = [this, left](Reply &&r) {
            auto m = r.rc == ZOK ? parse_transfer_marker(r.data) : std::nullopt;
            if (connection_trouble(r.rc)) leftover_.mut() = left;
            else if (m && m->from == host_.node() && m->to == left.to && !pending())
                send_clear(left, r.stat.version);
        };
        host_.zk().get(host_.shared().path, false,
                       host_.client().on_loop(while_alive(host_.life(), std::move(again))));
    }
    if (run_.get().done && run_.get().closing) close_hand_over();  // the last listing was lost
    else if (host_.state() == State::kTransferring && !run_.get().handed) read_leader_marker();
    else if (host_.state() == State::kLeading) watch_marker();  // a request written meanwhile
}

// The heir's and the leader's: read (and watch) P's data, once per arming.
void Transfers::watch_marker() {
    if (marker_armed_) {
        // Nothing was written since we read it (the watch would have fired).
        act_on_marker();
        return;
    }
    host_.client().watch(host_.shared().path, host_.member_id());
    host_.zk().get(host_.shared().path, true, route(&Transfers::on_heir_marker));
}

void Transfers::on_heir_marker(uint64_t gen, Reply &&r) {
    if (gen != host_.gen() || r.rc != ZOK) return;
    marker_armed_ = true;
    marker_data_ = std::move(r.data);
    marker_version_ = r.stat.version;
    act_on_marker();
}

// --- the heir's side ---------------------------------------------------------
//
// Only the heir (second in line) acts on a marker, and only on one naming
// its own predecessor, the leader's live node: a marker left by a leader
// that is gone names a node nobody follows any more.

void Transfers::act_on_marker() {
    if (host_.state() == State::kLeading) {
        act_on_request();
        return;
    }
    if (host_.state() != State::kHeir) return;
    auto m = parse_transfer_marker(marker_data_);
    if (!m || m->state != "asked" || m->from != host_.pred()) return;
    int32_t version = marker_version_;
    std::string from = m->from, to = m->to, id = m->id;
    if (to == host_.node()) {
        // We are next: say so; the leader hands over and we claim on its
        // node's deletion as heir, without a round trip.
        set_data(transfer_marker_text(from, to, "ready", id), version);
        return;
    }
    if (marks_.get().stepped_for == from) {
        // Back in second place behind the same leader: the target did not
        // get ahead of us, so it left. Tell the leader.
        set_data(transfer_marker_text(from, to, "gone", id), version);
        return;
    }
    uint64_t g = host_.gen();
    auto seen = [this, g, from, to, id, version](Reply &&x) {
        if (g != host_.gen() || host_.state() != State::kHeir || host_.pred() != from) return;
        if (x.rc == ZOK) step_back(to, id);
        else if (x.rc == ZNONODE) set_data(transfer_marker_text(from, to, "gone", id), version);
    };
    host_.zk().exists(host_.shared().path + "/" + to, false,
                      host_.client().on_loop(while_alive(host_.life(), std::move(seen))));
}

void Transfers::step_back(const std::string &to, const std::string &id) {
    marks_.mut().stepped_for = host_.pred();
    host_.announce(EventType::kSteppedBack, Reason::kTransferred,
               "stepped back: leadership is being transferred to " + id + " (" + to + ")", to, id, 0);
    host_.requeue();
}

// --- a transfer asked from outside -------------------------------------------
//
// Acted on only when the line is exactly a request naming our live node,
// once per version of P's data: what a writer of P can do is what our own
// user can (ask for a transfer to a candidate), and a request for a node
// that is gone is inert.

void Transfers::act_on_request() {
    const std::string &node = host_.node();
    if (host_.state() != State::kLeading || !host_.leading() || run_.get().done || node.empty())
        return;
    auto q = parse_transfer_request(marker_data_);
    if (!q || q->leader != node) return;
    if (marks_.get().request_node == node && marks_.get().request_version == marker_version_)
        return;
    marks_.mut().request_node = node;
    marks_.mut().request_version = marker_version_;
    if (q->id == host_.shared().id) {
        // Already leads: nothing to move; the asker's answer is 0.
        set_data(transfer_result_text(node, kOk, q->id), marker_version_);
        return;
    }
    start(q->id, boottime_ns() + int64_t(q->number) * kNsPerMs, [](int) {}, marker_version_);
}

}  // namespace zkelect
