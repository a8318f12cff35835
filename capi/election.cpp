// zkelect_election_t: one candidacy's commands and what it can tell of
// itself (is_leader, the token, the leader's id).
#include <zkelect/zkelect.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "names.h"
#include "stats_json.h"

#include "boundary.h"
#include "handles.h"

using namespace zkelect;
using namespace zkelect::boundary;
using namespace zkelect::capi;

extern "C" {

zkelect_election_t *zkelect_election_new(zkelect_client_t *client, const char *path,
                                         const char *participant_id, char *errbuf,
                                         size_t errlen) {
    return guarded_new<zkelect_election_t>(errbuf, errlen, [&]() -> zkelect_election_t * {
        if (!usable_client_and_path(client, path, errbuf, errlen)) return nullptr;
        if (!participant_id) {
            write_err(errbuf, errlen, "participant_id is NULL");
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
        if (client->shut) {
            // A shutdown began meanwhile: this one would outlive it.
            write_err(errbuf, errlen, std::string("ZKELECT_ECLOSED: ") + kShutDown);
            return nullptr;
        }
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
        std::string why;
        int rc = e->election->volunteer(&why);
        if (rc == ZKELECT_ELIMIT) return fail(rc, why);
        return rc;
    });
}

int zkelect_resign(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->resign();
    });
}

int zkelect_requeue(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        std::string why;
        int rc = e->election->requeue(&why);
        if (rc == ZKELECT_ELIMIT) return fail(rc, why);
        return rc;
    });
}

int zkelect_is_leader(const zkelect_election_t *e) {
    return e && !inherited(e) && e->shared->is_leader() ? 1 : 0;
}

int64_t zkelect_lease_left_ms(const zkelect_election_t *e) {
    if (!e || inherited(e)) return 0;
    return e->shared->lease_left_ns() / kNsPerMs;
}

int zkelect_is_leader_for(const zkelect_election_t *e, int min_ms) {
    if (!e || inherited(e)) return 0;
    int64_t left = e->shared->lease_left_ns();
    return left > 0 && left >= int64_t(min_ms < 0 ? 0 : min_ms) * kNsPerMs ? 1 : 0;
}

int zkelect_leader_answer(const zkelect_election_t *e, char *buf, size_t *len) {
    return guarded_code([&]() -> int {
        if (!e || !buf || !len) return ZKELECT_EINVAL;
        std::string json;
        bool leading = false;
        if (inherited(e)) json = "{\"leader\":false}";
        else leading = leader_answer_json(json, *e->shared);
        size_t need = json.size() + 1;
        size_t room = *len;
        *len = need;
        if (room < need) return ZKELECT_ERANGE;
        std::memcpy(buf, json.c_str(), need);
        return leading ? 200 : 503;
    });
}

int zkelect_await_leader(zkelect_election_t *e, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->await_leader(timeout_ms);
    });
}

int zkelect_transfer(zkelect_election_t *e, const char *target_id, int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (!target_id) return fail(ZKELECT_EINVAL, "target_id is NULL");
        if (inherited(e)) return refuse_inherited("the election");
        if (std::string why = check_participant_id(target_id); !why.empty())
            return fail(ZKELECT_EINVAL, "target_id: " + why);
        if (timeout_ms <= 0) return fail(ZKELECT_EINVAL, "timeout_ms must be above 0");
        if (e->shared->id == target_id)
            return fail(ZKELECT_EINVAL, "target_id is this candidacy's own id");
        int rc = e->election->transfer(target_id, timeout_ms);
        if (rc == ZKELECT_ENOTSUP)
            return fail(rc, "a candidate ahead of the target cannot step back (Curator's "
                            "LeaderLatch, or libzkelect before 1.2); nothing was changed");
        return rc;
    });
}

int zkelect_client_transfer(zkelect_client_t *client, const char *path, const char *target_id,
                            int timeout_ms) {
    return guarded_code([&]() -> int {
        if (!client) return fail(ZKELECT_EINVAL, "client is NULL");
        if (!path) return fail(ZKELECT_EINVAL, "path is NULL");
        if (!target_id) return fail(ZKELECT_EINVAL, "target_id is NULL");
        if (inherited(client)) return refuse_inherited("the client");
        if (client->client->stopped()) return fail(ZKELECT_ECLOSED, kShutDown);
        if (std::string why = check_election_path(path); !why.empty()) return fail(ZKELECT_EINVAL, why);
        if (std::string why = check_participant_id(target_id); !why.empty())
            return fail(ZKELECT_EINVAL, "target_id: " + why);
        if (timeout_ms <= 0 || timeout_ms > kRequestTimeoutMaxMs)
            return fail(ZKELECT_EINVAL, "timeout_ms must be within 1..600000");
        std::string why;
        int rc = client->client->request_transfer(path, target_id, timeout_ms, &why);
        if (rc != ZKELECT_OK) return fail(rc, why);
        return rc;
    });
}

int zkelect_release(zkelect_election_t *e) {
    return guarded_code([&]() -> int {
        if (!e) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->release();
    });
}

int zkelect_is_draining(const zkelect_election_t *e) {
    return e && !inherited(e) && e->election->is_draining() ? 1 : 0;
}

int zkelect_fencing_token(const zkelect_election_t *e, int64_t *token) {
    return guarded_code([&]() -> int {
        if (!e || !token) return ZKELECT_EINVAL;
        if (inherited(e)) return refuse_inherited("the election");
        return e->election->fencing_token(token);
    });
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

}  // extern "C"
