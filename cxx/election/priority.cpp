#include "priority.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "client.h"
#include "election_shared.h"
#include "names.h"
#include "transfer_marker.h"

namespace zkelect {

using State = CandidacyState;

void Priority::arm() {
    if (host_.client().settings().priority <= 0 || host_.node().empty() ||
        node_.get() == host_.node())
        return;
    node_.mut() = host_.node();
    schedule();
}

void Priority::schedule() {
    std::string node = host_.node();
    int64_t at = boottime_ns() + int64_t(host_.client().settings().priority_holddown_ms) * kNsPerMs;
    host_.client().at(at, while_alive(host_.life(), [this, node] {
        if (host_.node() == node && node_.get() == node) check();
    }));
}

void Priority::check() {
    if (host_.leading()) return;  // our own node leads: nothing left to ask
    schedule();                   // the next look, one hold-down on
    if (host_.state() != State::kFollowing && host_.state() != State::kHeir) return;
    host_.shared().stats.update([](ElectionCounts &st) { st.requests += 2; });
    std::string node = host_.node();
    host_.client().list(host_.shared().path,
                        while_alive(host_.life(), [this, node](const Listing &l) {
                            if (host_.node() == node) on_listing(l);
                        }),
                        true);
}

void Priority::on_listing(const Listing &l) {
    if (l.rc != ZOK || l.order.empty() || host_.leading()) return;
    if (host_.state() != State::kFollowing && host_.state() != State::kHeir) return;
    const std::string &node = host_.node();
    auto me = l.position.find(node);
    if (me == l.position.end() || me->second == 0) return;
    size_t at = me->second;
    int mine = node_priority(node);
    if (mine <= node_priority(l.order[0].name)) return;
    for (size_t i = 0; i < l.order.size(); ++i) {
        int p = node_priority(l.order[i].name);
        if (p > mine || (p == mine && i < at)) return;  // another one asks
    }
    for (size_t j = 0; j < at; ++j)
        if (!steps_back(l.order[j].name)) {
            // Said once per blocking node, not each hold-down: no loop.
            host_.on_warning(
                "priority:" + l.order[j].name,
                "priority " + std::to_string(mine) + " above the leader's, but " +
                    (j == 0 ? std::string("the leader ") : std::string("a candidate ahead ")) +
                    l.order[j].name +
                    " cannot step back (Curator's LeaderLatch or libzkelect before 1.2): "
                    "not asking for the lead while it is there");
            return;
        }
    ask(l.order[0].name);
}

// The request line, unless a transfer of this leader is under way (its
// marker, or a request already there): written only over the version read.
void Priority::ask(const std::string &leader) {
    int timeout = std::min(kRequestTimeoutMaxMs, std::max(1000, host_.client().effective_timeout_ms()));
    std::string node = host_.node();
    auto read = [this, node, leader, timeout](Reply &&r) {
        if (host_.node() != node || r.rc != ZOK || host_.leading()) return;
        if (names_transfer_from(r.data, leader)) return;
        if (auto q = parse_transfer_request(r.data); q && q->leader == leader) return;
        host_.zk().set(host_.shared().path,
                       transfer_request_text(leader, timeout, host_.shared().id), r.stat.version,
                       ReplyFn([](Reply &&) {}));
    };
    host_.zk().get(host_.shared().path, false,
                   host_.client().on_loop(while_alive(host_.life(), std::move(read))));
}

}  // namespace zkelect
