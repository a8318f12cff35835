#include "handles.h"

#include <pthread.h>

#include <cerrno>

#include "boundary.h"
#include "names.h"

namespace zkelect::capi {

std::atomic<unsigned> g_fork_generation{0};

namespace {

void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

// Registered when the library is loaded; glibc drops it again on dlclose.
const int g_atfork_registered = pthread_atfork(nullptr, nullptr, on_fork_child);

}  // namespace

const char *const kInherited =
    " was made before fork() in another process: in a child it is unusable (its threads "
    "and its ZooKeeper session stayed with the parent); make handles after forking";

const char *const kShutDown = "the client was shut down (zkelect_client_shutdown)";

int refuse_inherited(const char *what) {
    return boundary::fail(ZKELECT_ESTATE, std::string(what) + kInherited);
}

bool usable_client_and_path(const zkelect_client *client, const char *path, char *errbuf,
                            size_t errlen) {
    if (!client || !path) {
        boundary::write_err(errbuf, errlen, !client ? "client is NULL" : "path is NULL");
        return false;
    }
    if (inherited(client)) {
        boundary::write_err(errbuf, errlen, std::string("the client") + kInherited, ZKELECT_ESTATE);
        return false;
    }
    if (client->client->stopped()) {
        boundary::write_err(errbuf, errlen, std::string("ZKELECT_ECLOSED: ") + kShutDown);
        return false;
    }
    if (std::string why = check_election_path(path); !why.empty()) {
        boundary::write_err(errbuf, errlen, why);
        return false;
    }
    return true;
}

int refuse_inherited_destroy(const char *what) {
    return boundary::fail(ZKELECT_ESTATE, std::string(what) + kInherited +
                                              "; destroy in a child frees nothing (left on purpose)");
}

std::unique_ptr<zkelect_event> wrap(std::unique_ptr<Event> ev) {
    if (!ev) return nullptr;
    auto out = std::make_unique<zkelect_event>();
    out->ev = std::move(*ev);
    return out;
}

int queue_fd(EventQueue &q) {
    int fd = q.fd();
    return fd >= 0 ? fd : (errno == ENOMEM ? ZKELECT_ENOMEM : ZKELECT_EINTERNAL);
}

int query(zkelect_client *client, const std::string &path, std::vector<ParticipantInfo> *out,
          std::string *why) {
    Client &c = *client->client;
    return c.participants(path, c.effective_timeout_ms(), out, why);
}

}  // namespace zkelect::capi
