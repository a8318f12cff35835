// The extern "C" functions: each validates its arguments, converts between
// handles and the engine's objects, and runs inside one of boundary.h's
// guards so that no exception unwinds into a C caller.
#include <zkelect/zkelect.h>

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "client.h"
#include "election.h"
#include "conf.h"
#include "election_shared.h"
#include "errors.h"
#include "log_sink.h"
#include "names.h"
#include "observer.h"
#include "stats_json.h"
#include "vocabulary.h"

#include "boundary.h"

using namespace zkelect;
using namespace zkelect::boundary;

namespace {

// Bumped in the child of every fork(). A handle remembers the generation it
// was made in; one from an older generation was inherited: its threads did
// not come along, its locks may be held by threads that are not there, and
// its session and socket are the parent's. Every call on it is refused
// before it touches any of that, and is_leader() answers 0 (the parent may
// resign, or lose its session, and a successor lead at once: the child's
// copy of the lease must not outlive that). One relaxed load on the fast
// path: a plain load on the machines we run on.
std::atomic<unsigned> g_fork_generation{0};

void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

// Registered when the library is loaded; glibc drops it again on dlclose.
const int g_atfork_registered = pthread_atfork(nullptr, nullptr, on_fork_child);

unsigned fork_generation() { return g_fork_generation.load(std::memory_order_relaxed); }

template <class H>
bool inherited(const H *h) {
    return h->generation != fork_generation();
}

const char *const kInherited =
    " was made before fork() in another process: in a child it is unusable (its threads "
    "and its ZooKeeper session stayed with the parent); make handles after forking";

int refuse_inherited(const char *what) {
    return fail(ZKELECT_ESTATE, std::string(what) + kInherited);
}

// The same for a destroy: nothing is freed, on purpose. Freeing would stop
// threads that do not exist and close the parent's session on the shared
// socket; the memory is the child's copy and goes with the child.
int refuse_inherited_destroy(const char *what) {
    return fail(ZKELECT_ESTATE, std::string(what) + kInherited +
                                    "; destroy in a child frees nothing (left on purpose)");
}

}  // namespace

struct zkelect_conf {
    Conf conf;
};

struct zkelect_client {
    unsigned generation = fork_generation();
    std::unique_ptr<Client> client;
    std::mutex mu;
    std::set<zkelect_election *> elections;
    std::set<zkelect_observer *> observers;
};

struct zkelect_election {
    unsigned generation = fork_generation();
    zkelect_client *owner = nullptr;
    std::unique_ptr<Election> election;
    ElectionShared *shared = nullptr;  // election->shared()
};

struct zkelect_observer {
    unsigned generation = fork_generation();
    zkelect_client *owner = nullptr;
    std::shared_ptr<ObserverShared> shared;
    std::shared_ptr<Observer> observer;
    std::unique_ptr<EventDelivery> events;  // of shared->queue; pull only
};

struct zkelect_event {
    Event ev;
};

struct zkelect_participants {
    std::vector<ParticipantInfo> list;
};

struct zkelect_stats {
    std::string json;
};

namespace {

std::unique_ptr<zkelect_event> wrap(std::unique_ptr<Event> ev) {
    if (!ev) return nullptr;
    auto out = std::make_unique<zkelect_event>();
    out->ev = std::move(*ev);
    return out;
}

// The engine's callback for a C one. The event is wrapped outside the try:
// running out of memory there fails zkelect_dispatch (ZKELECT_ENOMEM), while
// nothing the user's callback throws stops the delivery of the next events.
EventDelivery::Callback c_callback(zkelect_election *e, zkelect_event_cb cb, void *opaque) {
    if (!cb) return {};
    return [e, cb, opaque](std::unique_ptr<Event> ev) {
        auto event = wrap(std::move(ev));
        try {
            cb(e, event.get(), opaque);
        } catch (...) {
        }
    };
}

}  // namespace

extern "C" {

/* --- errors and versions -------------------------------------------------- */

const char *zkelect_strerror(int code) { return vocabulary::err_message(code); }

const char *zkelect_err_name(int code) { return vocabulary::err_symbol(code); }

const char *zkelect_last_error(void) { return last_error(); }

int zkelect_set_log_cb(int level, zkelect_log_cb cb, void *opaque) {
    return guarded_code([&]() -> int {
        if (level < ZKELECT_LOG_NONE || level > ZKELECT_LOG_DEBUG)
            return fail(ZKELECT_EINVAL, "log level " + std::to_string(level) +
                                            " is not one of ZKELECT_LOG_NONE..ZKELECT_LOG_DEBUG");
        set_log_sink(level, cb, opaque);
        return ZKELECT_OK;
    });
}

unsigned zkelect_version(void) { return ZKELECT_VERSION_NUMBER; }
const char *zkelect_version_string(void) { return ZKELECT_VERSION_STRING; }

/* --- conf ------------------------------------------------------------------ */

zkelect_conf_t *zkelect_conf_new(void) {
    return guarded<zkelect_conf_t *>(nullptr, [] { return new zkelect_conf(); });
}

int zkelect_conf_set(zkelect_conf_t *conf, const char *key, const char *value, char *errbuf,
                     size_t errlen) {
    return guarded_code([&]() -> int {
        if (!conf || !key || !value) {
            write_err(errbuf, errlen,
                      !conf ? "conf is NULL" : !key ? "key is NULL" : "value is NULL");
            return ZKELECT_EINVAL;
        }
        std::string why = conf->conf.set(key, value);
        if (!why.empty()) {
            write_err(errbuf, errlen, why);
            return Conf::unsupported(key, value) ? ZKELECT_ENOTSUP : ZKELECT_EINVAL;
        }
        return ZKELECT_OK;
    });
}

int zkelect_conf_get(const zkelect_conf_t *conf, const char *key, char *buf, size_t *len) {
    return guarded_code([&]() -> int {
        if (!conf || !key || !len) return ZKELECT_EINVAL;
        std::string v;
        if (!conf->conf.get(key, &v)) return ZKELECT_EINVAL;
        size_t need = v.size() + 1;
        if (!buf || *len < need) {
            *len = need;
            return ZKELECT_ERANGE;
        }
        std::memcpy(buf, v.c_str(), need);
        *len = need;
        return ZKELECT_OK;
    });
}

void zkelect_conf_destroy(zkelect_conf_t *conf) { delete conf; }

const char *zkelect_conf_key(size_t index) { return Conf::key_name(index); }

/* --- client ---------------------------------------------------------------- */

zkelect_client_t *zkelect_client_new(const zkelect_conf_t *conf, char *errbuf, size_t errlen) {
    return guarded_new<zkelect_client_t>(errbuf, errlen, [&]() -> zkelect_client_t * {
        if (!conf) {
            write_err(errbuf, errlen, "conf is NULL");
            return nullptr;
        }
        Settings s;
        std::string why;
        if (!conf->conf.settings(&s, &why)) {
            write_err(errbuf, errlen, why);
            return nullptr;
        }
        auto c = std::make_unique<zkelect_client>();
        c->client = std::make_unique<Client>(s);
        return c.release();
    });
}

int zkelect_client_destroy(zkelect_client_t *client) {
    return guarded_code([&]() -> int {
        if (!client) return ZKELECT_EINVAL;
        if (inherited(client)) return refuse_inherited_destroy("the client");
        {
            std::lock_guard<std::mutex> lock(client->mu);
            for (auto *e : client->elections)
                if (e->election->events().in_own_callback()) return ZKELECT_EDEADLK;
            if (!client->elections.empty() || !client->observers.empty()) return ZKELECT_ESTATE;
        }
        delete client;
        return ZKELECT_OK;
    });
}

int zkelect_client_await_connected(zkelect_client_t *client, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!client) return ZKELECT_EINVAL;
        if (inherited(client)) return refuse_inherited("the client");
        return client->client->await_connected(timeout_ms);
    });
}

int zkelect_client_is_connected(const zkelect_client_t *client) {
    return client && !inherited(client) && client->client->connected() ? 1 : 0;
}

int zkelect_client_session_timeout_ms(const zkelect_client_t *client) {
    return client && !inherited(client) ? client->client->negotiated_timeout_ms() : 0;
}

int64_t zkelect_client_session_id(const zkelect_client_t *client) {
    return client && !inherited(client) ? client->client->session_id() : 0;
}

int zkelect_client_counter(const zkelect_client_t *client, int counter, uint64_t *value) {
    return guarded_code([&]() -> int {
        if (!client || !value) return fail(ZKELECT_EINVAL, !client ? "client is NULL" : "value is NULL");
        if (counter < 0 || counter >= ZKELECT_COUNTER__COUNT)
            return fail(ZKELECT_EINVAL, "no counter " + std::to_string(counter));
        if (inherited(client)) return refuse_inherited("the client");
        *value = client->client->counter(counter);
        return ZKELECT_OK;
    });
}

const char *zkelect_counter_name(int counter) { return vocabulary::counter_name(counter); }

/* --- election -------------------------------------------------------------- */

zkelect_election_t *zkelect_election_new(zkelect_client_t *client, const char *path,
                                         const char *participant_id, char *errbuf,
                                         size_t errlen) {
    return guarded_new<zkelect_election_t>(errbuf, errlen, [&]() -> zkelect_election_t * {
        if (!client || !path || !participant_id) {
            write_err(errbuf, errlen,
                      !client ? "client is NULL" : !path ? "path is NULL" : "participant_id is NULL");
            return nullptr;
        }
        if (inherited(client)) {
            write_err(errbuf, errlen, std::string("the client") + kInherited, ZKELECT_ESTATE);
            return nullptr;
        }
        if (std::string why = check_election_path(path); !why.empty()) {
            write_err(errbuf, errlen, why);
            return nullptr;
        }
        if (std::string why = check_participant_id(participant_id); !why.empty()) {
            write_err(errbuf, errlen, why);
            return nullptr;
        }
        auto e = std::make_unique<zkelect_election>();
        e->owner = client;
        e->election = std::make_unique<Election>(*client->client, path, participant_id);
        e->shared = &e->election->shared();
        std::lock_guard<std::mutex> lock(client->mu);
        client->elections.insert(e.get());
        return e.release();
    });
}

int zkelect_election_destroy(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited_destroy("the election");
        if (int rc = e->election->shut_down(); rc != ZKELECT_OK) return rc;
        {
            std::lock_guard<std::mutex> lock(e->owner->mu);
            e->owner->elections.erase(e);
        }
        delete e;
        return ZKELECT_OK;
    });
}

int zkelect_volunteer(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->volunteer();
    });
}

int zkelect_resign(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->resign();
    });
}

int zkelect_is_leader(const zkelect_election_t *e) {
    return e && !inherited(e) && e->shared->is_leader() ? 1 : 0;
}

int zkelect_await_leader(zkelect_election_t *e, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->await_leader(timeout_ms);
    });
}

int zkelect_fencing_token(const zkelect_election_t *e, int64_t *token) {
    return guarded_code([&]() -> int {
        if (!e || !token) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->fencing_token(token);
    });
}

static int query(zkelect_client *client, const std::string &path, std::vector<ParticipantInfo> *out,
                 std::string *why) {
    Client &c = *client->client;
    return c.participants(path, c.effective_timeout_ms(), out, why);
}

int zkelect_leader_id(zkelect_election_t *e, char *buf, size_t len) {
    return guarded_code([&]() -> int {
        if (!e || !buf) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        std::vector<ParticipantInfo> list;
        std::string why;
        if (int rc = query(e->owner, e->shared->path, &list, &why); rc != ZKELECT_OK)
            return fail(rc, why);
        if (list.empty()) return fail(ZKELECT_ENOLEADER, "no candidate under " + e->shared->path);
        const std::string &id = list.front().id;
        if (len < id.size() + 1)
            return fail(ZKELECT_ERANGE, "the leader's id needs " + std::to_string(id.size() + 1) +
                                            " bytes, the buffer has " + std::to_string(len));
        std::memcpy(buf, id.c_str(), id.size() + 1);
        return ZKELECT_OK;
    });
}

zkelect_participants_t *zkelect_client_participants(zkelect_client_t *client, const char *path,
                                                    char *errbuf, size_t errlen) {
    return guarded_new<zkelect_participants_t>(errbuf, errlen, [&]() -> zkelect_participants_t * {
        if (!client || !path) {
            write_err(errbuf, errlen, !client ? "client is NULL" : "path is NULL");
            return nullptr;
        }
        if (inherited(client)) {
            write_err(errbuf, errlen, std::string("the client") + kInherited, ZKELECT_ESTATE);
            return nullptr;
        }
        if (std::string why = check_election_path(path); !why.empty()) {
            write_err(errbuf, errlen, why);
            return nullptr;
        }
        auto p = std::make_unique<struct zkelect_participants>();
        std::string why;
        int rc = query(client, path, &p->list, &why);
        if (rc != ZKELECT_OK) {
            write_err(errbuf, errlen, std::string(zkelect_err_name(rc)) + ": " + why);
            return nullptr;
        }
        return p.release();
    });
}

zkelect_participants_t *zkelect_participants(zkelect_election_t *e, char *errbuf, size_t errlen) {
    if (!e) {
        write_err(errbuf, errlen, "election is NULL");
        return nullptr;
    }
    return zkelect_client_participants(e->owner, e->shared->path.c_str(), errbuf, errlen);
}

size_t zkelect_participants_count(const zkelect_participants_t *p) { return p ? p->list.size() : 0; }
const char *zkelect_participants_id(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].id.c_str() : nullptr;
}
const char *zkelect_participants_node(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].node.c_str() : nullptr;
}
int64_t zkelect_participants_token(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].czxid : 0;
}
int64_t zkelect_participants_ctime_ms(const zkelect_participants_t *p, size_t i) {
    return p && i < p->list.size() ? p->list[i].ctime_ms : 0;
}
void zkelect_participants_destroy(zkelect_participants_t *p) { delete p; }


/* --- statistics ------------------------------------------------------------ */

zkelect_stats_t *zkelect_election_stats(zkelect_election_t *e, char *errbuf, size_t errlen) {
    return guarded_new<zkelect_stats_t>(errbuf, errlen, [&]() -> zkelect_stats_t * {
        if (!e) {
            write_err(errbuf, errlen, "election is NULL");
            return nullptr;
        }
        if (inherited(e)) {
            write_err(errbuf, errlen, std::string("the election") + kInherited, ZKELECT_ESTATE);
            return nullptr;
        }
        auto out = std::make_unique<zkelect_stats>();
        out->json.reserve(2048);
        election_stats_json(out->json, *e->shared);
        return out.release();
    });
}

zkelect_stats_t *zkelect_client_stats(zkelect_client_t *client, char *errbuf, size_t errlen) {
    return guarded_new<zkelect_stats_t>(errbuf, errlen, [&]() -> zkelect_stats_t * {
        if (!client) {
            write_err(errbuf, errlen, "client is NULL");
            return nullptr;
        }
        if (inherited(client)) {
            write_err(errbuf, errlen, std::string("the client") + kInherited, ZKELECT_ESTATE);
            return nullptr;
        }
        auto out = std::make_unique<zkelect_stats>();
        out->json.reserve(4096);
        client_stats_json(out->json, *client->client, [client](const auto &render) {
            // client->mu keeps the set's elections alive (destroy takes it to
            // leave the set); each election's own lock is held for a copy.
            std::lock_guard<std::mutex> lock(client->mu);
            for (zkelect_election *e : client->elections) render(*e->shared);
        });
        return out.release();
    });
}

const char *zkelect_stats_json(const zkelect_stats_t *stats) { return stats ? stats->json.c_str() : nullptr; }

void zkelect_stats_destroy(zkelect_stats_t *stats) { delete stats; }

/* --- events ---------------------------------------------------------------- */

zkelect_event_t *zkelect_next_event(zkelect_election_t *e, int timeout_ms) {
    return guarded<zkelect_event_t *>(nullptr, [&]() -> zkelect_event_t * {
        if (!e) return nullptr;
        if (inherited(e)) {
            set_last_error(ZKELECT_ESTATE, std::string("the election") + kInherited);
            return nullptr;
        }
        return wrap(e->election->events().next(timeout_ms)).release();
    });
}

static int queue_fd(EventQueue &q) {
    int fd = q.fd();
    return fd >= 0 ? fd : (errno == ENOMEM ? ZKELECT_ENOMEM : ZKELECT_EINTERNAL);
}

int zkelect_event_fd(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return queue_fd(e->shared->queue);
    });
}

int zkelect_wake(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        e->shared->queue.wake();
        return ZKELECT_OK;
    });
}

int zkelect_set_event_cb(zkelect_election_t *e, zkelect_event_cb cb, void *opaque) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->events().set_callback(c_callback(e, cb, opaque));
    });
}

int zkelect_dispatch(zkelect_election_t *e, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->events().dispatch(timeout_ms);
    });
}

int zkelect_set_background_event_cb(zkelect_election_t *e, zkelect_event_cb cb, void *opaque) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->events().set_background(c_callback(e, cb, opaque));
    });
}

int zkelect_event_type(const zkelect_event_t *ev) { return ev ? int(ev->ev.type) : 0; }
int zkelect_event_reason(const zkelect_event_t *ev) { return ev ? int(ev->ev.reason) : 0; }
int64_t zkelect_event_token(const zkelect_event_t *ev) { return ev ? ev->ev.token : 0; }
int zkelect_event_error(const zkelect_event_t *ev) { return ev ? ev->ev.error : 0; }
int zkelect_event_zk_rc(const zkelect_event_t *ev) { return ev ? ev->ev.zk_rc : 0; }
const char *zkelect_event_message(const zkelect_event_t *ev) { return ev ? ev->ev.message.c_str() : nullptr; }
const char *zkelect_event_node(const zkelect_event_t *ev) { return ev ? ev->ev.node.c_str() : nullptr; }
const char *zkelect_event_id(const zkelect_event_t *ev) { return ev ? ev->ev.id.c_str() : nullptr; }
int64_t zkelect_event_time_ns(const zkelect_event_t *ev) { return ev ? ev->ev.time_ns : 0; }
void zkelect_event_destroy(zkelect_event_t *ev) { delete ev; }

const char *zkelect_event_type_name(int type) { return vocabulary::event_type_name(type); }

const char *zkelect_reason_name(int reason) { return vocabulary::reason_name(reason); }

/* --- observer -------------------------------------------------------------- */

zkelect_observer_t *zkelect_observer_new(zkelect_client_t *client, const char *path, char *errbuf,
                                         size_t errlen) {
    return guarded_new<zkelect_observer_t>(errbuf, errlen, [&]() -> zkelect_observer_t * {
        if (!client || !path) {
            write_err(errbuf, errlen, !client ? "client is NULL" : "path is NULL");
            return nullptr;
        }
        if (inherited(client)) {
            write_err(errbuf, errlen, std::string("the client") + kInherited, ZKELECT_ESTATE);
            return nullptr;
        }
        if (std::string why = check_election_path(path); !why.empty()) {
            write_err(errbuf, errlen, why);
            return nullptr;
        }
        auto o = std::make_unique<zkelect_observer>();
        o->owner = client;
        o->shared = std::make_shared<ObserverShared>(path);
        o->events = std::make_unique<EventDelivery>(o->shared->queue);
        o->observer = Observer::open(*client->client, o->shared);
        std::lock_guard<std::mutex> lock(client->mu);
        client->observers.insert(o.get());
        return o.release();
    });
}

zkelect_event_t *zkelect_observer_next_event(zkelect_observer_t *o, int timeout_ms) {
    return guarded<zkelect_event_t *>(nullptr, [&]() -> zkelect_event_t * {
        if (!o) return nullptr;
        if (inherited(o)) {
            set_last_error(ZKELECT_ESTATE, std::string("the observer") + kInherited);
            return nullptr;
        }
        return wrap(o->events->next(timeout_ms)).release();
    });
}

int zkelect_observer_event_fd(zkelect_observer_t *o) {
    return guarded_code([&]() -> int {
        if (!o) return ZKELECT_EINVAL;
        if (inherited(o)) return refuse_inherited("the observer");
        return queue_fd(o->shared->queue);
    });
}

int zkelect_observer_wake(zkelect_observer_t *o) {
    return guarded_code([&]() -> int {
        if (!o) return ZKELECT_EINVAL;
        if (inherited(o)) return refuse_inherited("the observer");
        o->shared->queue.wake();
        return ZKELECT_OK;
    });
}

int zkelect_observer_destroy(zkelect_observer_t *o) {
    return guarded_code([&]() -> int {
        if (!o) return ZKELECT_EINVAL;
        if (inherited(o)) return refuse_inherited_destroy("the observer");
        o->events->close([o] { o->shared->queue.close(); });
        o->observer->stop_and_wait();
        {
            std::lock_guard<std::mutex> lock(o->owner->mu);
            o->owner->observers.erase(o);
        }
        delete o;
        return ZKELECT_OK;
    });
}

}  // extern "C"
