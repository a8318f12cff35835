#include "zk_session.h"

#include <zookeeper/zookeeper.h>

#include <stdexcept>

#include "clock.h"
#include "log_sink.h"
#include "no_sigpipe.h"
#ifdef ZKELECT_HAVE_ZK_TLS_SASL
#include "zkelect_ssl_sasl.h"
#endif

namespace zkelect {

struct ZkSession::Pending {
    ZkSession *owner;
    ReplyFn fn;
    // A multi's operations, results and paths must outlive the request.
    std::vector<zoo_op_t> ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::string> paths;
    std::vector<ZkOp> multi_ops;         // multi: paths and data the ops point into
    std::vector<std::string> created;    // multi: a buffer per create's resulting path
    int64_t sent = 0;  // CLOCK_BOOTTIME
};

namespace {

NodeStat copy_stat(const struct Stat *s) {
    NodeStat n;
    n.czxid = s->czxid;
    n.ctime_ms = s->ctime;
    n.ephemeral_owner = s->ephemeralOwner;
    n.version = s->version;
    return n;
}

struct ACL_vector *acl_for(const Settings &s) {
    return s.acl_creator_only ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}

void ignore_auth_reply(int, const void *) {}

constexpr int kResolutionWindowMs = 30000;

}  // namespace

bool connection_trouble(int rc) {
    return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
           rc == ZINVALIDSTATE || rc == ZCLOSING || rc == ZSESSIONMOVED;
}

ZkSession::ZkSession(const Settings &settings, WatchFn on_watch,
                     std::atomic<uint64_t> *request_counter, bool connect)
    : settings_(settings), on_watch_(std::move(on_watch)), requests_(request_counter) {
    // The requested timeout's one reader: what the handshake asks for, and
    // the spacing of answered_ until a handshake says what was granted.
    const int requested_ms = settings_.session_timeout_ms;
    answered_spacing_ns_ = int64_t(requested_ms) * 1000000 / 24;
    if (!connect) return;
    if (settings_.log_level >= 0) {
        static constexpr ZooLogLevel kLevels[] = {(ZooLogLevel)0, ZOO_LOG_LEVEL_ERROR,
                                                  ZOO_LOG_LEVEL_WARN, ZOO_LOG_LEVEL_INFO,
                                                  ZOO_LOG_LEVEL_DEBUG};
        zoo_set_debug_level(kLevels[settings_.log_level]);
    }
    // Every handle logs through the process's sink, which drops messages
    // unless the host asked for them (zkelect_set_log_cb): never stderr.
    sasl_ = sasl_params(settings_.sasl);
    // libzookeeper's threads inherit this thread's mask: no SIGPIPE for the
    // host from their TLS writes (no_sigpipe.h).
    NoSigpipe no_sigpipe;
#ifdef ZKELECT_HAVE_ZK_TLS_SASL
    if (sasl_ && !settings_.tls.empty()) {
        zh_ = zkelect_zookeeper_init_ssl_sasl(
            settings_.hosts.c_str(), settings_.tls.c_str(), &ZkSession::on_watch,
            requested_ms, nullptr, this, &zk_log_message,
            static_cast<zoo_sasl_params_t *>(sasl_params_ptr(sasl_.get())));
    } else
#endif
#ifdef ZKELECT_HAVE_ZK_SASL
    if (sasl_) {
        zh_ = zookeeper_init_sasl(settings_.hosts.c_str(), &ZkSession::on_watch,
                                  requested_ms, nullptr, this, 0, &zk_log_message,
                                  static_cast<zoo_sasl_params_t *>(sasl_params_ptr(sasl_.get())));
    } else
#endif
#ifdef ZKELECT_HAVE_ZK_TLS
    if (!settings_.tls.empty()) {
        zh_ = zookeeper_init_ssl(settings_.hosts.c_str(), settings_.tls.c_str(),
                                 &ZkSession::on_watch, requested_ms, nullptr, this,
                                 0);
        if (zh_) zoo_set_log_callback(zh_, &zk_log_message);
    } else
#endif
    zh_ = zookeeper_init2(settings_.hosts.c_str(), &ZkSession::on_watch,
                          requested_ms, nullptr, this, 0, &zk_log_message);
    if (!zh_)
        throw std::runtime_error("ZooKeeper's client refused the connect string \"" +
                                 settings_.hosts + "\" (unresolvable host?)");
    // By default the client resolves every host name of the connect string
    // again on each turn of its I/O loop (a getaddrinfo per host, then
    // srand): in callgrind, two thirds of the client's instructions in a
    // failover. Once per window still follows DNS changes, and zookeeper.h
    // says the window does not hold back resolution after a connection loss.
    zoo_set_servers_resolution_delay(zh_, kResolutionWindowMs);
    if (!settings_.auth_scheme.empty()) {
        // Registered once; libzookeeper re-sends it on every reconnect.
        zoo_add_auth(zh_, settings_.auth_scheme.c_str(), settings_.auth_credentials.data(),
                     static_cast<int>(settings_.auth_credentials.size()), ignore_auth_reply, nullptr);
    }
}

ZkSession::~ZkSession() {
    if (zh_) {
        NoSigpipe no_sigpipe;  // a TLS close_notify to a peer that left
        zookeeper_close(zh_);
    }
    // ZooKeeper's threads are joined: contexts of requests that never
    // completed can go.
    pending_.clear();
}

ZkSession::Pending *ZkSession::track(ReplyFn fn) {
    auto p = std::make_unique<Pending>();
    p->owner = this;
    p->fn = std::move(fn);
    p->sent = boottime_ns();
    Pending *raw = p.get();
    std::lock_guard<std::mutex> lock(mu_);
    pending_.emplace(raw, std::move(p));
    if (requests_) requests_->fetch_add(1, std::memory_order_relaxed);
    return raw;
}

void ZkSession::finish(const void *data, Reply &&reply) {
    auto *p = static_cast<Pending *>(const_cast<void *>(data));
    // A server that requires SASL (enforce.auth.schemes=sasl) answers the
    // first request of a session that did not authenticate with -124 and
    // closes the connection; libzookeeper then connects again at once, for
    // ever. Said once, as the authentication failure it is: the client
    // closes the handle (Client::on_watch_event).
    if (reply.rc == ZSESSIONCLOSEDREQUIRESASLAUTH &&
        !p->owner->sasl_refused_.exchange(true)) {
        try {
            // Not a state of libzookeeper's: Client::on_session_event
            // takes -124 as "the server requires SASL".
            p->owner->on_watch_(ZOO_SESSION_EVENT, ZSESSIONCLOSEDREQUIRESASLAUTH, std::string(), 0,
                                0, 0, PeerAddr{});
        } catch (...) {
        }
    }
    std::unique_ptr<Pending> own;
    {
        std::lock_guard<std::mutex> lock(p->owner->mu_);
        auto it = p->owner->pending_.find(p);
        if (it == p->owner->pending_.end()) return;
        own = std::move(it->second);
        p->owner->pending_.erase(it);
        int64_t now = boottime_ns();
        bool answered = reply.rc != ZCONNECTIONLOSS && reply.rc != ZOPERATIONTIMEOUT &&
                        reply.rc != ZCLOSING && reply.rc != ZINVALIDSTATE &&
                        reply.rc != ZSESSIONEXPIRED && reply.rc != ZSYSTEMERROR &&
                        reply.rc != ZMARSHALLINGERROR && reply.rc != ZBADARGUMENTS;
        if (answered && own->sent > p->owner->last_answered_sent_)
            p->owner->last_answered_sent_ = own->sent;
        if (answered)
            lease::record(p->owner->answered_, {own->sent, now}, p->owner->answered_spacing_ns_);
    }
    // Handlers only copy and forward; nothing may unwind into C frames.
    try {
        own->fn(std::move(reply));
    } catch (...) {
    }
}

void ZkSession::on_string_stat(int rc, const char *value, const struct Stat *stat, const void *data) {
    Reply r;
    r.rc = rc;
    try {
        if (rc == ZOK && value) r.value = value;
        if (rc == ZOK && stat) {
            r.has_stat = true;
            r.stat = copy_stat(stat);
        }
    } catch (...) {
        r = Reply{};
        r.rc = ZSYSTEMERROR;
    }
    finish(data, std::move(r));
}

void ZkSession::on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data) {
    Reply r;
    r.rc = rc;
    try {
        if (rc == ZOK && value && len > 0) r.data.assign(value, static_cast<size_t>(len));
        if (rc == ZOK && stat) {
            r.has_stat = true;
            r.stat = copy_stat(stat);
        }
    } catch (...) {
        r = Reply{};
        r.rc = ZSYSTEMERROR;
    }
    finish(data, std::move(r));
}

void ZkSession::on_strings(int rc, const struct String_vector *strings, const void *data) {
    Reply r;
    r.rc = rc;
    try {
        if (rc == ZOK && strings) {
            r.children.reserve(static_cast<size_t>(strings->count));
            for (int i = 0; i < strings->count; ++i) r.children.emplace_back(strings->data[i]);
        }
    } catch (...) {
        r = Reply{};
        r.rc = ZSYSTEMERROR;
    }
    finish(data, std::move(r));
}

void ZkSession::on_stat(int rc, const struct Stat *stat, const void *data) {
    Reply r;
    r.rc = rc;
    if (rc == ZOK && stat) {
        r.has_stat = true;
        r.stat = copy_stat(stat);
    }
    finish(data, std::move(r));
}

void ZkSession::on_void(int rc, const void *data) {
    Reply r;
    r.rc = rc;
    finish(data, std::move(r));
}

void ZkSession::on_multi(int rc, const void *data) {
    Reply r;
    r.rc = rc;
    // The results are filled in only when the server answered.
    if (rc == ZOK || rc == ZNONODE || rc == ZBADVERSION || rc == ZNOAUTH || rc == ZNODEEXISTS ||
        rc == ZNOTEMPTY || rc == ZNOCHILDRENFOREPHEMERALS || rc == ZBADARGUMENTS) {
        const auto *p = static_cast<const Pending *>(data);
        try {
            r.results.reserve(p->results.size());
            for (const auto &res : p->results) r.results.push_back(res.err);
        } catch (...) {
            r.results.clear();
        }
    }
    finish(data, std::move(r));
}

void ZkSession::on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    auto *self = static_cast<ZkSession *>(ctx);
    int64_t stamp = boottime_ns(), floor = 0;
    int timeout_ms = 0;
    PeerAddr peer;
    if (type == ZOO_SESSION_EVENT) {
        std::lock_guard<std::mutex> lock(self->mu_);
        if (state != ZOO_CONNECTED_STATE) {
            stamp = self->last_answered_sent_;
        } else {
            floor = self->last_answered_sent_;
            // The handle as libzookeeper passes it: zh_ may not be stored yet
            // (the constructor sets it after zookeeper_init2 returns).
            timeout_ms = zh ? zoo_recv_timeout(zh) : 0;
            if (timeout_ms > 0) self->answered_spacing_ns_ = int64_t(timeout_ms) * 1000000 / 24;
            // Not zoo_get_current_server: it takes the handle's reconfig
            // lock, which libzookeeper holds across name lookups, and formats
            // into one buffer shared by every handle of the process.
            socklen_t len = sizeof peer.ss;
            if (zh && zookeeper_get_connected_host(zh, reinterpret_cast<sockaddr *>(&peer.ss), &len))
                peer.len = len <= sizeof peer.ss ? len : 0;
        }
    }
    try {
        self->on_watch_(type, state, path ? std::string(path) : std::string(), stamp, floor,
                        timeout_ms, peer);
    } catch (...) {
    }
}

void ZkSession::on_sync(int rc, const char *, const void *data) {
    Reply r;
    r.rc = rc;
    finish(data, std::move(r));
}

std::deque<AckedWrite> ZkSession::answered() const {
    std::lock_guard<std::mutex> lock(mu_);
    return answered_;
}

// Runs the handler at once when the request could not be queued (or
// there is no handle to queue it on).
#define ZKE_SUBMIT(call)                          \
    do {                                          \
        int rc_ = zh_ ? (call) : ZCONNECTIONLOSS; \
        if (rc_ != ZOK) {                         \
            Reply r_;                             \
            r_.rc = rc_;                          \
            finish(p, std::move(r_));             \
        }                                         \
    } while (0)

void ZkSession::create_candidate(const std::string &path_prefix, const std::string &data, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_acreate2(zh_, path_prefix.c_str(), data.data(), static_cast<int>(data.size()),
                            acl_for(settings_), ZOO_EPHEMERAL_SEQUENTIAL, &ZkSession::on_string_stat,
                            p));
}

void ZkSession::create_persistent(const std::string &path, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_acreate2(zh_, path.c_str(), nullptr, -1, acl_for(settings_), ZOO_PERSISTENT,
                            &ZkSession::on_string_stat, p));
}

void ZkSession::get(const std::string &path, bool watch, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_aget(zh_, path.c_str(), watch ? 1 : 0, &ZkSession::on_data, p));
}

// zoo_awgetconfig reads the config node past the chroot; the watch is ours
// (on_watch), so its change comes in the one stream of events.
void ZkSession::get_config(ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_awgetconfig(zh_, &ZkSession::on_watch, this, &ZkSession::on_data, p));
}

int ZkSession::set_servers(const std::string &hosts) {
    return zh_ ? zoo_set_servers(zh_, hosts.c_str()) : ZOK;
}

void ZkSession::get_children(const std::string &path, bool watch, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_aget_children(zh_, path.c_str(), watch ? 1 : 0, &ZkSession::on_strings, p));
}

void ZkSession::exists(const std::string &path, bool watch, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_aexists(zh_, path.c_str(), watch ? 1 : 0, &ZkSession::on_stat, p));
}

void ZkSession::remove(const std::string &path, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_adelete(zh_, path.c_str(), -1, &ZkSession::on_void, p));
}

void ZkSession::set(const std::string &path, const std::string &data, int version, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_aset(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version,
                        &ZkSession::on_stat, p));
}

void ZkSession::check(const std::vector<std::string> &paths, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    p->paths = paths;  // each c_str below points into this copy, never resized
    p->ops.resize(paths.size());
    p->results.resize(paths.size());
    for (size_t i = 0; i < paths.size(); ++i)
        zoo_check_op_init(&p->ops[i], p->paths[i].c_str(), -1);
    // A handle that expired (its I/O thread may have seen it before the
    // loop did) refuses every sub-op, and libzookeeper 3.8's zoo_amulti
    // then frees our paths: heap corruption, SIGABRT with three checks
    // (explorer seed 20292896). The bundled client is mended
    // (zkclient/patches/multi-refused-subop.patch); Debian's is not, so
    // such a handle is not asked at all (its state may still turn between
    // this look and the call: only the mend closes that).
    ZKE_SUBMIT(zoo_state(zh_) < 0 ? ZINVALIDSTATE
                                  : zoo_amulti(zh_, static_cast<int>(p->ops.size()), p->ops.data(),
                                               p->results.data(), &ZkSession::on_multi, p));
}

void ZkSession::multi(const std::vector<ZkOp> &ops, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    p->multi_ops = ops;  // each pointer below points into this copy, never resized
    p->ops.resize(ops.size());
    p->results.resize(ops.size());
    p->created.resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
        const ZkOp &o = p->multi_ops[i];
        zoo_op_t *z = &p->ops[i];
        switch (o.kind) {
        case ZkOp::kCheck: zoo_check_op_init(z, o.path.c_str(), o.version); break;
        case ZkOp::kSet:
            zoo_set_op_init(z, o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()),
                            o.version, nullptr);
            break;
        case ZkOp::kCreate:
            // Room for the path and a sequence number, though no create
            // here asks for one.
            p->created[i].assign(o.path.size() + 16, '\0');
            zoo_create_op_init(z, o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()),
                               acl_for(settings_), o.ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT,
                               &p->created[i][0], static_cast<int>(p->created[i].size()));
            break;
        case ZkOp::kDelete: zoo_delete_op_init(z, o.path.c_str(), o.version); break;
        }
    }
    ZKE_SUBMIT(zoo_amulti(zh_, static_cast<int>(p->ops.size()), p->ops.data(), p->results.data(),
                          &ZkSession::on_multi, p));
}

void ZkSession::sync(const std::string &path, ReplyFn fn) {
    Pending *p = track(std::move(fn));
    ZKE_SUBMIT(zoo_async(zh_, path.c_str(), &ZkSession::on_sync, p));
}

#undef ZKE_SUBMIT

int64_t ZkSession::session_id() const {
    const clientid_t *id = zh_ ? zoo_client_id(zh_) : nullptr;
    return id ? id->client_id : 0;
}

bool ZkSession::credentials(int64_t *id, std::string *passwd) const {
    const clientid_t *c = zh_ ? zoo_client_id(zh_) : nullptr;
    if (!c || c->client_id == 0) return false;
    *id = c->client_id;
    passwd->assign(c->passwd, sizeof c->passwd);
    return true;
}

int ZkSession::negotiated_timeout_ms() const { return zh_ ? zoo_recv_timeout(zh_) : 0; }

int ZkSession::state() const { return zh_ ? zoo_state(zh_) : 0; }

void ZkSession::try_next_server() {
    if (!zh_) return;
    int state = zoo_state(zh_);
    if (state == 0 || state == ZOO_CONNECTING_STATE) zoo_cycle_next_server(zh_);
}

}  // namespace zkelect
