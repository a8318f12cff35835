// A follower's neighbours (docs/design.md, "Following"): the predecessor it
// watches (no herd: one watch on the node just ahead), the node before that
// one, watched too so that a follower learns early that it moved up (and an
// heir knows it is next without a round trip), the nodes further ahead of
// its last listing it moves up through without listing the path again
// (docs/semantics.md, "Moving up without a listing"), and the session's
// re-check of watched nodes that an operator may have made unreadable.
//
// It owns those names and whether each one's watch is armed; what a
// neighbour's deletion means (claim, list, become heir) is the candidacy's,
// reached through its CandidacyHost. Runs on the client's loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "candidacy_host.h"
#include "names.h"
#include "neighbour_check.h"
#include "nodes_ahead.h"
#include "zk_port.h"

namespace zkelect {

class Neighbours {
public:
    explicit Neighbours(CandidacyHost &host) : host_(host) {}
    Neighbours(const Neighbours &) = delete;
    Neighbours &operator=(const Neighbours &) = delete;

    // A listing put our node at order[me], me >= 1: who is ahead of it.
    // Returns whether we are heir (second in line).
    bool place(const std::vector<Candidate> &order, size_t me);
    // Then, once the candidacy follows (or is heir): read and watch them,
    // and enlist in the session's re-check.
    void watch(const std::vector<Candidate> &order, size_t me);
    // First in line, or no place at all: nobody to watch.
    void forget();
    void clear_ahead() { ahead_.clear(); }
    // A new connection or session: watches armed before may be gone.
    void on_connected() { pred_armed_ = gpred_armed_ = false; }
    // A notification about path; false when it is none of our neighbours'.
    bool on_node_event(int type, const std::string &path);
    // Our predecessor is gone and we follow a long line: move up through
    // our last listing, if it reaches far enough (false: it does not).
    bool move_up_if_known();
    bool heir() const { return heir_; }
    const std::string &pred() const { return pred_; }
    // A new term: a FOLLOWING is said again for the next predecessor.
    void new_term() { pred_announced_ = false; }

private:
    using Handler = void (Neighbours::*)(uint64_t gen, Reply &&r);
    void watch_queue(const std::string &pred, const std::string &gpred, bool gpred_after_pred = false);
    void read_watched(std::string Neighbours::*name, bool Neighbours::*armed, Handler h);
    void on_neighbour(std::string Neighbours::*name, bool Neighbours::*armed, Handler h, Reply &&r);
    void on_pred(uint64_t gen, Reply &&r);
    void on_gpred(uint64_t gen, Reply &&r);
    void gpred_gone();
    void make_heir();
    void next_ahead();
    void move_up();
    void pred_deleted();
    void gpred_deleted();
    void keep_rechecking();
    bool recheck_targets(std::vector<NeighbourCheck::Target> &out);
    bool following() const;
    std::string path_of(const std::string &name) const;

    CandidacyHost &host_;

    std::string pred_;   // the predecessor we watch
    bool heir_ = false;  // pred_ was the lowest in our last listing
    // The node before pred_ in our last listing, watched too: its deletion
    // tells a follower that it moved up, before its own turn comes. When it
    // was the lowest (gpred_first_), pred_ is now lowest and we are heir.
    std::string gpred_;
    bool gpred_first_ = false;
    // The nodes before gpred_ in our last listing, nearest first, at most
    // kAhead of them (NodesAhead keeps them compact): a follower
    // whose neighbours are deleted moves up through them without listing
    // the path (move_up). gpred_index_: gpred_'s place in that listing.
    // Only in a long queue (kWalkFrom candidates or more at the last
    // listing): in a short one a listing costs no more than a read, and
    // nodes gone ahead of us would each cost a read where one listing
    // does (a rotation's new heirs). The simulator moves up in every
    // queue, so that its short queues try this path too.
    static constexpr size_t kAhead = 32;
#ifdef ZKELECT_SIM
    static constexpr size_t kWalkFrom = 0;
#else
    static constexpr size_t kWalkFrom = 256;
#endif
    bool walk_ = false;
    NodesAhead ahead_;
    size_t gpred_index_ = 0;
    // A read of this session armed a watch on pred_ (gpred_) that has not
    // fired: a listing that finds the same neighbours sends no read again.
    bool pred_armed_ = false;
    bool gpred_armed_ = false;
    // gpred_'s read waits for pred_'s reply (watch_queue).
    bool gpred_waits_ = false;
    // Enlisted in the session's re-check of watched nodes (NeighbourCheck):
    // once per candidacy, whatever the listings, until it stops following.
    bool rechecking_ = false;
    bool pred_announced_ = false;  // FOLLOWING said for pred_ (once per predecessor)
};

}  // namespace zkelect
