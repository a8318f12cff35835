// The plan of a balanced group (docs/design.md, "Balanced groups"): from
// one snapshot of the group's members, each member's share of the
// leaderships they hold, and which member gives how many to which. Pure:
// every member computes the same plan from the same snapshot, so they
// agree without a coordinator; one that saw an older snapshot gives at
// most its own surplus, and the next plan corrects what that moved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zkelect::balance {

// A member as its node says (its data is untrusted: the balancer parses
// and bounds it before it gets here).
struct GroupMember {
    std::string node;     // its member node's name: the ties' order
    int64_t owner = 0;    // the session holding it
    int64_t leading = 0;  // its candidacies that lead
    int64_t in_line = 0;  // its candidacies in line: the most it can lead
};

struct Give {
    int64_t owner = 0;  // to this member
    int64_t count = 0;  // this many leaderships
};

// Each member's share, in the order given: the leaderships they hold
// spread evenly, each share floor or ceil of the mean, but never above
// what the member can lead (in_line: the rest goes to the others); the
// ceil shares go to those that lead most now (then by node name), so that
// as few leaderships as possible move.
// total: the leaderships to share when more than the members say (a
// snapshot taken while moves are under way misses those in transit:
// shares of a total too small would move leaderships for nothing).
std::vector<int64_t> shares(const std::vector<GroupMember> &members, int64_t total = 0);

// What the member `self` (an owner) gives: each member above its share
// gives its surplus, in node-name order, to the members below theirs, in
// node-name order, filling each deficit before the next. Empty when self
// is not a member or at or below its share.
std::vector<Give> gives_of(const std::vector<GroupMember> &members, int64_t self,
                           int64_t total = 0);

}  // namespace zkelect::balance
