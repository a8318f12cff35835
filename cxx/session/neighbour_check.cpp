#include "neighbour_check.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <utility>

#include "clock.h"

namespace zkelect {

void NeighbourCheck::enlist(uint64_t member, Source source) {
    sources_[member] = std::move(source);
    schedule();
}

// The cadence is one session timeout T: a follower already waits up to T
// when a leader's process dies (its session must expire), so this rare
// case costs no more than an ordinary crash. A member that enlists between
// two ticks is checked at the next, sooner than T: never later. A shorter
// cadence would buy a faster failover only in this rare case.
void NeighbourCheck::schedule() {
    if (scheduled_) return;
    scheduled_ = true;
    client_.at(boottime_ns() + int64_t(client_.effective_timeout_ms()) * kNsPerMs, [this] {
        scheduled_ = false;
        tick();
    });
}

// At most kMaxPerTick nodes a tick, the members taken in turn from where
// the last tick stopped: a session that watches more (many thousands of
// elections) checks each of them within ceil(n / kMaxPerTick) x T, at a
// cost per T that stays flat however many elections it follows.
void NeighbourCheck::tick() {
    auto batch = std::make_shared<std::vector<Target>>();
    auto it = sources_.lower_bound(next_);
    for (size_t n = sources_.size(); n > 0 && batch->size() < kMaxPerTick; --n) {
        if (it == sources_.end()) it = sources_.begin();
        it = it->second(*batch) ? std::next(it) : sources_.erase(it);
    }
    next_ = it == sources_.end() ? 0 : it->first;
    if (!sources_.empty()) schedule();
    // Disconnected: the reconnect's listing reads the neighbours anyway.
    if (batch->empty() || !client_.connected()) return;
    // Forget nodes no longer watched; ask the unreadable ones alone.
    std::set<std::string> still;
    std::vector<Target> rest;
    rest.reserve(batch->size());
    for (auto &t : *batch) {
        if (unreadable_.count(t.path)) {
            still.insert(t.path);
            ask_alone(t);
        } else {
            rest.push_back(std::move(t));
        }
    }
    unreadable_.swap(still);
    batch->swap(rest);
    for (size_t from = 0; from < batch->size(); from += kMaxChecks) send(batch, from);
}

// One node: an exists read (no watch: the herd rule holds), not a write.
void NeighbourCheck::ask_alone(const Target &t) {
    client_.session().exists(t.path, false, client_.on_loop([gone = t.gone](Reply &&r) {
        if (r.rc == ZNONODE) gone();
    }));
}

// The checks of (*batch)[from, from + kMaxChecks).
void NeighbourCheck::send(Batch batch, size_t from) {
    size_t end = std::min(batch->size(), from + kMaxChecks);
    if (end - from == 1) {
        ask_alone((*batch)[from]);
        return;
    }
    std::vector<std::string> paths;
    paths.reserve(end - from);
    for (size_t i = from; i < end; ++i) paths.push_back((*batch)[i].path);
    client_.session().check(paths, client_.on_loop([this, batch, from, end](Reply &&r) {
        // Connection trouble, a throttled server: the next tick asks again.
        if ((r.rc != ZNONODE && r.rc != ZNOAUTH) || r.results.size() != end - from) return;
        size_t i = 0;
        while (i < r.results.size() && r.results[i] != ZNONODE && r.results[i] != ZNOAUTH) ++i;
        if (i == r.results.size()) return;
        const Target &t = (*batch)[from + i];
        if (r.results[i] == ZNONODE) {
            t.gone();
        } else {
            unreadable_.insert(t.path);
            ask_alone(t);
        }
        // The checks after the failed one were not made: make them now
        // (each round is shorter, so this ends).
        if (from + i + 1 < end && client_.connected()) {
            auto tail = std::make_shared<std::vector<Target>>(batch->begin() + from + i + 1,
                                                              batch->begin() + end);
            send(tail, 0);
        }
    }));
}

}  // namespace zkelect
