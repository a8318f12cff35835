// What the C handles are, and what every file of the C API shares about
// them: the fork rule each call checks first, and the conversions more than
// one concept needs (an engine event into a zkelect_event_t, a queue's fd,
// a listing of candidates).
//
// The other files of capi/ hold the extern "C" functions, one concept each.
// Each function validates its arguments, converts between handles and the
// engine's objects, and runs inside one of boundary.h's guards so that no
// exception unwinds into a C caller.
#pragma once

#include <zkelect/zkelect.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "balancer.h"
#include "client.h"
#include "conf.h"
#include "election.h"
#include "election_shared.h"
#include "event_delivery.h"
#include "event_queue.h"
#include "observer.h"

namespace zkelect::capi {

// Bumped in the child of every fork() (handles.cpp). A handle remembers the
// generation it was made in; one from an older generation was inherited:
// its threads did not come along, its locks may be held by threads that are
// not there, and its session and socket are the parent's. Every call on it
// is refused before it touches any of that, and is_leader() answers 0 (the
// parent may resign, or lose its session, and a successor lead at once: the
// child's copy of the lease must not outlive that). One relaxed load on the
// fast path: a plain load on the machines we run on. Declared here, not
// hidden behind a function of handles.cpp, so that the load stays inline in
// zkelect_is_leader.
extern std::atomic<unsigned> g_fork_generation;

inline unsigned fork_generation() { return g_fork_generation.load(std::memory_order_relaxed); }

template <class H>
bool inherited(const H *h) {
    return h->generation != fork_generation();
}

extern const char *const kInherited;

int refuse_inherited(const char *what);

// The same for a destroy: nothing is freed, on purpose. Freeing would stop
// threads that do not exist and close the parent's session on the shared
// socket; the memory is the child's copy and goes with the child.
int refuse_inherited_destroy(const char *what);

// zkelect_client_shutdown() ended the client: ZKELECT_ECLOSED with why.
extern const char *const kShutDown;

// The checks every constructor on a path shares (election, observer,
// participants): a client of this process, not shut down, and a
// well-formed path. False with the reason in errbuf.
bool usable_client_and_path(const zkelect_client *client, const char *path, char *errbuf,
                            size_t errlen);

}  // namespace zkelect::capi

struct zkelect_conf {
    zkelect::Conf conf;
};

struct zkelect_client {
    unsigned generation = zkelect::capi::fork_generation();
    std::unique_ptr<zkelect::Client> client;
    // balance.group's part (cxx/balance/); also a member of client, which
    // drops it as it goes.
    std::shared_ptr<zkelect::balance::Balancer> balancer;
    std::mutex mu;
    std::set<zkelect_election *> elections;
    std::set<zkelect_observer *> observers;
    bool shut = false;  // under mu: zkelect_client_shutdown began
};

struct zkelect_election {
    unsigned generation = zkelect::capi::fork_generation();
    zkelect_client *owner = nullptr;
    std::unique_ptr<zkelect::Election> election;
    zkelect::ElectionShared *shared = nullptr;  // election->shared()
};

struct zkelect_observer {
    unsigned generation = zkelect::capi::fork_generation();
    zkelect_client *owner = nullptr;
    std::shared_ptr<zkelect::ObserverShared> shared;
    std::shared_ptr<zkelect::Observer> observer;
    std::unique_ptr<zkelect::EventDelivery> events;  // of shared->queue; pull only
};

struct zkelect_event {
    zkelect::Event ev;
};

struct zkelect_participants {
    std::vector<zkelect::ParticipantInfo> list;
};

struct zkelect_stats {
    std::string json;
};

namespace zkelect::capi {

std::unique_ptr<zkelect_event> wrap(std::unique_ptr<Event> ev);

// An event handle's fd, or the code for why there is none.
int queue_fd(EventQueue &q);

// The candidates of path, in queue order, asked of ZooKeeper now.
int query(zkelect_client *client, const std::string &path, std::vector<ParticipantInfo> *out,
          std::string *why);

}  // namespace zkelect::capi
