// RAII over one zhandle_t: one ZooKeeper session. Every asynchronous request
// takes a handler that receives a copied Reply on ZooKeeper's completion
// thread; the handler's job is only to forward it (to the client's loop, or
// to a waiting query), never to run user code.
//
// The request contexts handed to ZooKeeper are owned here, not by the
// callbacks, so a request whose completion never runs (the handle closes
// first) is still freed: by the destructor, after zookeeper_close() has
// joined ZooKeeper's threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "conf.h"
#include "lease.h"
#include "tick_probe.h"

typedef struct _zhandle zhandle_t;
struct Stat;
struct String_vector;

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

class ZkSession {
public:
    // Starts connecting (does not wait). Throws std::runtime_error with a
    // message when libzookeeper refuses the settings. With connect false
    // there is no handle at all: a placeholder that holds a client's place
    // while it waits before asking a broken server again. Every request on
    // it fails at once with ZCONNECTIONLOSS, and it delivers no events.
    ZkSession(const Settings &settings, WatchFn on_watch, std::atomic<uint64_t> *request_counter,
              bool connect = true);
    ~ZkSession();  // zookeeper_close: ZooKeeper deletes our ephemeral nodes
    ZkSession(const ZkSession &) = delete;
    ZkSession &operator=(const ZkSession &) = delete;

    // Each sends one request. When it cannot be sent, fn runs at once, on
    // the calling thread, with the error.
    void create_candidate(const std::string &path_prefix, const std::string &data, ReplyFn fn);
    void create_persistent(const std::string &path, ReplyFn fn);
    void get(const std::string &path, bool watch, ReplyFn fn);
    void get_children(const std::string &path, bool watch, ReplyFn fn);
    void exists(const std::string &path, bool watch, ReplyFn fn);
    void remove(const std::string &path, ReplyFn fn);
    // A write through the quorum that changes nothing: a multi holding one
    // version check (-1) of each path. Fires no watch; fails with ZNONODE
    // when a node is gone (Reply::results says which). paths is not empty.
    void check(const std::vector<std::string> &paths, ReplyFn fn);
    // Brings the server up to date with the quorum's leader: requests sent
    // after it see every write committed before it.
    void sync(const std::string &path, ReplyFn fn);

    // Requests the server answered (any kind, any answer but a lost
    // connection or session), newest last, thinned by lease::record: each
    // touched the session at its server between its sending and its
    // answer. Any thread.
    std::deque<AckedWrite> answered() const;

    int64_t session_id() const;
    int negotiated_timeout_ms() const;
    // libzookeeper's own state of the connection (zoo_state); 0 without a
    // handle.
    int state() const;
    // While disconnected: make the next connection attempt go to the next
    // address of the host list. See Client::nudge_while_disconnected.
    void try_next_server();

private:
    struct Pending;
    Pending *track(ReplyFn fn);
    static void finish(const void *data, Reply &&reply);
    static void on_string_stat(int rc, const char *value, const struct Stat *stat, const void *data);
    static void on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data);
    static void on_strings(int rc, const struct String_vector *strings, const void *data);
    static void on_stat(int rc, const struct Stat *stat, const void *data);
    static void on_void(int rc, const void *data);
    static void on_multi(int rc, const void *data);
    static void on_sync(int rc, const char *value, const void *data);
    static void on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx);

    Settings settings_;
    WatchFn on_watch_;
    std::atomic<uint64_t> *requests_;
    mutable std::mutex mu_;
    std::unordered_map<Pending *, std::unique_ptr<Pending>> pending_;
    std::deque<AckedWrite> answered_;  // under mu_ (lease::record)
    int64_t last_answered_sent_ = 0;   // under mu_
    zhandle_t *zh_ = nullptr;
};

}  // namespace zkelect
