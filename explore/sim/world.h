// The deterministic simulation's world (issue 29's first tier): virtual time,
// one seeded scheduler, a network of FIFO links, and a model of a ZooKeeper
// ensemble, all on one thread. The engine (cxx/, compiled with ZKELECT_SIM)
// reads its clocks from here and talks to the model through SimPort, a ZkPort
// like the libzookeeper adapter. Nothing here sleeps or starts a thread: a
// run is a function of its seed.
//
// What the model keeps of ZooKeeper, because the lease and the recipe rely
// on it (docs/semantics.md):
// - sessions expire at the quorum's leader at the first multiple of the
//   tick after T past the last touch it heard of; it hears of a follower's
//   touches when it pings it (every half tick), or when a stalled follower
//   answers that ping late, and counts them from then; "expired" is said to a reconnecting client as soon as the
//   session is marked closing, before the close that deletes its ephemeral
//   nodes commits (that commit can be slow);
// - writes commit in one order at the leader; each server applies them in
//   that order, some later than others (a server behind the quorum serves
//   stale reads); a sync catches the server up to the leader;
// - one session's requests are answered in order; watches are one-shot,
//   set by the reply, fired by the server as it applies a change, and set
//   again by the client on a reconnect (with the last zxid it saw);
// - a lost connection fails every pending request with CONNECTIONLOSS,
//   whether or not the server carried it out (a lost reply);
// - a quorum that loses its leader drops every connection, serves nobody
//   for a while, forgets closes it had not committed, and then gives every
//   session a fresh timeout.
// - a node's ACL (only which of READ, CREATE, DELETE it withholds from
//   everyone; an operator's setACL is a committed write like the others,
//   enforced as ZooKeeper does: getData and getChildren need READ on the
//   node, a create CREATE and a delete DELETE on its parent; exists and
//   sync need nothing).
// What it leaves out: authentication, the config node, data versions
// beyond what the engine reads, and the wire's own failure modes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "zk_port.h"

namespace sim {

using zkelect::AckedWrite;
using zkelect::Reply;
using zkelect::ReplyFn;
using zkelect::WatchFn;

constexpr int64_t kMs = 1000000;

// splitmix64: the same numbers from the same seed on every machine.
class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [lo, hi].
    int64_t range(int64_t lo, int64_t hi) {
        if (hi <= lo) return lo;
        return lo + int64_t(next() % uint64_t(hi - lo + 1));
    }
    bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }
    template <class T>
    const T &pick(const std::vector<T> &v) { return v[size_t(next() % v.size())]; }

private:
    uint64_t s_;
};

// Virtual time and the one queue of things to happen. Ties run in the order
// they were scheduled.
class Scheduler {
public:
    int64_t now() const { return now_; }
    void at(int64_t t, std::function<void()> fn);
    int64_t next_time() const { return q_.empty() ? INT64_MAX : q_.top().t; }
    // Runs the earliest item (time moves to it). False when none is left.
    bool step();
    uint64_t steps() const { return steps_; }

private:
    struct Item {
        int64_t t;
        uint64_t seq;
        std::function<void()> *fn;
        bool operator>(const Item &o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q_;
    int64_t now_ = 0;
    uint64_t seq_ = 0, steps_ = 0;

public:
    ~Scheduler();
};

// The scheduler whose time the engine reads (clock.h's sim_boottime_ns).
// One per thread: the simulator runs one world at a time on each.
Scheduler *&current_scheduler();
// Whether the world prints what each port sends and receives (--verbose).
bool &trace();
// Its generator, for the engine's node names (names.cpp's make_uuid).
Rng *&current_rng();

class Ensemble;

// A fault on one session's link, set by the explorer.
struct LinkFault {
    int64_t hole_until = 0;   // both ways discarded until then (a black hole)
    int64_t delay_ns = 0;     // added to every message until delay_until
    int64_t delay_until = 0;
    // One way: what the client sends waits until then (TCP retransmits it
    // once the path is back), while the server's messages still arrive.
    int64_t up_hold_until = 0;
    // The next handshake that lets the client in is followed at once by a
    // black hole this long: the session lives on at the quorum, under what
    // that handshake granted, while the client is cut off.
    int64_t hole_after_handshake_ns = 0;
    int drop_reply_op = -1;   // the next reply to a request of this kind is lost
    bool drop_then_reset = false;
};

enum Op { kCreate, kCreatePersistent, kGet, kGetChildren, kExists, kDelete, kCheck, kSync, kSet, kOpCount };
const char *op_name(int op);

// One client session's view of the ensemble: the ZkPort the engine uses.
class SimPort final : public zkelect::ZkPort, public std::enable_shared_from_this<SimPort> {
public:
    SimPort(Ensemble &ens, int process, int timeout_ms, WatchFn on_watch,
            std::atomic<uint64_t> *requests);
    ~SimPort() override;
    void start();
    // A placeholder (the client waits before asking a broken server
    // again): every request fails at once, no events.
    void hold_place() { placeholder_ = true; }
    // The process died: nothing more is sent, the session is not closed.
    void kill() { dead_ = killed_ = true; }

    void create_candidate(const std::string &path_prefix, const std::string &data,
                          ReplyFn fn) override;
    void create_persistent(const std::string &path, ReplyFn fn) override;
    void get(const std::string &path, bool watch, ReplyFn fn) override;
    void get_children(const std::string &path, bool watch, ReplyFn fn) override;
    void exists(const std::string &path, bool watch, ReplyFn fn) override;
    void remove(const std::string &path, ReplyFn fn) override;
    void set(const std::string &path, const std::string &data, int version, ReplyFn fn) override;
    void check(const std::vector<std::string> &paths, ReplyFn fn) override;
    // A multi of checks, sets, creates and deletes (the engine's fenced
    // writes), sent as check() is: a "drop" of multi replies loses it too.
    void multi(const std::vector<zkelect::ZkOp> &ops, ReplyFn fn) override;
    void sync(const std::string &path, ReplyFn fn) override;
    std::deque<AckedWrite> answered() const override { return answered_; }
    int64_t session_id() const override { return sid_; }
    int negotiated_timeout_ms() const override { return negotiated_ms_; }
    int state() const override;
    void try_next_server() override;
    void get_config(ReplyFn fn) override;
    int set_servers(const std::string &) override { return 0; }
    bool ask_conf(std::function<void(bool ok, const zkelect::ServerConf &conf)> fn) override;

    // --- the ensemble's side ---
    struct Request {
        uint64_t id;
        int op;
        std::string path, data;
        std::vector<std::string> paths;
        std::vector<zkelect::ZkOp> multi;  // kCheck: a multi() when not empty
        bool watch = false;
        int version = -1;  // set
        int64_t sent = 0;
    };
    int process() const { return process_; }
    LinkFault &fault() { return fault_; }
    // The connection broke (a reset, the server went, a fault): pending
    // requests fail with rc (libzookeeper's ZCONNECTIONLOSS, or
    // ZRUNTIMEINCONSISTENCY when it drops the connection itself on a reply
    // out of order), CONNECTING is told, a new connection is tried.
    void lose_connection(int rc = -4 /* ZCONNECTIONLOSS */);
    // The process stopped (SIGSTOP) or went on: a stopped process neither
    // sends nor reads, and its I/O thread's timers wait.
    void set_paused(bool paused);
    bool dead() const { return dead_; }
    int server() const { return server_; }
    uint64_t conn() const { return conn_; }
    // Message from the server over connection conn.
    void deliver_reply(uint64_t conn, uint64_t req, Reply r, int64_t zxid);
    void deliver_pong(uint64_t conn);
    void deliver_watch(uint64_t conn, int type, const std::string &path, int64_t zxid);
    void deliver_handshake(uint64_t conn, bool ok, bool expired, int64_t sid, int timeout_ms);

private:
    void submit(Request r, ReplyFn fn);
    void send(Request r);
    void finish(uint64_t req, Reply &&r);
    void fail_all(int rc);
    void connect();
    void ping_check();
    void touch_recv() ;
    void session_event(int state);
    void register_watch(const Request &r, int rc);
    void deliver_or_queue(std::function<void()> fn);

    Ensemble &ens_;
    const int process_;
    const int timeout_ms_;
    WatchFn on_watch_;
    std::atomic<uint64_t> *requests_;
    int64_t sid_ = 0;
    int negotiated_ms_ = 0;
    bool connected_ = false, dead_ = false, closing_ = false, paused_ = false;
    bool placeholder_ = false, killed_ = false;
    int server_ = -1, next_server_ = 0;
    uint64_t conn_ = 0;     // the connection's number (0: none)
    uint64_t next_req_ = 1;
    int64_t last_recv_ = 0, last_send_ = 0;
    int64_t last_zxid_ = 0;  // the newest the client saw
    int64_t last_answered_sent_ = 0;
    uint64_t timer_gen_ = 0;
    struct Pending {
        Request req;
        ReplyFn fn;
    };
    std::map<uint64_t, Pending> pending_;     // sent or queued, by request id
    std::vector<uint64_t> unsent_;            // queued while connecting
    std::deque<AckedWrite> answered_;
    // Client-side watches (libzookeeper's): path -> kinds (1 data, 2 exist, 4 child).
    std::map<std::string, int> watches_;
    std::vector<std::function<void()>> held_;  // delivered while paused
    LinkFault fault_;
};

// The ensemble: the quorum's committed tree and sessions, and the servers
// that each apply the commits and serve their connected sessions.
class Ensemble {
public:
    struct Node {
        std::string data;
        int64_t owner = 0;  // ephemeral owner's session, 0: persistent
        int64_t czxid = 0, mzxid = 0, pzxid = 0, ctime_ms = 0;
        int32_t version = 0;
        int32_t cseq = 0;  // the next sequence number of a child
        int denied = 0;    // ZOO_PERM_* bits its ACL withholds from everyone
    };
    using Tree = std::map<std::string, Node>;

    Ensemble(Scheduler &sched, Rng &rng, int servers, int tick_ms);

    Scheduler &sched() { return sched_; }
    Rng &rng() { return rng_; }
    int servers() const { return int(servers_.size()); }
    int tick_ms() const { return tick_ms_; }

    // --- the link ---
    // Latency of one message one way on a session's link.
    int64_t hop(SimPort &p);
    // A message from the client to its server, in order with the others.
    void to_server(SimPort &p, uint64_t conn, std::function<void()> fn);
    void to_client(SimPort &p, uint64_t conn, std::function<void()> fn);

    // --- the servers' side of a session ---
    void handshake(SimPort &p, uint64_t conn, int server, int64_t sid, int timeout_ms,
                   int64_t last_zxid, const std::map<std::string, int> &watches);
    void request(SimPort &p, uint64_t conn, int server, SimPort::Request r);
    void ping(SimPort &p, uint64_t conn, int server);
    void close_session(int64_t sid, int server);
    void detach(SimPort &p);

    // --- faults and operators ---
    void server_down(int s, int64_t for_ns);
    void server_behind(int s, int64_t lag_ns, int64_t for_ns);
    // The server grants at most max_ns as the session timeout (its
    // maxSessionTimeout) for a while: a session that reconnects there gets a
    // shorter timeout than it had.
    void server_shrinks(int s, int64_t max_ns, int64_t for_ns);
    // minSessionTimeout in ms (ZooKeeper's default, 0 here, is 2 x
    // tickTime; an operator may set less, even below one tick, and then a
    // server grants T below 2 x tickTime).
    void set_min_session_ms(int64_t ms) { min_session_ms_ = ms; }
    // Follower s stalls (a JVM pause, SIGSTOP) for a while: what its
    // clients send and what it sends them waits until it runs again, and
    // it answers none of the leader's pings meanwhile, so the touches it
    // holds are reported late.
    void server_stall(int s, int64_t for_ns);
    // Server s throttles for a while (ZooKeeper 3.7's throttledOpWaitTime
    // under load): half the requests it takes up are answered ZTHROTTLEDOP,
    // in order with the others, and not carried out.
    void server_throttle(int s, int64_t for_ns);
    // What `conf` says on server s now.
    zkelect::ServerConf conf_of(int s) const;
    bool server_up(int s) const { return servers_[size_t(s)].up; }
    void quorum_loss(int64_t for_ns);
    void slow_commits(int64_t delay_ns, int64_t for_ns);
    // An operator's write: delete the node (and, for the path, everything
    // under it first), or add a persistent child.
    void operator_delete(const std::string &path, bool recursive);
    void operator_create(const std::string &path);
    // A persistent node there from the start, on every server, with no
    // transaction (so that a run without fenced writes is the run it was).
    void preset(const std::string &path);
    // An operator's setACL: the node's ACL withholds these ZOO_PERM_* bits
    // (0: open to all again). Nothing when the node does not exist.
    void operator_set_acl(const std::string &path, int denied);
    // heal() also gives every node its full ACL back.
    void heal();

    // --- what the checker reads: the committed tree ---
    const Tree &truth() const { return truth_; }
    // Every committed setData from zxid `from` on (a multi's too), in
    // commit order: fn(zxid, path, data). Returns the next zxid to ask from.
    uint64_t data_writes(uint64_t from,
                         const std::function<void(int64_t, const std::string &,
                                                  const std::string &)> &fn) const;
    std::vector<std::string> children(const Tree &t, const std::string &path) const;
    bool session_alive(int64_t sid) const;
    uint64_t txns() const { return log_.size(); }

private:
    struct Session {
        int64_t id;
        int64_t timeout_ns;
        int64_t last_touch;  // as the leader heard of it
        bool closing = false, closed = false;
        uint64_t check_gen = 0;
        SimPort *port = nullptr;  // connected through, or null
        int server = -1;
        uint64_t conn = 0;
        int owner = -1;  // the server the leader takes its requests from
    };
    struct Txn {
        int64_t zxid = 0;
        int kind = 2;  // 0 create, 1 delete, 2 none (a check/failed multi), 3 close session, 4 set data, 5 set ACL (owner: the denied bits), 6 a multi (subs)
        std::string path, data;
        int64_t owner = 0, ctime_ms = 0;
        std::vector<std::string> deleted;  // kind 3: its ephemeral nodes
        std::vector<Txn> subs;             // kind 6: its writes, one zxid
    };
    struct Server {
        Tree tree;
        int64_t applied = 0;            // zxid
        int64_t lag_ns = 0, lag_until = 0;
        int64_t last_apply_at = 0;
        bool up = true;
        int64_t down_until = 0;
        int64_t max_timeout_ns = 0, max_until = 0;
        int64_t stall_until = 0;
        int64_t throttle_until = 0;
        // Ping answers waiting in the stalled server's socket: answered the
        // moment the stall ends, however it ends (its time, or heal()).
        std::vector<std::function<void()>> held_touches;
        bool release_armed = false;
        uint64_t incarnation = 0;  // a restart loses the touches not reported
        // watches: path -> session ids
        std::map<std::string, std::set<int64_t>> data_w, exist_w, child_w;
        // Per session: requests waiting for the one in progress.
        std::map<int64_t, std::deque<SimPort::Request>> queue;
        std::map<int64_t, bool> busy;
        std::vector<std::function<void()>> on_applied;  // waiting for a zxid
        std::multimap<int64_t, std::function<void()>> waiters;
    };

    void touch(int64_t sid, int server);
    void report_touch(int64_t sid, int server, uint64_t incarnation, uint64_t epoch);
    void release_held_touches(int server);
    // The leader's next ping of its followers after `after` (every half tick).
    int64_t next_ping(int64_t after) const;
    void arm_expiry(Session &s);
    void expire(int64_t sid, uint64_t gen);
    // Validate and commit at the leader; fn(rc, txn zxid, reply fields).
    void commit(int server, const SimPort::Request &r, int64_t sid,
                std::function<void(int rc, int64_t zxid, Reply)> fn);
    int64_t append(Txn t);
    // A multi judged against the committed tree: *t its transaction (a
    // multi, or none when an operation fails), the reply ZooKeeper gives.
    Reply judge_multi(const SimPort::Request &r, int64_t sid, Txn *t);
    void schedule_apply(int s, int64_t zxid);
    void apply(int s, const Txn &t);
    void fire(int s, int64_t sid, int type, const std::string &path);
    void run_next(int s, int64_t sid);
    void serve(int s, int64_t sid, SimPort::Request r);
    void reply(int s, int64_t sid, const SimPort::Request &r, Reply rep);
    void when_applied(int s, int64_t zxid, std::function<void()> fn);
    static void apply_to(Tree &t, const Txn &x, std::vector<std::pair<int, std::string>> *fired);
    int64_t commit_delay();
    int64_t to_leader(int s);
    bool quorum_up() const { return sched_.now() >= quorum_down_until_; }

    Scheduler &sched_;
    Rng &rng_;
    int tick_ms_;
    int64_t min_session_ms_ = 0;
    int64_t ping_phase_ = 0;
    std::vector<Server> servers_;
    Tree truth_;
    std::vector<Txn> log_;  // zxid i+1 at index i
    std::vector<int64_t> commit_at_;
    std::unordered_map<int64_t, Session> sessions_;
    int64_t next_sid_ = 0x100;
    int64_t quorum_down_until_ = 0;
    int64_t slow_commit_ns_ = 0, slow_until_ = 0;
    uint64_t quorum_epoch_ = 0;
    // The latest delivery time on each connection, each way (FIFO links).
    std::unordered_map<uint64_t, int64_t> up_last_, down_last_;
    std::vector<int64_t> leader_last_;  // per server: FIFO to the leader
    std::set<uint64_t> broken_;  // connections a black hole swallowed from
    bool swallowed(SimPort &p, uint64_t conn);
    void send(SimPort &p, uint64_t conn, bool up, std::function<void()> fn);
    void drop_all(int s);
};

}  // namespace sim
