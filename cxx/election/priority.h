// Preferred leaders (zk.priority; docs/semantics.md, "Preferred leaders"):
// a candidacy whose priority is above the leader's, once it has followed
// for a hold-down, asks the leader for a transfer to itself as any outside
// asker would (the request line in P's data, base/names.h), so the leader
// needs nothing of its own for priorities. At most one request per
// hold-down; only the first of the highest priority in line asks.
//
// It owns the hold-down's timer chain (one per node of ours); it reads the
// candidacy through its CandidacyHost. Runs on the client's loop thread.
#pragma once

#include <string>

#include "candidacy_host.h"
#include "lazy.h"

namespace zkelect {

struct Listing;

class Priority {
public:
    explicit Priority(CandidacyHost &host) : host_(host) {}
    Priority(const Priority &) = delete;
    Priority &operator=(const Priority &) = delete;

    // Our node follows: the hold-down starts, once per node.
    void arm();

private:
    void schedule();
    void check();
    void on_listing(const Listing &l);
    void ask(const std::string &leader);

    CandidacyHost &host_;
    // The node whose hold-down timer runs (one chain per node); made at the
    // first use: most candidacies have no priority.
    Boxed<std::string> node_;
};

}  // namespace zkelect
