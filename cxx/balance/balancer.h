// A client's part in its balanced group (balance.group; docs/design.md,
// "Balanced groups"). The group is a path in ZooKeeper; each client of it
// keeps one ephemeral member node there (zkelect-member-<seq>, made with
// the group's parents, again in each new session) whose data says how
// many of its candidacies lead and stand in line:
//   zkelect-balance 1 <leading> <in line>
// It watches the group's children and every member's data, and after each
// change of those or of its own book (session/leaderships.h) computes the
// group's plan (plan.h). When it leads more than its share it hands the
// surplus, one transfer each (Transfers::give: to the candidate whose node
// the taker's session holds), oldest term first, to the members the plan
// names, at most balance.moves.max at once. A taker does nothing: its
// candidates only follow the transfer's marker as any heir does.
//
// It owns the member node, the snapshot of the group and the moves in
// flight; the candidacies stay their own (a move is a transfer, refused
// when it cannot run). A Member of its client: runs on the loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "client.h"
#include "plan.h"

namespace zkelect::balance {

// The member node's data: "zkelect-balance 1 <leading> <in line>", each a
// count up to kCountMax; false for anything else (written by anyone with
// WRITE on the group), longer than kMemberDataMax among them.
constexpr const char *kMemberPrefix = "zkelect-member-";
constexpr size_t kMemberDataMax = 64;
bool member_name(const std::string &name);
bool parse_member_data(const std::string &data, int64_t *leading, int64_t *in_line);
std::string member_data(int64_t leading, int64_t in_line);

class Balancer final : public zkelect::Member, public std::enable_shared_from_this<Balancer> {
public:
    // Made and added to client on its loop; for a client whose
    // settings().balance_group is set. Any thread.
    static std::shared_ptr<Balancer> open(Client &client);
    explicit Balancer(Client &client);

    // A client's shutdown began: no move starts from now on. Any thread.
    void stop() { stopped_.store(true); }

    void on_connected(bool new_session) override;
    void on_suspended() override {}
    void on_expired() override;
    void on_auth_failed() override {}
    void on_node_event(int type, const std::string &path) override;

private:
    // The most members a snapshot holds (the rest are not read): a plan
    // stays cheap whatever the group's path holds.
    static constexpr size_t kMembersMax = 4096;

    void start();
    ReplyFn route(void (Balancer::*h)(uint64_t gen, Reply &&r));
    // Joining: the group's path (with its parents), then our node.
    void make_path(const std::string &path, int depth);
    void rejoin();
    void on_path_made(uint64_t gen, Reply &&r);
    void create_node();
    void on_node_made(uint64_t gen, Reply &&r);
    // The snapshot: the children, then each member's data.
    void list();
    void on_children(uint64_t gen, Reply &&r);
    void read(const std::string &name);
    // Our own data, at most one write in flight, coalesced.
    void publish_soon();
    void publish();
    // fn on the loop at CLOCK_BOOTTIME `at`, while this balancer lives; and
    // after delay_ns, once however often asked meanwhile (armed: its flag).
    void later(int64_t at, void (Balancer::*fn)());
    void once(bool Balancer::*armed, int64_t delay_ns, void (Balancer::*fn)());
    // The plan and the moves.
    void plan_soon(int64_t delay_ns);
    void replan() { plan_soon(0); }
    void replan_and_publish() {
        plan_soon(0);
        publish_soon();
    }
    void plan();
    bool start_move(int64_t owner);
    void on_moved(uint64_t member, int64_t owner, int code);
    // What we lead, for the plan and our node: the book's count, plus each
    // move handed over but not yet answered. The giver counts a leadership
    // until the taker is first; the taker counts it from its ELECTED; both
    // for a moment errs towards larger shares (a move fewer, made up by the
    // next plan), never towards a total short of what is led, which makes
    // everyone's share too small and moves leaderships for nothing.
    int64_t own_leading() const;
    // What our node says we lead: own_leading() and the moves we handed
    // over that their takers do not say yet (Seen::given). Until a taker
    // says it, the leadership is still ours to the rest of the group, so
    // they never see it on neither side (a total short of what is led, and
    // a taker that looks short after its giver's surplus looks spent: both
    // made a third member give on top, and moves went back).
    int64_t published_leading() const;

    Client &client_;
    const std::string group_;
    std::atomic<bool> stopped_{false};
    uint64_t id_ = 0;   // ours as the client's member
    uint64_t gen_ = 0;  // bumped with each session: older replies are dropped
    std::string node_;  // our member node's name; empty: none yet
    bool joining_ = false;

    struct Seen {
        int64_t owner = 0;
        int64_t leading = 0, in_line = 0;
        bool valid = false;  // its data was read and parsed
        int32_t version = -1;  // its data's, as last read
        // Moves of ours that reached it, counted as its own until it says
        // so itself: until a read of its data newer than `after` (the
        // version we knew when the move was answered: an older or the
        // same version cannot count it), or for T/2 at most (kGivenNs at least).
        struct Given {
            int64_t until;
            int32_t after;
        };
        std::vector<Given> given;
    };
    std::map<std::string, Seen> members_;  // by node name
    // Given entries still counted, of one member.
    static int64_t given_now(const Seen &s, int64_t now);

    bool publishing_ = false, publish_armed_ = false;
    std::string published_;

    bool plan_armed_ = false;
    // The most leaderships the group was seen to hold within kGivenNs, and
    // when: what a plan shares while moves are in transit (plan.h).
    int64_t high_total_ = 0, high_total_at_ = 0, high_timer_at_ = 0;
    int in_flight_ = 0;
    std::unordered_map<int64_t, int> in_flight_to_;  // by owner
    std::unordered_set<uint64_t> moving_;             // candidacies (member ids) being given
    // (candidacy, owner) pairs a transfer refused (the taker has no
    // candidate there, or one of lower priority): not asked again until
    // the group changes.
    std::set<std::pair<uint64_t, int64_t>> refused_;
};

}  // namespace zkelect::balance
