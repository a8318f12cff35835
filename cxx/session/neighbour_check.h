// The session's re-check of the nodes its followers watch: a batched
// request per 1,000 of them a session timeout, at most two however many
// elections wait (beyond 2,000 nodes, they are taken in turn).
//
// ZooKeeper notifies a watch only to a session that may read the node, so
// a follower whose predecessor (or the node before it) lost READ for its
// identity would never hear of that node's deletion (docs/limits.md, "ACLs
// an operator changes under a running election"). Each waiting candidacy
// used to read each of its watched nodes once a session timeout T: one or
// two reads per election per T, 200 requests a second at rest for a
// session following 1,000 elections at T = 10 s. Here one timer per
// session asks every enlisted candidacy for the nodes it watches now and
// checks them in `multi`s of version checks (up to kMaxChecks nodes each,
// at most kMaxPerTick nodes a tick, taken in turn), so the cost at rest is
// flat in the number of elections; one node alone is asked with an
// `exists` read, as before.
//
// A check answers "no node" whether or not we may read the node (ZooKeeper
// looks the node up before its ACL): a node found gone counts as its
// deletion heard. A multi stops at its first failing check: the nodes
// after it are checked again at once, in a multi of their own; a node the
// check may not read (NOAUTH: it is there, READ was taken away) is asked
// alone with `exists` from then on, which answers "no node" once it is gone.
//
// Loop thread only, like everything the Client drives.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "session_lease.h"

namespace zkelect {

class NeighbourCheck {
public:
    struct Target {
        std::string path;            // full path of a watched node
        std::function<void()> gone;  // it was found gone (the member re-checks it is still its)
    };
    // Adds the member's watched nodes to `out`; false once the member wants
    // no more checks (it is dropped, and enlists again when it follows).
    using Source = std::function<bool(std::vector<Target> &out)>;

    explicit NeighbourCheck(LeaseHost &client) : client_(client) {}
    NeighbourCheck(const NeighbourCheck &) = delete;
    NeighbourCheck &operator=(const NeighbourCheck &) = delete;

    // From now on, once every session timeout, the member's nodes are checked.
    void enlist(uint64_t member, Source source);

    static constexpr size_t kMaxChecks = 1000;
    // Nodes checked a tick, at most (plus the last member's others): two
    // multis of kMaxChecks, what issue 50 asks of a follower at rest.
    static constexpr size_t kMaxPerTick = 2 * kMaxChecks;

private:
    using Batch = std::shared_ptr<std::vector<Target>>;
    void schedule();
    void tick();
    void send(Batch batch, size_t from);
    void ask_alone(const Target &t);

    LeaseHost &client_;
    std::map<uint64_t, Source> sources_;
    uint64_t next_ = 0;  // the member the next tick begins with
    std::set<std::string> unreadable_;  // checked alone, with exists
    bool scheduled_ = false;
};

}  // namespace zkelect
