// One ZooKeeper session and the loop thread that runs every candidacy and
// observer made on it. All election state changes happen on that one thread:
// ZooKeeper's completion thread only copies replies and watch events into the
// loop's mailbox, and user threads only post commands. That serialises every
// transition, so a stale reply can be recognised and dropped instead of
// racing a newer one.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "conf.h"
#include "errors.h"
#include "handshake_cap.h"
#include "join_line.h"
#include "leaderships.h"
#include "clock.h"
#include "lease.h"
#include "member.h"
#include "names.h"
#include "session_closer.h"
#include "neighbour_check.h"
#include "session_lease.h"
#include "tick_probe.h"
#include "transfer_ask.h"
#include "zk_session.h"

namespace zkelect {

struct GuardedSasl;  // crash_guard.h

// One getChildren of an election path, shared by every member of the client
// that asked for it, with the candidates already put in order once.
struct Listing {
    int rc = 0;                          // ZooKeeper's code
    std::vector<std::string> children;   // as listed
    std::vector<Candidate> order;        // candidate nodes, earliest first
    std::unordered_map<std::string, size_t> position;  // name -> index in order
};
using ListingFn = std::function<void(const Listing &)>;

// A node read for a user's query (Client::read_children).
struct NodeRead {
    std::string name;  // without the path
    std::string data;
    NodeStat stat;
};

// Privately a LeaseHost and a TransferAskHost: only its own SessionLease
// and TransferAsk see it as one.
class Client final : private LeaseHost, private TransferAskHost {
public:
    // Starts the session (does not wait) and the loop thread. Throws
    // std::runtime_error with a message on failure. Sessions are
    // libzookeeper's (ZkSession) unless make_port gives another ZkPort.
    explicit Client(const Settings &settings, PortFactory make_port = nullptr);
    // Stops the loop, closes the session (ZooKeeper removes our nodes).
    ~Client();
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    // --- any thread ---
    void post(std::function<void()> fn) override;
    int await_connected(int timeout_ms);
    // Why the servers refused this client's credentials (ZKELECT_EAUTH's
    // message), empty while they have not.
    std::string auth_failure() const;
    // What a reply's rc says, for a query's error message: a refusal of
    // authentication is named by its cause, as ZKELECT_EAUTH's message is
    // (a query's reply can carry it before the session event has set it).
    std::string reply_error(int zk_rc) const;
    bool connected() const override { return connected_.load(std::memory_order_acquire); }
    int negotiated_timeout_ms() const { return timeout_ms_.load(std::memory_order_acquire); }
    // The session timeout in force: negotiated once connected, else the
    // configured one. The one place that rule lives.
    int effective_timeout_ms() const override {
        int t = negotiated_timeout_ms();
        return t > 0 ? t : settings_.session_timeout_ms;
    }
    // Any thread. The lease margin in force for the negotiated timeout (the
    // configured lease.margin.ms, or the rule lease::margin_ns derives); 0
    // before the first session. Tools read it rather than derive it again.
    int lease_margin_ms() const {
        int t = negotiated_timeout_ms();
        if (t <= 0) return 0;
        return static_cast<int>(lease::margin_ns(int64_t(t) * kNsPerMs, settings_.lease_margin_ms) /
                                kNsPerMs);
    }
    // Commands posted but not yet run (tests drive interleavings with it).
    size_t mailbox_size() const {
        std::lock_guard<std::mutex> lock(mu_);
        return mailbox_.size();
    }
    int64_t session_id() const { return session_id_.load(std::memory_order_acquire); }
    uint64_t counter(int c) const { return counters_[c].load(std::memory_order_relaxed); }
    // The tickTime the lease reckons with (the connected server's, read
    // with conf, or the largest this client read before); 0 when none is
    // known and T >= 2 x tickTime is assumed.
    int64_t tick_time_ns() const { return tick_time_ns_.load(std::memory_order_relaxed); }
    void bump(Counter c) override { counters_[c].fetch_add(1, std::memory_order_relaxed); }
    const Settings &settings() const { return settings_; }
    // Any thread: the connect string in use, zk.hosts until the ensemble's
    // config named other servers (zk.hosts.follow).
    std::string hosts() const {
        std::lock_guard<std::mutex> lock(hosts_mu_);
        return hosts_in_use_;
    }
    // Any thread: the current session is in the process's crash guard, which
    // runs (crash_guard.h).
    bool guarded() const;
    // Any thread: once this process is dead, the guard closes this client's
    // session only after process pid has ended too (0: no longer).
    // zkelect_client_crash_guard_wait() says what each code means.
    int crash_guard_wait(int pid);
    size_t member_count() const { return member_count_.load(); }
    // Any thread: the loop has stopped for good (a shutdown, or the
    // destructor began): nothing posted runs any more, nothing is waited for.
    bool stopped() const {
        std::lock_guard<std::mutex> lock(mu_);
        return stopping_;
    }

    // Candidate nodes and the session's closing transaction
    // (zk.session.nodes.max.bytes). ZooKeeper ends a session with one
    // transaction listing all of its ephemeral nodes; a candidacy reserves
    // what its node may add to it, candidate_node_bytes(path), from the
    // volunteer until its node is gone (Candidacy accounts on the loop).
    // The longest full path a candidate node of path can have, as the
    // servers see it (the chroot too), plus 4 for the string's length.
    int64_t candidate_node_bytes(const std::string &path) const {
        return chroot_bytes_ + int64_t(path.size()) + 1 + int64_t(kLongestNodeName) + 4;
    }
    // Any thread: reserve n bytes; false, reserving nothing, when that
    // would bring the total above the bound (*total then holds what it
    // would have been). The bound 0 reserves always.
    bool reserve_node_bytes(int64_t n, int64_t *total = nullptr) {
        int64_t bound = settings_.session_nodes_max_bytes;
        int64_t cur = node_bytes_.load(std::memory_order_relaxed);
        do {
            if (total) *total = cur + n;
            if (bound > 0 && cur + n > bound) return false;
        } while (!node_bytes_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
        return true;
    }
    // Loop thread: what a candidacy must hold whatever the bound (a
    // transfer's step back: the old node and the new one for a round trip).
    void force_node_bytes(int64_t n) { node_bytes_.fetch_add(n, std::memory_order_relaxed); }
    void release_node_bytes(int64_t n) { node_bytes_.fetch_sub(n, std::memory_order_relaxed); }
    // Any thread: the bytes reserved now.
    int64_t node_bytes() const { return node_bytes_.load(std::memory_order_relaxed); }
    bool on_loop_thread() const override { return std::this_thread::get_id() == loop_id_; }
    // Candidates of path in queue order, asked of ZooKeeper now. Blocks up
    // to timeout_ms. Returns kOk or an error code with *why.
    int participants(const std::string &path, int timeout_ms, std::vector<ParticipantInfo> *out,
                     std::string *why) override;
    // The children of path that keep accepts, in name order, each with its
    // data and stat, asked of ZooKeeper now as participants are (synced
    // first; no path: none). At most max are read (the first by name), the
    // rest counted in *unread; a node's data longer than max_data is kept
    // empty, and at most 64 reads are in flight, so the query's memory is
    // bounded whatever was written there. Blocks up to timeout_ms. Returns
    // kOk or an error code with *why.
    int read_children(const std::string &path, int timeout_ms,
                      const std::function<bool(const std::string &)> &keep, size_t max,
                      size_t max_data, std::vector<NodeRead> *out, size_t *unread,
                      std::string *why);
    // Ask the leader of path to hand leadership to the candidate whose id
    // is target (docs/semantics.md, "A transfer asked from outside"), and
    // wait for the outcome: at most timeout_ms plus two session timeouts.
    // Any thread but the loop's (kEDeadlk). Returns the transfer's code
    // with *why, or kENoLeader, kENoCandidate, kENotSup, kEState, kEAuth,
    // kEConnLoss, kEZk with nothing changed.
    int request_transfer(const std::string &path, const std::string &target, int timeout_ms,
                         std::string *why);

    // --- loop thread ---
    uint64_t add_member(std::shared_ptr<Member> m) override;
    void remove_member(uint64_t id) override;
    ZkPort &session() override { return *session_; }
    // The next node event on path goes to member id (watches are one-shot).
    void watch(const std::string &path, uint64_t member_id) override;
    // A read that answered "no node" set no watch on path: forget the
    // interest it registered (a follower moving up can read several such).
    void unwatch(const std::string &path, uint64_t member_id);
    // fn gets a listing of path's children sent after this call, so it sees
    // every request this session sent before (ZooKeeper answers one
    // session's requests in order). Callers that ask while a listing is in
    // flight share the next one: a client lists a path at most twice at
    // once, however many candidacies it holds there. synced: a sync goes
    // first, so the listing also sees every write the quorum committed
    // before it (not only this server's view).
    void list(const std::string &path, ListingFn fn, bool synced = false);
    // True once this session has seen path exist (a candidate created in it)
    // or has asked for it to be made (first_ask_for).
    bool path_known(const std::string &path) const { return known_paths_.count(path) != 0; }
    void set_path_known(const std::string &path) { known_paths_.insert(path); }
    // True the first time this session asks for path (an election path or
    // one of its ancestors) to be made: one create per path and session,
    // however many candidacies need it. One session's requests are handled
    // in order, so a create sent later finds it made (or learns, from its
    // own ZNONODE, that it could not be, and makes the parents itself).
    bool first_ask_for(const std::string &path) { return known_paths_.insert(path).second; }
    // What the lease rules need to know about this session now (the
    // liveness check runs first, so a stall that just ended is seen).
    // timeout_ns and the touches; the candidacy adds its margin and writes.
    SessionFacts session_facts() override;
    // The current connection's handshake (a session's creation, or its
    // revalidation on reconnect) is a touch made by the quorum's leader
    // itself, at a time no earlier than touch_floor() and no later than
    // connected_at(). Loop thread only.
    int64_t touch_floor() const override { return touch_floor_; }
    int64_t connected_at() const { return connected_at_; }
    // Delete our node at path, now and again every session timeout while
    // ZooKeeper refuses it (ZNOAUTH: an operator may fix the ACL), until it
    // is gone or the session ends. For a candidacy that closed while its
    // node stayed: the node would otherwise hold a place in line nobody
    // holds until this client's session ends.
    void keep_removing(const std::string &path);
    // Run fn on the loop at CLOCK_BOOTTIME time at_ns.
    void at(int64_t at_ns, std::function<void()> fn) override;
    // The line of members waiting for one of this client's turns to join
    // (cxx/session/join_line.h).
    JoinLine &join_line() { return join_line_; }
    // Handler for a reply that hops onto the loop before running.
    ReplyFn on_loop(std::function<void(Reply &&)> fn) override;
    std::atomic<int64_t> &session_gen_ref() { return session_gen_; }
    // The session's lease, shared by every candidacy of this client.
    SessionLease &lease() { return lease_; }
    // The session's re-check of the nodes its followers watch.
    NeighbourCheck &neighbour_check() { return neighbour_check_; }
    // How many of this client's candidacies lead and stand in line, and
    // their terms, for a balanced group (leaderships.h).
    Leaderships &leaderships() { return leaderships_; }
    // Any thread: for its counts (leading(), in_line()) alone.
    const Leaderships &leaderships() const { return leaderships_; }
    // Any thread: the bound every lease of this client obeys while a
    // handshake is on its way to the loop.
    const HandshakeCap &handshake_cap() const { return handshake_cap_; }

#ifdef ZKELECT_SIM
    // The deterministic simulation (explore/sim) has no loop thread: its
    // scheduler turns the loop when mail or a timer is due, one item of
    // mail at a time, so that a user's call or a reading of is_leader can
    // fall between any two.
    bool sim_turn() { return turn(1); }
    bool sim_has_mail() const;
    int64_t sim_next_timer() const { return timers_.empty() ? INT64_MAX : timers_.begin()->first; }
#endif

private:
    // The one-call end (client_shutdown.h) stops the loop and closes the
    // session as the destructor would, leaving the object to its handles.
    friend class ClientShutdown;
    // LeaseHost's own: for lease_ alone.
    int configured_margin_ms() const override { return settings_.lease_margin_ms; }
    // Tell every member the lease runs until `until`.
    void deliver_lease(int64_t until, int64_t rtt_us) override;
    void deliver_lease_to(uint64_t id, int64_t until) override;
    // Tell member `id` that the keepalive found its node at `path` gone
    // (deleted: as a watch would) or not ours to read any more.
    void deliver_node_failed(uint64_t id, const std::string &path, bool deleted) override;

    void run();
    // One turn of the loop: the mailbox as it stands (at most max_items of
    // it), then the timers due. False once the client is stopping.
    bool turn(size_t max_items = SIZE_MAX);
    // Returns the session it replaced (closed when the caller drops it).
    std::shared_ptr<ZkPort> open_session(bool connect = true);
    void reopen_session();
    void refuse_session(uint64_t gen);
    void reopen_after_refusal();
    void remove_leftover(const std::string &path);
    void end_of_session();
    void on_session_event(uint64_t gen, int state, int64_t stamp, const PeerAddr &peer);
    // Its steps (session_events.cpp), one per state ZooKeeper reports.
    void on_connected_event(uint64_t gen, int64_t stamp, const PeerAddr &peer);
    void on_connection_lost(uint64_t gen, int64_t stamp);
    void on_session_expired();
    void on_auth_refused(bool sasl_required);
    // Each member, of a copy of the list (a member may leave while told).
    void tell_members(const std::function<void(Member &)> &fn);
    // After each new connection: read the server's tickTime (TickProbe),
    // or take what is known.
    void ask_tick_time(const PeerAddr &peer);
    void on_tick_answer(uint64_t ticket, bool ok, const ServerConf &conf);
    // participants' steps (participants.cpp).
    int list_children(const std::string &path, std::chrono::steady_clock::time_point deadline,
                      int timeout_ms, std::shared_ptr<ZkPort> *session,
                      std::vector<std::string> *children, std::string *why);
    int await_reconnect(int attempt, std::chrono::steady_clock::time_point deadline,
                        std::string *why);
    void warn_below_two_ticks(const std::string &server, int64_t tick_ns);
    void nudge_while_disconnected(uint64_t epoch);
    void give_up_unless_taken(uint64_t epoch);
    void send_listing(const std::string &path);
    // zk.hosts.follow: read /zookeeper/config (and watch it), and connect
    // from now on to the servers it names.
    void read_ensemble_config();
    void apply_ensemble_config(const std::string &data);
    void probe();
    void on_watch_event(uint64_t gen, int type, int state, const std::string &path,
                        int64_t stamp, const PeerAddr &peer);
    std::shared_ptr<ZkPort> session_snapshot() override;
    // The crash guard: join at construction (throws for crash.guard "on"
    // when it cannot run), hand it each new session, tell the members what
    // the guard's watcher says.
    void join_crash_guard();
    void guard_session();
    GuardedSasl guard_sasl() const;
    void warn_about_guard(const std::string &what);

    const Settings settings_;
    const PortFactory make_port_;
    // candidate_node_bytes' parts: the chroot's length, and the longest
    // node name ("_c_" + uuid + "-latch-" + "-2147483648", names.h).
    static constexpr size_t kLongestNodeName = 3 + 36 + 7 + 11;
    const int64_t chroot_bytes_;
    std::atomic<int64_t> node_bytes_{0};  // reserved (candidate_node_bytes)
    std::atomic<uint64_t> counters_[kCounterCount]{};
    std::atomic<bool> connected_{false};
    std::atomic<int> timeout_ms_{0};
    std::atomic<int64_t> session_id_{0};
    std::atomic<int64_t> session_gen_{0};
    std::atomic<size_t> member_count_{0};
    std::atomic<int64_t> tick_time_ns_{0};
    bool auth_failed_ = false;  // guarded by mu_
    std::string auth_why_;      // guarded by mu_: what auth_failure() says
    std::string auth_failure_cause(bool sasl_required) const;
    bool auth_failed() const;
    void watch_for_sasl_refusal(uint64_t gen, int64_t lived_ns);
    int quick_drops_ = 0;   // loop only: connections lost soon after their handshake, in a row
    PeerAddr last_peer_;    // loop only: the server of the latest connection
    std::atomic<bool> sasl_probing_{false};
    std::thread sasl_probe_;  // sasl_probe.h; joined by the destructor

    // Mailbox and timers, woken through an eventfd and a CLOCK_BOOTTIME
    // timerfd so a process resumed from SIGSTOP or suspend fires overdue
    // lease timers at once.
    mutable std::mutex mu_;
    std::condition_variable connected_cv_;
    std::deque<std::function<void()>> mailbox_;
    bool stopping_ = false;
    int wake_fd_ = -1;
    int timer_fd_ = -1;

    // Loop thread only.
    std::multimap<int64_t, std::function<void()>> timers_;
#ifdef ZKELECT_SIM
    static constexpr size_t kJoinWindow = 1;  // so that the explorer's few candidacies wait in line
#else
    static constexpr size_t kJoinWindow = 1024;
#endif
    JoinLine join_line_{kJoinWindow,
                        {[this](std::function<void()> fn) { post(std::move(fn)); },
                         [this](int64_t ns, std::function<void()> fn) { at(ns, std::move(fn)); },
                         [this] { return connected(); },
                         [this] { return int64_t(effective_timeout_ms()) * kNsPerMs; },
                         [] { return boottime_ns(); }}};
    // Before members_: a candidacy's term ends into it while they go.
    Leaderships leaderships_;
    std::map<uint64_t, std::shared_ptr<Member>> members_;
    std::unordered_multimap<std::string, uint64_t> interest_;  // path -> members watching
    // The same, by member: each entry points at its path, the key of its
    // entry in interest_ (a node's key stays put until that entry is
    // erased; erase_watched goes first). One copy of every watched path,
    // not two, in a process of 100,000 elections (issue 35).
    std::unordered_multimap<uint64_t, const std::string *> watched_;
    void erase_watched(uint64_t member_id, const std::string &path);
    uint64_t next_member_ = 1;
    bool ever_connected_ = false;  // in the current session
    int refusals_in_row_ = 0;      // handshakes that granted no session since one did
    uint64_t disconnect_epoch_ = 0;  // bumped on every connect and disconnect
    std::deque<AckedWrite> answered_;  // session_facts' copy of session_->answered()
    int64_t touch_floor_ = 0;
    int64_t connected_at_ = INT64_MAX;
    struct Lister {
        ListingFn fn;
        bool synced;  // wants a listing that a sync went ahead of
    };
    struct ListQueue {
        bool in_flight = false;
        std::vector<Lister> sent;     // get the listing in flight
        std::vector<Lister> waiting;  // get the one after it
        // The sync queued before `waiting`'s listing (null: none), and then
        // before the listing in flight: set once ZooKeeper answered it.
        std::shared_ptr<bool> sync_ahead, sync_of_sent;
    };
    std::unordered_map<std::string, ListQueue> lists_;  // per path, this session
    std::set<std::string> known_paths_;                 // this session
    std::set<std::string> leftovers_;  // keep_removing's nodes, this session
    // The servers /zookeeper/config last named (sorted), across sessions:
    // a new session opens with them. Empty: zk.hosts as given.
    std::vector<std::string> learned_hosts_;
    mutable std::mutex hosts_mu_;
    std::string hosts_in_use_;  // under hosts_mu_
    SessionLease lease_{*this};
    NeighbourCheck neighbour_check_{*this};
    HandshakeCap handshake_cap_;
    // The server's tickTime: the request in flight (0: none), and, for
    // each connection, what its server said.
    uint64_t tick_ticket_ = 0;
    uint64_t tick_asked_ = 0;       // the ticket whose answer is awaited
    PeerAddr tick_peer_;            // the server it was asked of
    int64_t largest_tick_ns_ = 0;   // of every server that said
    std::set<std::string> warned_servers_;  // counted for these
    // The WARNING about the current connection's server, told to every
    // member, those added later included; empty when none.
    std::string tick_warning_, tick_warning_server_;
    // The crash guard: this client's ticket (0: unguarded), the WARNING
    // about a guard that could not run at construction (told to every
    // member, those added later included), and a count that names each
    // later WARNING of the guard's, so that each is said.
    uint64_t guard_ticket_ = 0;
    std::string guard_warning_;
    uint64_t guard_warnings_ = 0;
    TickProbe tick_probe_{[this](uint64_t ticket, bool ok, const ServerConf &conf) {
        post([this, ticket, ok, conf] { on_tick_answer(ticket, ok, conf); });
    }};

    std::shared_ptr<ZkPort> session_;  // swapped on expiry, on the loop
    mutable std::mutex session_mu_;       // guards the pointer for queries
    SessionCloser closer_;                // refused handles close there
    std::thread loop_;
    std::thread::id loop_id_;
};

}  // namespace zkelect
