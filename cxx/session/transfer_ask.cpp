#include "transfer_ask.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "errors.h"
#include "transfer_marker.h"

namespace zkelect {

namespace {
struct OneReply {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Reply r;
};

// One request, waited for until deadline: false when no answer came.
bool call(std::chrono::steady_clock::time_point deadline,
          const std::function<void(ReplyFn)> &send, Reply *out) {
    auto st = std::make_shared<OneReply>();
    send([st](Reply &&r) {
        std::lock_guard<std::mutex> lock(st->mu);
        st->r = std::move(r);
        st->done = true;
        st->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(st->mu);
    if (!st->cv.wait_until(lock, deadline, [&] { return st->done; })) return false;
    *out = std::move(st->r);
    return true;
}

const char *transfer_outcome(int code) {
    switch (code) {
        case kOk: return "the target leads";
        case kETimedOut: return "the target was not next in line in time; the leader handed over to whoever was next";
        case kETargetLost: return "the target left the election; the leader handed over to whoever was next";
        case kENoCandidate: return "the leader found no candidate with that id behind it; nothing was changed";
        case kENotSup: return "a candidate ahead of the target cannot step back; nothing was changed";
        case kENotLeader: return "the leader stopped leading during the transfer";
        case kEAuth: return "the leader may not write the election path; nothing was changed";
        default: return "the leader could not run the transfer; nothing was changed";
    }
}
}  // namespace

TransferAsk::TransferAsk(TransferAskHost &host, std::string path, std::string target,
                         int timeout_ms)
    : host_(host), path_(std::move(path)), target_(std::move(target)), timeout_ms_(timeout_ms) {}

// The waiter leaves the loop's members when the call returns.
TransferAsk::~TransferAsk() {
    if (waiter_) host_.post([h = &host_, w = waiter_] { h->remove_member(w->id); });
}

int TransferAsk::run(std::string *why) {
    if (host_.on_loop_thread()) {
        *why = "called on the client's loop thread (from an event callback)";
        return kEDeadlk;
    }
    first_ = host_.session_snapshot();
    if (!first_) {
        *why = "the client is closing";
        return kEClosed;
    }
    t_ms_ = host_.effective_timeout_ms();
    t_ = std::chrono::milliseconds(t_ms_);
    // Every wait below shares one deadline, the bound docs/api.md gives:
    // timeout_ms plus three session timeouts from the call. Each step waits
    // at most T, and never past it.
    final_end_ = Clock::now() + std::chrono::milliseconds(timeout_ms_) + 3 * t_;
    // A transfer of the leader already under way (its own, another
    // asker's, a balanced group's move) is one at a time: waited out
    // within timeout_ms, then the request goes to whoever leads. Answering
    // ESTATE at once would leave the caller to retry blindly, against a
    // group that may start its next move on that leader first.
    //
    // A leader whose node goes before it took the request up (withdrawn,
    // nothing changed) is followed the same way: whoever leads next is
    // asked. Most often that leader was handing over already: it clears
    // its marker just before it deletes its node, and a listing in between
    // still names it.
    const auto busy_end = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    for (int round = 0;; ++round) {
        int rc = find_target(why);
        if (rc == kOk && leader_.empty()) return rc;
        if (rc == kOk) rc = write_request(why);
        if (rc == kOk) rc = await_outcome(why);
        if (rc == kOk) break;
        if (rc != kEState && rc != kENotLeader) return rc;
        if (round >= kBusyRounds) {
            *why += " (" + std::to_string(kBusyRounds) +
                    " transfers or leaders followed one another there while this one waited)";
            return rc;
        }
        if (rc == kENotLeader && Clock::now() >= busy_end) {
            *why += " (the leaders that followed were asked for " + std::to_string(timeout_ms_) +
                    " ms, the timeout asked)";
            return rc;
        }
        if (rc == kEState && !await_other_transfer(busy_end)) {
            *why += " (waited for it " + std::to_string(timeout_ms_) + " ms, the timeout asked)";
            return rc;
        }
    }
    if (!result_) return without_outcome(why);
    // Ours to clear, if nobody wrote since (a new leader's own transfer).
    Reply r;
    clear(result_version_, &r);
    int code = result_->number;
    *why = transfer_outcome(code);
    if (code != kOk) return code;
    return confirm(why);
}

// Who leads, and where the target stands (synced, with every id). Leaves
// leader_ empty when there is nothing to ask (the target leads already).
int TransferAsk::find_target(std::string *why) {
    leader_.clear();
    if (int rc = host_.participants(path_, step_ms(), &line_, why); rc != kOk) return rc;
    if (line_.empty()) {
        *why = "no candidate under " + path_;
        return kENoLeader;
    }
    if (line_[0].id == target_) {
        *why = "the target leads already; nothing was asked";
        return kOk;
    }
    size_t at = 0;
    for (size_t i = 1; i < line_.size() && !at; ++i)
        if (line_[i].id == target_) at = i;
    if (!at) {
        // While the leader's transfer runs, the candidates ahead of its
        // target step back: each node is deleted and a new one made at the
        // back, and a listing in between has neither. Waited out as any
        // transfer under way, then looked for again.
        leader_ = line_[0].node;
        Reply r;
        if (call(step(), [&](ReplyFn f) { zk()->get(path_, false, std::move(f)); }, &r) &&
            r.rc == ZOK && busy(r.data)) {
            *why = "a transfer of " + path_ + "'s leader is under way and no candidate has the id " +
                   target_ + " meanwhile; nothing was changed";
            return kEState;
        }
        leader_.clear();
        *why = "no candidate of " + path_ + " has the id " + target_ + "; nothing was changed";
        return kENoCandidate;
    }
    // The leader must read requests and everyone ahead of the target step
    // back: Curator's LeaderLatch and libzkelect before 1.2 do neither, and
    // the request would only wait out the timeout.
    for (size_t j = 0; j < at; ++j)
        if (!steps_back(line_[j].node)) {
            *why = (j == 0 ? "the leader " : "candidate " + line_[j].id + " ") + "(" +
                   line_[j].node +
                   ") does not take part in transfers (Curator's LeaderLatch, or libzkelect "
                   "before 1.2); nothing was changed";
            return kENotSup;
        }
    request_ = transfer_request_text(line_[0].node, timeout_ms_, target_);
    if (!parse_transfer_request(request_)) {
        *why = "the request would exceed the 1200 bytes a leader reads (target id too long)";
        return kEInval;
    }
    leader_ = line_[0].node;
    return kOk;
}

int TransferAsk::write_request(std::string *why) {
    Reply r;
    if (!call(step(), [&](ReplyFn f) { zk()->get(path_, false, std::move(f)); }, &r))
        return no_answer(why);
    if (r.rc == ZNONODE) {
        *why = "no candidate under " + path_;
        return kENoLeader;
    }
    if (r.rc != ZOK) {
        *why = "reading " + path_ + ": " + zerror(r.rc);
        return err_from_zk(r.rc);
    }
    // A transfer of this leader already in P's data (its own marker, or
    // another asker's request): one at a time.
    if (busy(r.data)) {
        *why = "a transfer of " + path_ + "'s leader is under way; nothing was changed";
        return kEState;
    }
    ensure_waiter();
    // Version-checked: whatever was in P's data a moment ago is not lost
    // unseen (another asker's request, a leader's marker).
    const int32_t version = r.stat.version;
    if (!call(step(), [&](ReplyFn f) { zk()->set(path_, request_, version, std::move(f)); }, &r))
        return no_answer(why);
    if (r.rc == ZBADVERSION) {
        *why = "the data of " + path_ + " changed while asking (another transfer?); nothing was changed";
        return kEState;
    }
    if (r.rc != ZOK) {
        *why = "writing the request in " + path_ + ": " + zerror(r.rc) + "; nothing was changed";
        return err_from_zk(r.rc);
    }
    mine_ = r.stat.version;
    taken_ = false;
    return kOk;
}

bool TransferAsk::busy(const std::string &data) const {
    if (names_transfer_from(data, leader_)) return true;
    auto q = parse_transfer_request(data);
    return q && q->leader == leader_;
}

// The answer comes through watches, which the loop hands to members only:
// a member of this call's own, gone when the call returns.
void TransferAsk::ensure_waiter() {
    if (waiter_) return;
    waiter_ = std::make_shared<ChangeWaiter>();
    host_.post([h = &host_, w = waiter_] { w->id = h->add_member(w); });
}

// Until the transfer under way on leader_ is over (P's data no longer
// names one, or the leader's node is gone) or `end`: false then. Every
// read leaves a watch, so a change wakes the wait.
bool TransferAsk::await_other_transfer(Clock::time_point end) {
    ensure_waiter();
    end = std::min(end, final_end_);
    for (int round = 0; round < 100000 && Clock::now() < end; ++round) {
        const uint64_t seen = waiter_->seen();
        Reply r;
        if (watched(path_, true, std::min(end, Clock::now() + t_), &r) && r.rc == ZOK && !busy(r.data))
            return true;
        Reply x;
        if (watched(path_ + "/" + leader_, false, std::min(end, Clock::now() + t_), &x) &&
            x.rc == ZNONODE)
            return true;
        waiter_->wait_past(seen, std::min(end, Clock::now() + t_));
    }
    return false;
}

// The leader answers in P's data. Read it whenever it changes, whenever
// the leader's node goes (a leader that went before reading the request
// never will: withdraw it then), and at least every T in case a watch went
// with a connection. Leaves result_ unset when no answer came in time.
int TransferAsk::await_outcome(std::string *why) {
    // Its wait leaves the last T of the bound for a withdrawal, or for the
    // clear and the confirmation after an outcome.
    const auto end = std::min(Clock::now() + std::chrono::milliseconds(timeout_ms_) + t_,
                              final_end_ - t_);
    for (int round = 0; round < 100000 && !result_; ++round) {
        const uint64_t seen = waiter_->seen();
        Reply r;
        if (watched(path_, true, std::min(end, Clock::now() + t_), &r) && r.rc == ZOK) {
            if (r.stat.version != mine_) taken_ = true;
            auto res = parse_transfer_result(r.data);
            if (res && res->leader == leader_ && res->id == target_) {
                result_ = res;
                result_version_ = r.stat.version;
                break;
            }
        }
        Reply x;
        if (!taken_ &&
            watched(path_ + "/" + leader_, false, std::min(end, Clock::now() + t_), &x) &&
            x.rc == ZNONODE && clear(mine_, &x) && x.rc == ZOK) {
            *why = "the leader stopped leading before it took the request up; withdrawn, "
                   "nothing was changed";
            return kENotLeader;
        }
        if (Clock::now() >= end) break;
        waiter_->wait_past(seen, std::min(end, Clock::now() + t_));
    }
    return kOk;
}

int TransferAsk::without_outcome(std::string *why) {
    // Withdrawn only if untouched: a leader that took it up runs on.
    Reply r;
    if (!taken_ && clear(mine_, &r) && r.rc == ZOK) {
        *why = "the leader did not take up the request within " +
               std::to_string(timeout_ms_ + t_ms_) +
               " ms (not connected, or a libzkelect without transfers asked from outside); "
               "withdrawn, nothing was changed";
        return kETimedOut;
    }
    *why = "no outcome from the leader within " + std::to_string(timeout_ms_ + t_ms_) + " ms";
    if (host_.participants(path_, step_ms(), &line_, why) == kOk && !line_.empty() &&
        line_[0].id == target_) {
        *why = "the target leads";
        return kOk;
    }
    return kETimedOut;
}

// The leader wrote the outcome before deleting its node: first is the
// target once that delete lands, or someone else if the target left. The
// path's children are watched before each listing, so a change after it
// wakes the next.
int TransferAsk::confirm(std::string *why) {
    const auto confirm_end = std::min(Clock::now() + 2 * t_, final_end_);
    for (int round = 0; round < 100000 && Clock::now() < confirm_end; ++round) {
        const uint64_t seen = waiter_->seen();
        host_.post([h = &host_, w = waiter_, path = path_] {
            h->watch(path, w->id);
            h->session().get_children(path, true, [](Reply &&) {});
        });
        std::string ignored;
        if (host_.participants(path_, step_ms(), &line_, &ignored) == kOk) {
            if (!line_.empty() && line_[0].id == target_) return kOk;
            if (line_.empty() || line_[0].node != leader_) {
                *why = "the leader handed over, but the target was not first in line (it left)";
                return kETargetLost;
            }
        }
        waiter_->wait_past(seen, confirm_end);
    }
    *why = "the leader said it handed over, but its node was still first after " +
           std::to_string(2 * t_ms_) + " ms";
    return kETimedOut;
}

// A read of `node` that leaves a watch on it for the waiter (its data, or
// its existence); on the loop, so that the watch is the waiter's before the
// reply can come.
bool TransferAsk::watched(const std::string &node, bool data, Clock::time_point deadline,
                          Reply *out) {
    return call(deadline,
                [&](ReplyFn f) {
                    host_.post([h = &host_, w = waiter_, node, data, f = std::move(f)]() mutable {
                        h->watch(node, w->id);
                        if (data)
                            h->session().get(node, true, std::move(f));
                        else
                            h->session().exists(node, true, std::move(f));
                    });
                },
                out);
}

// The path's data emptied, if still at version (the request, or the outcome).
bool TransferAsk::clear(int32_t version, Reply *out) {
    return call(step(), [&](ReplyFn f) { zk()->set(path_, "", version, std::move(f)); }, out);
}

// Each request goes to the session of the moment: the client replaces an
// expired one while this waits.
std::shared_ptr<ZkPort> TransferAsk::zk() {
    auto s = host_.session_snapshot();
    return s ? s : first_;
}

TransferAsk::Clock::time_point TransferAsk::step() const {
    return std::min(final_end_, Clock::now() + t_);
}

int TransferAsk::step_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(step() - Clock::now());
    return int(std::max<int64_t>(left.count(), 1));
}

int TransferAsk::no_answer(std::string *why) const {
    *why = "ZooKeeper did not answer within " + std::to_string(t_ms_) + " ms";
    return host_.connected() ? kETimedOut : kEConnLoss;
}

}  // namespace zkelect
