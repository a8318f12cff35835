// What the engine needs of a ZooKeeper session: eight requests (and the
// ensemble's config, the host list, the credentials), a stream of
// watch and session events, and the touches the lease rules count. The
// libzookeeper adapter is ZkSession (zk_session.h); a simulated ZooKeeper
// (issue 29's deterministic tier) can stand in its place, so the candidacy,
// lease and client logic run unchanged against either. Replies and events
// arrive on the port's own thread of delivery (libzookeeper's completion
// thread, or the simulator's scheduler), in the order the connection
// produced them; the handlers only forward them to the client's loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conf.h"
#include "lease.h"
#include "peer_addr.h"
#include "tick_time.h"

namespace zkelect {

struct NodeStat {
    int64_t czxid = 0;
    int64_t ctime_ms = 0;
    int64_t ephemeral_owner = 0;
    int32_t version = 0;
};

struct Reply {
    int rc = 0;                         // ZooKeeper's code (ZOK = 0)
    std::string value;                  // create: the created path
    std::string data;                   // get: the node's data
    bool has_stat = false;
    NodeStat stat;
    std::vector<std::string> children;  // get_children
    // check: each operation's code, in the order of its paths (a multi that
    // failed says which node was missing: ZNONODE there, and
    // ZRUNTIMEINCONSISTENCY for the operations it did not get to).
    std::vector<int> results;
};

using ReplyFn = std::function<void(Reply &&)>;

// One operation of a multi (ZkPort::multi): a version check, a setData, a
// create (persistent or ephemeral, with the session's ACL) or a delete.
struct ZkOp {
    enum Kind { kCheck, kSet, kCreate, kDelete } kind = kCheck;
    std::string path;
    std::string data;      // set, create
    int32_t version = -1;  // check, set, delete; -1: any
    bool ephemeral = false;  // create
};

// The request failed with the connection or the session (ZooKeeper never
// judged it): the reconnect, or the session's end, is what acts on it.
bool connection_trouble(int rc);
// ZooKeeper watch event: type, state, path (ZOO_SESSION_EVENT for sessions),
// and a CLOCK_BOOTTIME stamp taken on ZooKeeper's completion thread, which
// delivers replies and events in the order the connection produced them:
// for ZOO_CONNECTED_STATE the time of delivery (the handshake was before
// it); for a lost connection (ZOO_CONNECTING_STATE) the sending time of the
// latest request answered on that connection (it broke after that).
// For ZOO_CONNECTED_STATE also the handshake's facts, read on ZooKeeper's
// thread: the touch floor (the sending time of the latest request answered
// before it, 0 for none), the negotiated timeout, and the address of the
// server it was made with (getpeername of the connection's socket: no lock,
// no name to resolve; none when the connection is already gone); 0 and none
// for other events.
using WatchFn = std::function<void(int type, int state, const std::string &path, int64_t stamp,
                                   int64_t floor, int timeout_ms, const PeerAddr &peer)>;

class ZkPort {
public:
    virtual ~ZkPort() = default;

    // Each sends one request. When it cannot be sent, fn runs at once, on
    // the calling thread, with the error.
    virtual void create_candidate(const std::string &path_prefix, const std::string &data,
                                  ReplyFn fn) = 0;
    virtual void create_persistent(const std::string &path, ReplyFn fn) = 0;
    virtual void get(const std::string &path, bool watch, ReplyFn fn) = 0;
    virtual void get_children(const std::string &path, bool watch, ReplyFn fn) = 0;
    virtual void exists(const std::string &path, bool watch, ReplyFn fn) = 0;
    virtual void remove(const std::string &path, ReplyFn fn) = 0;
    // setData: only the election path's own data (the transfer marker,
    // docs/semantics.md), never a candidate's node. version -1: any.
    virtual void set(const std::string &path, const std::string &data, int version,
                     ReplyFn fn) = 0;
    // A write through the quorum that changes nothing: a multi holding one
    // version check (-1) of each path. Fires no watch; fails with ZNONODE
    // when a node is gone (Reply::results says which). paths is not empty.
    virtual void check(const std::vector<std::string> &paths, ReplyFn fn) = 0;
    // Every operation or none, committed by the quorum as one transaction
    // (cxx/election/fenced_write.cpp's fenced writes). Reply::results holds each
    // operation's code when the server judged the multi. ops is not empty.
    // A port without it refuses at once with ZUNIMPLEMENTED.
    virtual void multi(const std::vector<ZkOp> &ops, ReplyFn fn) {
        (void)ops;
        Reply r;
        r.rc = -6;  // ZUNIMPLEMENTED
        fn(std::move(r));
    }
    // Brings the server up to date with the quorum's leader: requests sent
    // after it see every write committed before it.
    virtual void sync(const std::string &path, ReplyFn fn) = 0;

    // Requests the server answered (any kind, any answer but a lost
    // connection or session), newest last, thinned by lease::record: each
    // touched the session at its server between its sending and its
    // answer. Any thread.
    virtual std::deque<AckedWrite> answered() const = 0;

    virtual int64_t session_id() const = 0;
    // The session's id and password, once granted: what the crash guard
    // needs to close it (crash_guard.h). False when the port has none to
    // give (a simulated session).
    virtual bool credentials(int64_t *id, std::string *passwd) const {
        (void)id;
        (void)passwd;
        return false;
    }
    virtual int negotiated_timeout_ms() const = 0;
    // The state of the connection, in libzookeeper's terms (zoo_state); 0
    // without a connection.
    virtual int state() const = 0;
    // While disconnected: make the next connection attempt go to the next
    // address of the host list. See Client::nudge_while_disconnected.
    virtual void try_next_server() = 0;
    // Reads /zookeeper/config (whatever the chroot) and watches it: a
    // change comes as a node event on that path.
    virtual void get_config(ReplyFn fn) = 0;
    // Replaces the host list (no chroot) the session connects to; it may
    // move to another server (a reconnect within the session). ZooKeeper's
    // code.
    virtual int set_servers(const std::string &hosts) = 0;
    // The connected server's `conf` (tickTime and the session timeout
    // bounds), when the port can ask it itself: fn then gets the answer
    // (ok false: none) on the port's thread of delivery, and this returns
    // true. False: the client asks with its TickProbe (libzookeeper's
    // sessions). The simulated ensemble answers here.
    virtual bool ask_conf(std::function<void(bool ok, const ServerConf &conf)> fn) {
        (void)fn;
        return false;
    }
};

// Makes the port of a new session: the settings, where its events go, the
// counter its requests bump, and connect false for a placeholder that holds
// a client's place while it waits (every request fails at once with
// ZCONNECTIONLOSS, no events).
using PortFactory = std::function<std::shared_ptr<ZkPort>(
    const Settings &settings, WatchFn on_watch, std::atomic<uint64_t> *request_counter,
    bool connect)>;

}  // namespace zkelect
