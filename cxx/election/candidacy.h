// One candidacy: the election recipe of docs/semantics.md ("The recipe")
// as a state machine with named states, run only on its client's loop
// thread (docs/design.md, "The recipe", says which file does which part).
//
//   Idle ──volunteer──▶ AwaitingSession ──connected──▶ Creating
//   Creating ──created──▶ Listing ──lowest──▶ Claiming ──write acked──▶ Leading
//                         Listing ──not lowest──▶ Following | Heir
//   Creating ──connection lost──▶ Recovering ──reconnected, listed──▶ Listing (adopted)
//   Following ──predecessor gone──▶ Listing
//   Following | Heir ──every T, an exists read finds a neighbour gone──▶ as if its watch fired
//   Following ──predecessor's predecessor gone, it was first──▶ Heir (no round trip)
//   Following ──predecessor's predecessor gone, it was not first──▶ Following (the next
//               node of the last listing watched instead, or listed again once they run out)
//   Following ──predecessor gone──▶ Following | Heir (moved up in the last listing, no
//               listing; Listing once that listing's nodes ahead run out)
//   Heir ──predecessor gone, lease valid──▶ Leading      (no round trip)
//   Leading ──lease ran out──▶ Claiming ──write acked──▶ Leading
//   any ──resign──▶ Resigning ──nodes gone──▶ Idle
//   Leading ──transfer: target found, marker written──▶ Transferring
//   Transferring ──target heir (ack), target gone, or deadline──▶ Creating (at the back)
//   Transferring ──the same, transfer.drain.ms > 0──▶ Draining ──release or bound──▶ Creating
//   Heir ──marker: the leader hands over to a candidate behind us──▶ Creating (stepped back)
//   Leading ──a request from outside in P's data names our node──▶ as transfer
//
// Transferring is a leader's state: it leads on (lease, keepalives) until
// it hands over; docs/semantics.md, "Transferring leadership". Draining is
// a deposed leader's that keeps its node for its holder to stop its work
// (docs/semantics.md, "Draining before the hand-over"). Both are driven by
// the candidacy's Transfers (transfer.h), a preferred leader's request
// for the lead by its Priority (priority.h), and Claiming, Leading and the
// lease's bookkeeping while a term lasts by its Term (term.h): objects of
// their own that see the candidacy only through CandidacyHost
// (candidacy_host.h).
//
// Nodes this candidacy may have in ZooKeeper but no longer wants (a resigned
// node, a create whose reply was lost, a late create after a resign) are kept
// in garbage_ until their deletion is confirmed or the session ends.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "candidacy_host.h"
#include "client.h"
#include "election_shared.h"
#include "lazy.h"
#include "neighbours.h"
#include "priority.h"
#include "term.h"
#include "transfer.h"

namespace zkelect {

class Candidacy : public Member,
                  private CandidacyHost,
                  public std::enable_shared_from_this<Candidacy> {
public:
    Candidacy(Client &client, std::shared_ptr<ElectionShared> shared);
    void attach(uint64_t member_id) { member_id_ = member_id; }

    // The user's commands, numbered by Election in the order they were
    // issued, carried out here in that order.
    // reserved: node slots (Client::candidate_node_bytes each) the user's
    // thread reserved for this command; the candidacy holds them from now.
    void volunteer(uint64_t command, int reserved = 0);
    void resign(uint64_t command);
    // Leave for good: like resign, then done() once no node is left (or the
    // session ended). The member removes itself from the client.
    void close(uint64_t command, std::function<void()> done);
    // A client's shutdown (cxx/session/client_shutdown.h): close() with what
    // a resign says, DEPOSED (reason RESIGNED) for a leader and RESIGNED
    // once the node is gone, for a candidacy that was taking part.
    // node_release.cpp.
    void close_as_resign(uint64_t command, std::function<void()> done);
    // Hand leadership to the candidate of this path whose id is target
    // (docs/semantics.md, "Transferring leadership"). done runs once, on the
    // loop, with the outcome: kOk, kENotLeader, kENoCandidate (nothing
    // changed), kEState (a transfer is already running), kEAuth, kEZk,
    // kEConnLoss (nothing changed), kETimedOut or kETargetLost (leadership
    // went on as after a resign).
    void transfer(const std::string &target, int64_t deadline, std::function<void(int)> done) {
        transfers_.start(target, deadline, std::move(done));
    }
    // The holder has drained (zkelect_release): the node of drain number
    // seq goes now.
    void release(uint64_t seq) { transfers_.release(seq); }
    // cxx/election/fenced_write.cpp: ops behind a check of our node, as one multi,
    // while this candidacy leads its term; done(kENotLeader, {}) at once,
    // nothing sent, otherwise; else done(kOk, ZooKeeper's reply), on
    // ZooKeeper's thread (done only forwards it).
    void fenced_write(std::vector<ZkOp> ops, std::function<void(int, Reply &&)> done);

    void on_connected(bool new_session) override;
    void on_suspended() override;
    void on_expired() override;
    void on_auth_failed() override;
    void on_node_event(int type, const std::string &path) override;
    void on_lease(int64_t until, int64_t rtt_us) override;
    void on_node_refused(const std::string &path) override;
    // Also CandidacyHost's: a WARNING once per `about`.
    void on_warning(const std::string &about, const std::string &message) override;
    bool on_join_turn(uint64_t ticket) override;

    using State = CandidacyState;
    static const char *state_name(State s);

private:
    using Handler = void (Candidacy::*)(uint64_t gen, Reply &&r);
    using ListingHandler = void (Candidacy::*)(uint64_t gen, const Listing &l);
    ReplyFn route(Handler h);
    ListingFn route(ListingHandler h);
    // CandidacyHost: what Transfers and Priority see of us.
    State state() const override { return state_; }
    bool leading() const override { return term_.leading(); }
    bool wanted() const override { return want_; }
    const std::string &node() const override { return node_; }
    const std::string &pred() const override { return neighbours_.pred(); }
    uint64_t gen() const override { return gen_; }
    uint64_t member_id() const override { return member_id_; }
    std::weak_ptr<void> life() override { return weak_from_this(); }
    ElectionShared &shared() override { return *shared_; }
    Client &client() override { return client_; }
    void announce(EventType t, Reason r, std::string message, std::string node,
                  std::string id, int64_t token) override {
        emit(t, r, std::move(message), std::move(node), std::move(id), token);
    }
    void become_heir() override;
    void list_again() override { list(/*still_following=*/true); }
    void failover_from(int64_t at) override { term_.failover_from(at); }

    // Every change of state goes through here: it also keeps the session's
    // lease informed whether this candidacy needs keepalives.
    void set_state(State s) override;
    void update_hold();
    // The session, for a request this candidacy sends (counted in its stats).
    ZkPort &zk() override;
    std::string node_path(const std::string &name) const { return shared_->path + "/" + name; }

    void begin_enrollment();
    void send_create();
    void make_parents();
    void list(bool still_following = false);
    void claim();
    void depose(Reason why) override { term_.end(why); }
    void node_lost(Reason why);
    // cxx/election/node_release.cpp: the one way a node of this candidacy (known,
    // or a create whose outcome is unknown) is let go, and its deletion.
    void release_nodes();
    void collect_garbage();
    void garbage_refused(int rc, const std::string &name);
    void say_garbage_refused(int rc, const std::string &name);
    bool lost_creates_left(int64_t t, int64_t *pause);
    void finish_resign();
    // The node slots this candidacy holds of the client's
    // zk.session.nodes.max.bytes follow what it may have in ZooKeeper: one
    // while it wants to be a candidate, one per node still to delete,
    // none once closed. Called after every change of those.
    void account();
    void emit(EventType t, Reason r = Reason::kNone, std::string message = {},
              std::string node = {}, std::string id = {}, int64_t token = 0, int error = 0,
              int zk_rc = 0);
    void fail(int code, int zk_rc, const std::string &message);
    void stop_resigning();
    void lift_fence_if_latest();
    void forget(const std::string &name);
    void check_margin();
    void warn_near_wrap(const std::vector<Candidate> &order);
    int64_t timeout_ns() const { return int64_t(client_.effective_timeout_ms()) * kNsPerMs; }
    int64_t margin_ns() const override;

    void on_create(uint64_t gen, Reply &&r);
    void created(const Reply &r);
    void create_failed(int rc);
    void on_parent(uint64_t gen, Reply &&r);
    void on_children(uint64_t gen, const Listing &l);
    void on_recover_children(uint64_t gen, const Listing &l);
    void take_place(uint64_t gen, const Listing &r);
    void on_adopt(uint64_t gen, Reply &&r);
    void recover();
    void refused(int rc, const std::string &what, std::function<void()> again) override;
    void watch_own();
    void on_own(Reply &&r);
    void claim_or_list() override;
    // Listing number `asked` of collect_garbage's.
    void on_garbage_children(uint64_t asked, const Listing &l);

    // Leave our place and join again at the back, keeping the candidacy.
    void requeue() override;

    Client &client_;
    std::shared_ptr<ElectionShared> shared_;
    uint64_t member_id_ = 0;

    State state_ = State::kIdle;
    bool want_ = false;    // the user wants this candidacy in the election
    uint64_t applied_ = 0; // the last user command carried out
    bool margin_reported_ = false;
    bool wrap_warned_ = false;
    Lazy<std::set<std::string>> warned_about_;  // Member::on_warning's, said once each
    bool closing_ = false;
    bool resigned_on_close_ = false;  // close_as_resign: RESIGNED when the node is gone
    std::function<void()> close_done_;
    uint64_t gen_ = 0;     // bumped whenever in-flight replies become stale

    std::string uuid_;     // of the current enrollment
    std::string node_;     // our node's name, once known
    int64_t create_sent_ = 0;   // CLOCK_BOOTTIME: the create earns a lease too
    int64_t create_until_ = 0;  // what the create earns the session's lease
    // Our place in the client's join line (JoinLine), taken by the
    // volunteer; in_join_line_: it waits there with this ticket.
    uint64_t ticket_ = 0;
    bool in_join_line_ = false;
    // A read of this connection armed the watch on our own node (node_) and
    // it has not fired; own_seq_ tells that read's reply from older ones.
    bool own_armed_ = false;
    uint64_t own_seq_ = 0;
    // A new node's own-node read waits for the listing sent with its create
    // (on_create says why).
    bool own_after_listing_ = false;
    int parent_attempts_ = 0;
    // Node slots held of the client's reservation (account()).
    int64_t slots_ = 0;
    // uuids of garbage_ that an ended session holds (on_expired): they are
    // in that session's closing transaction, not the next one's, so they
    // take no slot beside the node the candidacy makes again.
    Lazy<std::set<std::string>> ended_session_;
    // CLOCK_BOOTTIME by which the servers surely expired the ended session
    // whose lost create READ keeps us from finding (garbage_refused); 0:
    // not yet refused since that session ended.
    int64_t ended_gone_at_ = 0;
    int64_t ended_timeout_ = 0;  // that session's T (a reconnect may agree a shorter one)

    bool holding_ = false;  // counted among the session lease's holders

    // uuid -> node name ("" while unknown), nodes to delete. Keyed by the
    // uuid the name carries, so one node is never listed twice.
    Lazy<std::map<std::string, std::string>> garbage_;
    // Names whose delete is on the wire, so a second pass does not resend it.
    Lazy<std::set<std::string>> deleting_;
    // Names whose delete ZooKeeper refused (ZNOAUTH), said once in an ERROR.
    Lazy<std::set<std::string>> refused_;
    // uuids whose create outcome we never learnt: a node carrying one is
    // ours to delete whenever a listing shows it (this session only).
    Lazy<std::set<std::string>> abandoned_;
    // Garbage listings asked for so far, and for each unknown entry how
    // many had been asked for when it was made: only a listing asked for
    // later was sent after its create, so only such a listing can show
    // that the create did not land (the simulation's seed 4317: a listing
    // sent before the create said "gone", and RESIGNED came while the
    // create was still to land).
    uint64_t garbage_listings_ = 0;
    Lazy<std::map<std::string, uint64_t>> unknown_since_;
    // A create of uuid_ was sent and its outcome is not known (no reply, or
    // connection trouble): what release_nodes() must not forget.
    bool create_out_ = false;
    // Refusals in a row of a throttled server (ZTHROTTLEDOP): the pause
    // before asking again doubles, and the candidacy's own requests give up
    // with ERROR after kMaxThrottled; garbage is never given up.
    static constexpr int kMaxThrottled = 8;
    int throttled_ = 0;
    int64_t throttled_at_ = 0;  // CLOCK_BOOTTIME of the last one
    int garbage_throttled_ = 0;
    int64_t garbage_retry_at_ = 0;  // the pending garbage retry's time; 0: none

    // Declared last: they hold a reference to this candidacy as their host.
    Neighbours neighbours_{*this};
    Transfers transfers_{*this};
    Priority priority_{*this};
    Term term_{*this, neighbours_, transfers_};
};

}  // namespace zkelect
