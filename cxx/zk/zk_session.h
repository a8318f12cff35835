// RAII over one zhandle_t: one ZooKeeper session, the libzookeeper adapter
// of the ZkPort (zk_port.h). Every asynchronous request
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
#include "sasl.h"
#include "lease.h"
#include "zk_port.h"

typedef struct _zhandle zhandle_t;
struct Stat;
struct String_vector;

namespace zkelect {

class ZkSession final : public ZkPort {
public:
    // Starts connecting (does not wait). Throws std::runtime_error with a
    // message when libzookeeper refuses the settings. With connect false
    // there is no handle at all: a placeholder that holds a client's place
    // while it waits before asking a broken server again. Every request on
    // it fails at once with ZCONNECTIONLOSS, and it delivers no events.
    ZkSession(const Settings &settings, WatchFn on_watch, std::atomic<uint64_t> *request_counter,
              bool connect = true);
    ~ZkSession() override;  // zookeeper_close: ZooKeeper deletes our ephemeral nodes
    ZkSession(const ZkSession &) = delete;
    ZkSession &operator=(const ZkSession &) = delete;

    // ZkPort (zk_port.h says what each does).
    void create_candidate(const std::string &path_prefix, const std::string &data,
                          ReplyFn fn) override;
    void create_persistent(const std::string &path, ReplyFn fn) override;
    void get(const std::string &path, bool watch, ReplyFn fn) override;
    void get_children(const std::string &path, bool watch, ReplyFn fn) override;
    void exists(const std::string &path, bool watch, ReplyFn fn) override;
    void remove(const std::string &path, ReplyFn fn) override;
    void set(const std::string &path, const std::string &data, int version, ReplyFn fn) override;
    void check(const std::vector<std::string> &paths, ReplyFn fn) override;
    void sync(const std::string &path, ReplyFn fn) override;
    void multi(const std::vector<ZkOp> &ops, ReplyFn fn) override;
    std::deque<AckedWrite> answered() const override;
    int64_t session_id() const override;
    bool credentials(int64_t *id, std::string *passwd) const override;
    int negotiated_timeout_ms() const override;
    int state() const override;  // zoo_state
    void try_next_server() override;
    void get_config(ReplyFn fn) override;
    int set_servers(const std::string &hosts) override;

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
    // answered_'s spacing, T/24 of the timeout the server granted (the
    // configured one until a handshake says): a shorter negotiated T must
    // not leave the lease with answers older than its own T/24. Under mu_.
    int64_t answered_spacing_ns_ = 0;
    // What zk.sasl.* gives the handle's SASL callbacks: kept until the
    // handle is closed (libzookeeper references, not copies, them).
    std::shared_ptr<SaslParams> sasl_;
    // A reply with -124 (the server closed the session for want of SASL)
    // is reported once, as an authentication failure.
    std::atomic<bool> sasl_refused_{false};
    zhandle_t *zh_ = nullptr;
};

}  // namespace zkelect
