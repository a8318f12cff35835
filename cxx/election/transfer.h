// A candidacy's part in transfers of leadership (docs/semantics.md,
// "Transferring leadership" and "Draining before the hand-over"):
//
// - as leader, the transfer it runs: find the target's node, write the
//   marker (transfer_marker.h), hand over when the target says it is next
//   (or is gone, or the deadline passes), drain if asked, and read who
//   leads once its node is gone;
// - as leader, a transfer asked from outside: a request line in P's data
//   naming our live node, read through a data watch on P;
// - as heir, the marker naming its predecessor: say "ready" when it is
//   the target, step back when the target is behind it, "gone" when the
//   target left.
//
// It owns the transfer under way, the marker as last read, and the drain;
// everything else it reads and changes through its CandidacyHost. Only the
// heir and the leader watch P's data. Runs on the client's loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "candidacy_host.h"
#include "lazy.h"
#include "zk_port.h"

namespace zkelect {

struct Listing;

class Transfers {
public:
    explicit Transfers(CandidacyHost &host) : host_(host) {}
    Transfers(const Transfers &) = delete;
    Transfers &operator=(const Transfers &) = delete;

    // Candidacy::transfer's contract (candidacy.h); request_version >= 0:
    // asked from outside, by the request line of that version of P's data.
    void start(const std::string &target, int64_t deadline, std::function<void(int)> done,
               int32_t request_version = -1, int64_t owner = 0);
    // A balanced group's move (cxx/balance/): start() to the candidate whose
    // node the session `owner` holds, whatever its id; kENotSup, nothing
    // changed, when its priority is below ours (the priority would only
    // take the lead back). At the deadline the move is given up (kETimedOut)
    // and this candidacy leads on, rather than hand over as start() does.
    void give(int64_t owner, int64_t deadline, std::function<void(int)> done);
    // A transfer has started and is not yet handed over.
    bool pending() const { return run_.get().done && !run_.get().handed; }

    // What the candidacy tells it.
    // Elected, or became heir: read (and watch) P's data.
    void watch_marker();
    // The data watch on P fired.
    void on_path_event();
    // A new connection or session (after the candidacy's gen_ moved on):
    // what the old one lost is asked again.
    void on_connected();
    // The term ended: a transfer not yet handed over cannot go on.
    void on_deposed();
    // kDraining's keepalive acknowledgement: the drain's deadline moves on.
    void on_lease_draining(int64_t until);
    // The holder has drained (zkelect_release): the node of drain number seq goes.
    void release(uint64_t seq);
    // Every way out of kDraining (the candidacy's set_state calls it).
    void leave_drain();

private:
    void on_listing(uint64_t gen, const Listing &l);
    void find_target(uint64_t gen, std::shared_ptr<std::vector<std::string>> after, size_t from);
    void on_targets(uint64_t gen, const std::vector<std::string> &after, size_t from,
                    const std::vector<Reply> &replies);
    void write_marker(const std::string &to);
    void on_marker_written(Reply &&r);
    void on_leader_marker(uint64_t gen, Reply &&r);
    void read_leader_marker();
    void hand_over(int code);
    // The hand-over's last step: who is first once our node is gone.
    void close_hand_over();
    void end(int code);
    bool begin_drain(int64_t lease_until);
    void on_heir_marker(uint64_t gen, Reply &&r);
    void act_on_marker();
    void act_on_request();
    void step_back(const std::string &to, const std::string &id);
    // A reply handler of ours, called on the loop while the candidacy
    // lives, with the gen it was sent in.
    ReplyFn route(void (Transfers::*h)(uint64_t gen, Reply &&r));
    void set_data(const std::string &data, int32_t version);
    // Our marker's clear at a transfer's end, sent again on the next
    // connection (as long as the marker stands) when it was lost with one.
    void clear_marker(const std::string &text, const std::string &to);
    struct Leftover;
    void send_clear(const Leftover &clear, int32_t version);

    CandidacyHost &host_;

    // The transfer this leader runs (done set while it runs); made by a
    // transfer's start, dropped at its end: most candidacies never run one.
    struct Run {
        std::string target;  // the id asked for
        std::string to;      // its node, once found
        std::function<void(int)> done;
        int64_t deadline = 0;  // CLOCK_BOOTTIME
        int result = 0;        // once handed over: what done will say
        bool handed = false;
        bool written = false;  // the request may be in P's data
        // The marker's write was answered with connection trouble: it may
        // stand or not. The read on the next connection tells.
        bool unsure = false;
        bool closing = false;  // the hand-over's last listing is asked for
        // Asked from outside: the version of P's data that held the
        // request (our marker replaces it only if unchanged), and the
        // outcome is written back as a result line. -1: our user asked.
        int32_t request_version = -1;
        // give(): the target is the node of this session, not an id.
        int64_t owner = 0;
        uint64_t seq = 0;  // tells this transfer's timer from older ones
    };
    Boxed<Run> run_;
    uint64_t run_seq_ = 0;
    // The drain under way (kDraining): its number (shared().drain_seq while
    // releasable) and its bound (CLOCK_BOOTTIME; drain.h).
    uint64_t drain_seq_ = 0;
    int64_t drain_bound_ = 0;
    // A read of this connection armed the watch on the election path's data
    // (the marker) and it has not fired; what that read found.
    bool marker_armed_ = false;
    int32_t marker_version_ = 0;
    std::string marker_data_;
    // What transfers leave behind; made at their first use.
    struct Marks {
        // The leader's node we stepped back for: once per leader term at
        // most, whatever the marker says later (a hostile or stale marker
        // cannot make a candidacy go round).
        std::string stepped_for;
        // The request line (leader's node, data version) last taken up: one
        // transfer per request, however often the watch shows it again.
        std::string request_node;
        int32_t request_version = -1;
    };
    Boxed<Marks> marks_;
    // A clear of our marker lost with its connection (clear_marker): its
    // text and the target its marker names. Empty `to`: none.
    struct Leftover {
        std::string text, to;
    };
    Boxed<Leftover> leftover_;
};

}  // namespace zkelect
